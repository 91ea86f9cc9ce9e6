"""Benchmark `extract` against the bare model forward over the same batches and a naive per-sentence HF loop.

Usage: PYTHONPATH=... python bench/speed/bench_extract.py --n 1000 --threads 2
Writes bench/results/extract.md (tokens/s of each way, cost of each signal, bytes per corpus token per
signal, the estimated time for the full corpus). The machine may be shared: each cost is timed batch by
batch, the ways in rotating order, so load changes hit all ways alike; CPU seconds are reported too.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import multiprocessing
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch
from machine import SHARED_CORPUS, argv_line, cpu_name, portable

from ctx2static.cache import Cache
from ctx2static.cache.info import signal_bytes
from ctx2static.pipeline.align import Encoding
from ctx2static.pipeline.batching import sorted_batches
from ctx2static.pipeline.bf16 import fast_bf16
from ctx2static.pipeline.config import ExtractConfig, TeacherConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.feed import mark_occurrences, word_ids
from ctx2static.pipeline.models import TeacherKind
from ctx2static.pipeline.shard import (
    paragraph_inputs,
    sentence_request,
    token_words,
    word_substitutes,
)
from ctx2static.pipeline.teacher import Request, Teacher
from ctx2static.teachers import BY_NAME
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

CORPUS = SHARED_CORPUS / "brown.txt.xz"
FULL_CORPUS_TOKENS = 1_161_192 + 1_794_884 + 3_474_249  # brown + sotu + gcide (shared/corpus/README.md)
K, S = 10, 5


def bare(teacher: Teacher, batch: list[Encoding]) -> Any:
    """The model forward alone (its own attention implementation and the teacher's precision)."""
    pad = int(teacher.tokenizer.pad_token_id)
    t_max = max(len(e.ids) for e in batch)
    ids = torch.full((len(batch), t_max), pad)
    mask = torch.zeros_like(ids)
    for i, e in enumerate(batch):
        ids[i, : len(e.ids)] = torch.from_numpy(e.ids)
        mask[i, : len(e.ids)] = 1
    teacher.model.set_attn_implementation(teacher.attn_impl)
    with torch.inference_mode(), teacher.autocast():
        return teacher.model(input_ids=ids, attention_mask=mask)


def bare_with_logits(teacher: Teacher, batch: list[Encoding]) -> None:
    """The bare forward plus float32 logits over the vocabulary at every token: what a model with an
    MLM head computes in its own bare forward (encoders without one: the tied input embeddings)."""
    hid = bare(teacher, batch).last_hidden_state
    with torch.inference_mode():
        w = teacher.model.get_input_embeddings().weight
        for rows in hid.float().flatten(0, 1).split(1024):
            rows @ w.T


def interleaved(
    ways: dict[str, Callable[[list[Encoding]], object]], encs: list[Encoding], budget: int
) -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds of each way over the same length-sorted batches, timed batch by batch."""
    names = list(ways)
    acc = {k: [0.0, 0.0] for k in names}
    for b, idx in enumerate(sorted_batches([len(e.ids) for e in encs], budget)):
        batch = [encs[i] for i in idx]
        for name in names[b % len(names) :] + names[: b % len(names)]:
            w0, c0 = time.perf_counter(), time.process_time()
            ways[name](batch)
            acc[name][0] += time.perf_counter() - w0
            acc[name][1] += time.process_time() - c0
    return {k: (w, c) for k, (w, c) in acc.items()}


def run_extract(args: argparse.Namespace, vocab: Vocab, out: Path, cfg: ExtractConfig) -> dict:
    """Extract into ``out`` in a fresh process, as ``cli.py extract`` runs (this process holds the
    interleaved passes' state); return its manifest with shard-pass and all-in wall and CPU seconds."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_extract_child, args, vocab, out, cfg).result()


def _extract_child(args: argparse.Namespace, vocab: Vocab, out: Path, cfg: ExtractConfig) -> dict:
    torch.set_num_threads(args.threads)
    corpus = Corpus([args.corpus])
    teacher = Teacher.load(args.teacher, TeacherConfig(precision=args.precision))
    w0, c0 = time.perf_counter(), time.process_time()
    m = extract(corpus, vocab, teacher, out, cfg)
    m["all_in"] = (time.perf_counter() - w0, time.process_time() - c0)
    return m


def naive_loop(teacher: Teacher, sents: list[list[str]]) -> float:
    """Seconds for a per-sentence loop (HF tokenizer word_ids, python loops) computing the same outputs."""
    tok, model = teacher.tokenizer, teacher.model
    emb = model.get_input_embeddings().weight
    if teacher.substitutes is not None:  # the same candidate tokens as extract
        emb = emb[torch.from_numpy(teacher.substitutes)]
    model.set_attn_implementation("eager")
    t0 = time.perf_counter()
    for words in sents:
        enc = tok(words, is_split_into_words=True, return_tensors="pt", truncation=True)
        wid = enc.word_ids()
        with torch.no_grad(), teacher.autocast():
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


def row(label: str, n_tok: int, cost: tuple[float, float], base: tuple[float, float]) -> str:
    """One table row: wall and CPU seconds, tokens/s and the bare forward's share of each."""
    (w, c), (bw, bc) = cost, base
    return f"| {label} | {w:.1f} | {c:.1f} | {n_tok / w:,.0f} | {bw / w:.2f}x | {bc / c:.2f}x |"


def hours(rate: float, tokens_per_word: float) -> str:
    """Estimated time for the full corpus at ``rate`` teacher tokens/s."""
    return f"{FULL_CORPUS_TOKENS * tokens_per_word / rate / 3600:.1f} h"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000, help="sentences")
    ap.add_argument("--naive-n", type=int, default=300, help="sentences for the naive loop (0 = --n)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--teacher", default="minilm")
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--precision", default="auto", help="forward dtype (see extract --precision)")
    ap.add_argument("--token-budget", type=int, default=ExtractConfig.token_budget)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "extract.md"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    corpus = Corpus([args.corpus])
    pairs = list(itertools.islice(corpus.sentences(), args.n))
    sents = [t for _, t in pairs]
    teacher = Teacher.load(args.teacher, TeacherConfig(precision=args.precision))
    vocab = Vocab.build(Corpus([args.corpus]), VocabConfig(min_count=5))  # what extract builds for this file
    whole = dataclasses.replace(teacher)  # the same model, top-k over the whole teacher vocabulary
    word_substitutes(teacher, token_words(teacher, vocab, corpus.config.lowercase), K)
    n_sub, n_all = len(teacher.substitutes), len(teacher.tokenizer)
    fast = fast_bf16(torch.device("cpu"))
    encs = teacher.encode(sents)
    mark_occurrences(encs, word_ids(vocab.index, sents))  # as extract: top-k only for vocabulary words
    n_tok = sum(len(e.ids) for e in encs)
    n_words = sum(len(s) for s in sents)
    budget = args.token_budget
    paras = np.asarray([p for p, _ in pairs])
    p_encs, _ = paragraph_inputs(teacher, paras, encs, sents, min(500, teacher.max_length))
    fwd = teacher.forward
    sentence_ways = {
        "bare": lambda b: bare(teacher, b),
        **(
            {
                "bare + float32 logits at every token (an MLM head's bare forward)": lambda b: (
                    bare_with_logits(teacher, b)
                )
            }
            if teacher.kind is TeacherKind.ENCODER
            else {}
        ),
        "mean only": lambda b: fwd(b, Request()),
        "+ subword-pooled vectors": lambda b: fwd(b, Request(vectors=True)),
        f"+ top-{K} over the whole teacher vocabulary ({n_all} tokens)": lambda b: whole.forward(
            b, sentence_request(ExtractConfig(topk=K))
        ),
        f"+ top-{K} substitutes ({n_sub} tokens that spell a vocabulary word, as extract)": lambda b: fwd(
            b, sentence_request(ExtractConfig(topk=K))
        ),
        f"+ attention top-{S} (eager attention): all sentence-pass signals": lambda b: fwd(
            b, sentence_request(ExtractConfig(topk=K, attention=S))
        ),
    }
    bare(teacher, encs[:8])  # warm-up
    sent_cost = interleaved(sentence_ways, encs, budget)
    para_cost = interleaved(
        {"bare": lambda b: bare(teacher, b), "paragraph pass": lambda b: fwd(b, Request(vectors=True))},
        p_encs,
        budget,
    )
    shard = ExtractConfig.shard_size  # what users get (several shards when --n exceeds it)
    configs = {
        "(a) default signals (sentence context)": {},
        "(b) + vectors": {"vectors": True},
        f"(c) all signals (vectors, paragraph, top-{K}, attention S={S})": {
            "vectors": True,
            "paragraph": True,
            "topk": K,
            "attention": S,
        },
    }
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, opts) in enumerate(configs.items()):
            cfg = ExtractConfig(shard_size=shard, max_sentences=args.n, token_budget=budget, **opts)
            runs[name] = run_extract(args, vocab, Path(tmp) / str(i), cfg)
        sizes = {name: signal_bytes(Cache.open(Path(tmp) / str(i))) for i, name in enumerate(configs)}
    naive_n = args.naive_n or args.n
    t_naive = naive_loop(teacher, sents[:naive_n])
    naive_tok = sum(len(e.ids) for e in encs[:naive_n])
    cmd = "PYTHONPATH=<pkg> python bench/speed/bench_extract.py " + argv_line(sys.argv[1:])
    tpw = n_tok / n_words
    bare_s, bare_c = sent_cost["bare"]
    all_s, all_c = sent_cost[list(sentence_ways)[-1]]
    pb_s, pb_c = para_cost["bare"]
    pp_s, pp_c = para_cost["paragraph pass"]
    p_tok = sum(len(e.ids) for e in p_encs)
    # a short name says which model; the folder it resolved to is this machine's
    source = "" if args.teacher in BY_NAME else f"{portable(str(teacher.source))}, "
    lines = [
        "# extract benchmark",
        "",
        f"Command: `{cmd}`",
        "",
        f"Teacher {args.teacher} ({source}{teacher.precision.value}), {args.threads} CPU threads, "
        f"token budget {budget}, "
        f"{len(sents)} sentences of {Path(args.corpus).name}, {n_tok} teacher tokens "
        f"({p_tok} in the paragraph inputs), {n_words} corpus tokens, vocabulary {len(vocab)} "
        "(extract's default for the file: words seen 5 times). "
        f"Load at the start: `{load}` (2 cores shared).",
        "",
        f"CPU: {cpu_name()}, {'bf16' if fast else 'float32'} blocked top-k product (`fast_bf16`).",
        "",
        "## Forward passes against the bare model forward over the same batches",
        "",
        "Timed batch by batch, the ways in rotating order (load changes hit all alike).",
        "",
        "| pass | wall s | CPU s | teacher tokens/s (wall) | vs bare (wall) | vs bare (CPU) |",
        "|---|---:|---:|---:|---:|---:|",
        *[row(f"sentence pass: {k}", n_tok, wc, sent_cost["bare"]) for k, wc in sent_cost.items()],
        *[row(f"paragraph inputs: {k}", n_tok, wc, para_cost["bare"]) for k, wc in para_cost.items()],
        row("both passes, all signals", n_tok, (all_s + pp_s, all_c + pp_c), (bare_s + pb_s, bare_c + pb_c)),
        "",
        "Teacher tokens/s counts each sentence token once, also for the paragraph pass.",
        "",
        "## extract end to end",
        "",
        "Shards: tokenising, the passes, pooling and writing the shards; all-in adds the per-vocabulary-word",
        f"baselines ({len(vocab)} words encoded alone, once at the end) and the cache files.",
        "",
        "| run | shards wall s | teacher tokens/s | all-in wall s | all-in CPU s | full corpus (shards) |",
        "|---|---:|---:|---:|---:|---:|",
        *[
            f"| {k} | {m['run']['seconds']:.1f} | {(r := m['run']['teacher_tokens_per_s']):,.0f} "
            f"| {m['all_in'][0]:.1f} | {m['all_in'][1]:.1f} | {hours(r, tpw)} |"
            for k, m in runs.items()
        ],
        f"| naive per-sentence HF loop, sentence signals only ({naive_n} sentences) | {t_naive:.1f} "
        f"| {naive_tok / t_naive:,.0f} | | | {hours(naive_tok / t_naive, tpw)} |",
        "",
        f"Full corpus: {FULL_CORPUS_TOKENS:,} corpus tokens (brown + sotu + gcide) x {tpw:.2f} teacher "
        f"tokens per corpus token in this sample = {FULL_CORPUS_TOKENS * tpw / 1e6:.1f}M teacher tokens, "
        "at the measured shard rate (the vocabulary pass adds minutes, not hours).",
        "",
        "## Bytes per corpus token",
        "",
        "| signal | " + " | ".join(configs) + " |",
        "|---|" + "---:|" * len(configs),
        *[
            f"| {sig} | " + " | ".join(f"{sz.get(sig, 0) / n_words:.1f}" for sz in sizes.values()) + " |"
            for sig in sorted(set().union(*sizes.values()))
        ],
        "| total | " + " | ".join(f"{sum(sz.values()) / n_words:.1f}" for sz in sizes.values()) + " |",
        "",
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
