"""Which `extract --layer` makes the best `word` and `ase` tables: every layer spec from ONE teacher pass.

Each forward returns every hidden state's subword-pooled word vectors (``Request(hidden_states=True)``);
the occurrences extract keeps (``mark_occurrences``) are summed per word and hidden state in float64
(the cache's ``occ_sum``, per layer). Pooling and averaging are linear, so a spec's ``ase`` is the mean
of its hidden states' ``ase`` and its ``word`` table (each vocabulary word encoded alone) likewise.
Every spec's two tables are scored on the bundled similarity, analogy and categorization sets.
``--save DIR`` also keeps what a cache at any spec would hold that depends on the layer: every
hidden state's sentence means (all tokens, as ``sent_ctx``; sent_means.npy, corpus order), per-word
sums and counts (occ_sum.npy, occ_count.npy) and the ``word`` table (word_emb.npy), each
[rows, n_hidden, d]; ``bench/probes/layer_cache.py`` turns them into a cache for the students.

    python bench/probes/layer_ase_sweep.py --corpus ../shared/corpus/brown.txt.xz \
        --threads 1 --out bench/results/layers_minilm.md
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import platform
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ctx2static.cache.writer import WordSums
from ctx2static.eval import evaluate, load_benchmarks
from ctx2static.eval.benchmarks import Family, SimilaritySet
from ctx2static.eval.results import Score
from ctx2static.pipeline.batching import run_sorted
from ctx2static.pipeline.config import parse_layers
from ctx2static.pipeline.shard import mark_occurrences, word_ids
from ctx2static.pipeline.teacher import Request, Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig
from ctx2static.threads import torch_threads
from ctx2static.vectors import Vectors

SPECS = ["0", "1", "2", "3", "4", "5", "6", "-4:", "2,3,4", "1:", "-2:"]
ALL = Request(hidden_states=True)


def corpus_sums(
    teacher: Teacher, corpus: Corpus, vocab: Vocab, chunk: int, budget: int, save: Path | None
) -> WordSums:
    """Per word: its occurrence vectors summed per hidden state ([V, n_hidden * d]) and counted.

    With ``save``, every sentence's per-hidden-state means go to ``save/sent_means.npy`` on the way.
    """
    n_sents = sum(1 for _ in corpus.sentences())
    acc = WordSums(np.arange(len(vocab)), None, np.zeros(len(vocab), np.int64))
    sents = corpus.sentences()
    means, done = None, 0
    with tqdm(total=n_sents, unit="sent", file=sys.stderr, mininterval=10) as bar:
        while block := [toks for _, toks in itertools.islice(sents, chunk)]:
            wids = word_ids(vocab, block)
            encs = teacher.encode(block)
            occ = mark_occurrences(encs, wids)
            outs = run_sorted(encs, budget, lambda b: teacher.forward(b, ALL))
            if save is not None:
                block_means = np.stack([o.hidden_mean for o in outs])
                if means is None:
                    shape = (n_sents, *block_means.shape[1:])
                    means = np.lib.format.open_memmap(save / "sent_means.npy", "w+", np.float32, shape)
                means[done : done + len(block)] = block_means
                done += len(block)
            vec = np.concatenate([o.hidden[m] for o, m in zip(outs, occ, strict=True)])
            vec = vec.reshape(len(vec), -1)  # [occurrences, n_hidden * d]
            part = WordSums.of(np.concatenate([w[m] for w, m in zip(wids, occ, strict=True)]), vec)
            if acc.sums is None:
                acc.sums = np.zeros((len(vocab), vec.shape[1]))
            acc.sums[part.ids] += part.sums
            acc.counts[part.ids] += part.counts
            bar.update(len(block))
    if means is not None:
        means.flush()
    return acc


def columns(scores: list[Score]) -> dict[str, Score]:
    """Similarity and categorization scores by set, analogy 3CosAdd as "NAME add"."""
    return {s.benchmark: s for s in scores if s.family != "analogy"} | {
        f"{s.benchmark} add": s for s in scores if "3CosAdd" in s.metric
    }


def table(rows: dict[str, list[Score]], names: list[str]) -> list[str]:
    """Markdown: one row per spec with the columns ``names`` and sim+ana, then the coverage row."""
    lines = ["| spec | " + " | ".join(names) + " | sim+ana |", "|---|" + "---:|" * (len(names) + 1)]
    for spec, scores in rows.items():
        col = columns(scores)
        mix = (col["avg5"].score + (col["google add"].score + col["msr add"].score) / 2) / 2
        lines.append(f"| `{spec}` | " + " | ".join(f"{col[n].score:.1f}" for n in names) + f" | {mix:.1f} |")
    col = columns(next(iter(rows.values())))
    return [
        *lines,
        "| coverage | " + " | ".join(f"{col[n].covered / col[n].total:.0%}" for n in names) + " | |",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teacher", default="minilm")
    ap.add_argument("--corpus", nargs="+", required=True)
    ap.add_argument("--specs", nargs="+", default=SPECS, help="layer specs as extract --layer takes them")
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--chunk", type=int, default=1000, help="sentences per teacher chunk (memory)")
    ap.add_argument("--token-budget", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--out", required=True, help="markdown results file")
    ap.add_argument("--save", type=Path, help="folder for the per-layer arrays (module docstring)")
    args = ap.parse_args()
    if args.save is not None:
        args.save.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    corpus = Corpus(args.corpus)
    vocab = Vocab.build(corpus, VocabConfig(min_count=args.min_count))
    teacher = Teacher.load(args.teacher)
    with torch_threads(args.threads):
        acc = corpus_sums(teacher, corpus, vocab, args.chunk, args.token_budget, args.save)
        t_corpus = time.perf_counter() - t0
        outs = run_sorted(
            teacher.encode([[w] for w in vocab.words]), args.token_budget, lambda b: teacher.forward(b, ALL)
        )
    word = np.stack([o.hidden[0] for o in outs])  # [V, n_hidden, d]
    if args.save is not None:
        np.save(args.save / "occ_sum.npy", acc.sums.reshape(word.shape))
        np.save(args.save / "occ_count.npy", acc.counts)
        np.save(args.save / "word_emb.npy", word)
    seen = np.flatnonzero(acc.counts > 0)
    ase = (acc.sums[seen] / acc.counts[seen, None]).reshape(len(seen), *word.shape[1:])
    benchmarks = load_benchmarks((Family.SIMILARITY, Family.ANALOGY, Family.CATEGORIZATION))
    results: dict[str, dict[str, list[Score]]] = {"ase": {}, "word": {}}
    for spec in args.specs:
        pick = list(parse_layers(spec, word.shape[1]))
        for name, words, rows in (("ase", seen, ase), ("word", np.arange(len(vocab)), word)):
            v = Vectors([vocab.words[i] for i in words], rows[:, pick].mean(1), vocab.counts[words])
            results[name][spec] = evaluate(v, benchmarks)
    secs = time.perf_counter() - t0
    sim = [b.name for b in benchmarks if isinstance(b, SimilaritySet)]
    names = [*sim, "avg5", "google add", "msr add", "ap", "battig", "essli2008"]
    lines = [
        f"# Layer choice for `word` and `ase`: {args.teacher}",
        "",
        f"Date: {datetime.date.today()}. Command (repository root): `python {' '.join(sys.argv)}`",
        f"Corpus: {', '.join(args.corpus)}; {int(acc.counts.sum()):,} occurrences of {len(vocab):,} words "
        f"(min_count {args.min_count}), {len(seen):,} seen whole by the teacher (`ase` rows). "
        f"Teacher pass {t_corpus / 60:.1f} min, total {secs / 60:.1f} min, {args.threads} torch thread(s), "
        f"{platform.processor() or platform.machine()}.",
        "",
        "Spearman x100 (similarity), 3CosAdd accuracy x100 (analogy), purity x100 (categorization); "
        "sim+ana = (avg5 + mean of google and msr add) / 2. Spec = `extract --layer` (hidden state 0 = "
        "embeddings).",
    ]
    for name in ("ase", "word"):
        lines += ["", f"## {name}", "", *table(results[name], names)]
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
