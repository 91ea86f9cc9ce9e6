"""Benchmark `extract` (all signals) against the bare model forward and a naive per-sentence HF loop.

Usage: PYTHONPATH=... python bench/bench_extract.py --n 20000 --threads 2
Writes bench/results/extract.md (tokens/s of each way, bytes per corpus token per signal).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from ctx2static.cache import Cache
from ctx2static.cache.info import signal_bytes
from ctx2static.pipeline.corpus import Corpus
from ctx2static.pipeline.extract import ExtractConfig, extract
from ctx2static.pipeline.teacher import Teacher, Want, run_sorted, sorted_batches
from ctx2static.pipeline.vocab import Vocab

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "brown.txt.xz"
K, S = 10, 5


def bare_forward(teacher: Teacher, encs: list, budget: int) -> float:
    """Seconds for the model forward alone over the same length-sorted batches."""
    pad = int(teacher.tokenizer.pad_token_id)
    t0 = time.perf_counter()
    for idx in sorted_batches([len(e.ids) for e in encs], budget):
        batch = [encs[i] for i in idx]
        t_max = max(len(e.ids) for e in batch)
        ids = torch.full((len(batch), t_max), pad)
        mask = torch.zeros_like(ids)
        for i, e in enumerate(batch):
            ids[i, : len(e.ids)] = torch.from_numpy(e.ids)
            mask[i, : len(e.ids)] = 1
        with torch.inference_mode():
            teacher.model(input_ids=ids, attention_mask=mask)
    return time.perf_counter() - t0


def signal_costs(teacher: Teacher, encs: list, budget: int) -> list[tuple[str, float]]:
    """Seconds of the batched forward with one signal added at a time (same batches)."""
    variants = [
        ("mean only (sdpa attention)", Want()),
        ("+ subword-pooled vectors", Want(vectors=True)),
        (f"+ top-{K} substitutes over the full vocabulary", Want(vectors=True, topk=K)),
    ]
    out = []
    for name, want in variants:
        t0 = time.perf_counter()
        run_sorted(encs, budget, lambda b, w=want: teacher.forward(b, w))
        out.append((name, time.perf_counter() - t0))
    t0 = time.perf_counter()
    run_sorted(encs, budget, lambda b: teacher.forward(b, Want(vectors=True, topk=K, attention=S)))
    out.append((f"+ attention top-{S} (eager attention)", time.perf_counter() - t0))
    return out


def naive_loop(teacher: Teacher, sents: list[list[str]]) -> float:
    """Seconds for a per-sentence loop (HF tokenizer word_ids, python loops) computing the same outputs."""
    tok, model = teacher.tokenizer, teacher.model
    emb = model.get_input_embeddings().weight
    t0 = time.perf_counter()
    for words in sents:
        enc = tok(words, is_split_into_words=True, return_tensors="pt", truncation=True)
        wid = enc.word_ids()
        with torch.no_grad():
            out = model(**enc, output_hidden_states=True, output_attentions=True)
            hid = out.hidden_states[-1][0]
            hid.mean(0)  # sentence context
            att = sum(a[0].sum(0) for a in out.attentions)
            groups = [[t for t, w in enumerate(wid) if w == g] for g in range(len(words))]
            for g, toks in enumerate(groups):
                if not toks:
                    continue
                hid[toks].mean(0)  # word vector
                logits = hid[toks[0]] @ emb.T
                logits.topk(K + 1)
                for c in range(max(0, g - S), min(len(words), g + S + 1)):
                    if c != g and groups[c]:
                        att[toks][:, groups[c]].mean()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000, help="sentences")
    ap.add_argument("--naive-n", type=int, default=0, help="sentences for the naive loop (0 = --n)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--teacher", default="minilm")
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "extract.md"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    corpus = Corpus([args.corpus])
    sents = [t for _, t in itertools.islice(corpus.sentences(), args.n)]
    teacher = Teacher.load(args.teacher)
    encs = teacher.encode(sents)
    n_tok = sum(len(e.ids) for e in encs)
    n_words = sum(len(s) for s in sents)
    shard = max(args.n // 4, 1)
    signals = {"vectors": True, "paragraph": True, "topk": K, "attention": S}
    cfg = ExtractConfig(shard_size=shard, max_sentences=args.n, **signals)
    vocab = Vocab.build(Corpus([args.corpus]), min_count=5, max_vocab=5000)
    with tempfile.TemporaryDirectory() as tmp:
        t_bare = bare_forward(teacher, encs, cfg.token_budget)
        costs = signal_costs(teacher, encs, cfg.token_budget)
        m = extract(corpus, vocab, teacher, Path(tmp) / "c", cfg)
        t_ext = m["run"]["seconds"]
        sizes = signal_bytes(Cache.open(Path(tmp) / "c"))
    naive_n = args.naive_n or args.n
    t_naive = naive_loop(teacher, sents[:naive_n])
    naive_tok = sum(len(e.ids) for e in encs[:naive_n])
    cmd = "PYTHONPATH=<pkg> python bench/bench_extract.py " + " ".join(sys.argv[1:])
    rows = [
        ("bare model forward (sorted batches, no signals)", n_tok / t_bare),
        (f"extract, all signals (vectors, paragraph, top-{K}, attention S={S}, shards)", n_tok / t_ext),
        (f"naive per-sentence HF loop, same outputs ({naive_n} sentences)", naive_tok / t_naive),
    ]
    lines = [
        "# extract benchmark",
        "",
        f"Command: `{cmd}`",
        "",
        f"Teacher {args.teacher} ({teacher.source}), {args.threads} CPU threads, "
        f"{len(sents)} sentences of {Path(args.corpus).name}, {n_tok} teacher tokens, "
        f"{n_words} corpus tokens, vocabulary {len(vocab)} (the 5000 most frequent words of the file). "
        "The machine is shared (load varies).",
        "",
        "| way | teacher tokens/s |",
        "|---|---:|",
        *[f"| {name} | {rate:,.0f} |" for name, rate in rows],
        "",
        "Extract time covers the sentence pass, the paragraph pass (a second forward) and shard writing;",
        "the per-vocabulary-word baselines (computed once at the end) are not included.",
        "",
        "Cost of each signal (sentence pass only, same batches, cumulative):",
        "",
        "| forward computing | seconds | teacher tokens/s |",
        "|---|---:|---:|",
        *[f"| {name} | {sec:.1f} | {n_tok / sec:,.0f} |" for name, sec in costs],
        "",
        "| signal | bytes | bytes / corpus token |",
        "|---|---:|---:|",
        *[f"| {k} | {v:,} | {v / n_words:.1f} |" for k, v in sorted(sizes.items())],
        "",
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))
    print(np.round([r for _, r in rows], 1))


if __name__ == "__main__":
    main()
