"""Which `extract --layer` makes the best `word` and `ase` tables: every layer spec from ONE teacher pass.

Each forward returns every hidden state's subword-pooled word vectors (``Request(hidden_states=True)``);
the occurrences extract keeps (``mark_occurrences``) are summed per word and hidden state in float64
(the cache's ``occ_sum``, per layer), each batch's float32 rows added as they come. Pooling and
averaging are linear, so a spec's ``ase`` is the mean of its hidden states' ``ase`` and its ``word``
table (each vocabulary word encoded alone) likewise. Every spec's two tables are scored on the
bundled similarity, analogy and categorization sets. The specs default to ones made for the
teacher's depth (:func:`default_specs`: single layers, every one up to 13 hidden states, then every
2nd or 3rd and the last; bands such as ``1:``, ``-4:``, the middle third and the family defaults of
``--layer auto``); ``--specs`` names others. Each spec's table is z-scored per dimension as the
students do it (``--standardize``, default ``auto``: transforms/postprocess.py); the tables mark the
specs z-scored with "z".

Memory: the per-word sums, float64 [V, n_hidden * d], are the one big array (SmolLM2 on Brown: 15k
words x 31 x 576 x 8 B = 2.1 GB; MiniLM: 0.3 GB); the ``word`` table, float32 [V, n_hidden, d], is
made after they are scored and freed. Beside them, one batch's hidden states at a time
(``--token-budget`` tokens x n_hidden x d x 4 B, a few times over: ~0.3 GB each for SmolLM2 at 4,096
tokens) and the model: peak RSS 1.1 GB for MiniLM (Brown's 14k words, 300 sentences), about
2.1 + 0.5 (the model) + 1 GB for SmolLM2 (estimated). ``--max-sentences N`` reads the first N
sentences only; the vocabulary is the whole corpus's, as ``extract --max-sentences`` makes it, so
``--save`` matches such a cache.

``--save DIR`` also keeps what a cache at any spec would hold that depends on the layer: every
hidden state's sentence means (all tokens, as ``sent_ctx``; sent_means.npy, corpus order), per-word
sums and counts (occ_sum.npy, occ_count.npy) and the ``word`` table (word_emb.npy), each
[rows, n_hidden, d]; ``bench/probes/layer_cache.py`` turns them into a cache for the students.

    python bench/probes/layer_ase_sweep.py --teacher minilm \
        --corpus "$CTX2STATIC_SHARED"/corpus/brown.txt.xz --threads 2 --precision int8 \
        --out bench/results/layers_minilm.md
    python bench/probes/layer_ase_sweep.py --teacher smollm2 \
        --corpus "$CTX2STATIC_SHARED"/corpus/brown.txt.xz --max-sentences 10000 --threads 2 \
        --out bench/results/layers_smollm2.md
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import platform
import sys
import time
from collections.abc import Callable, Iterator
from fractions import Fraction
from functools import partial
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ctx2static.cache.writer import WordSums
from ctx2static.eval import evaluate, load_benchmarks
from ctx2static.eval.benchmarks import Benchmark, Family, SimilaritySet
from ctx2static.eval.results import Score
from ctx2static.pipeline.align import Encoding
from ctx2static.pipeline.batching import run_sorted
from ctx2static.pipeline.config import AUTO_LAYER, TeacherConfig, parse_layers
from ctx2static.pipeline.feed import mark_occurrences, word_ids
from ctx2static.pipeline.models import FIRST_HALF, LAYER_DEFAULTS, DepthBand, resolve_layer
from ctx2static.pipeline.teacher import Request, Teacher, torch_threads
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig
from ctx2static.transforms.postprocess import Standardize, standardized_table
from ctx2static.vectors import Vectors

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import argv_line

ALL = Request(hidden_states=True)
BANDS = {
    "1:": "all but the embeddings",
    "-2:": "last two",
    "-4:": "last four",
    FIRST_HALF: "first half",
    DepthBand(Fraction(1, 4), Fraction(1, 2)): "second quarter",
    DepthBand(Fraction(1, 3), Fraction(2, 3)): "middle third",
    DepthBand(Fraction(1, 2), Fraction(3, 4)): "third quarter",
}


def default_specs(n_hidden: int) -> dict[str, str]:
    """Spec -> what it is, for a teacher with ``n_hidden`` hidden states; specs naming the same layers once.

    Single layers (every one up to 13 hidden states, else every 2nd, from 26 every 3rd, and the
    last), then the bands of :data:`BANDS` and each family's ``--layer auto`` at this depth.
    """
    step = 1 if n_hidden <= 13 else 2 if n_hidden <= 25 else 3
    specs = {str(i): "" for i in [*range(0, n_hidden - 1, step), n_hidden - 1]}
    named = [(band if isinstance(band, str) else band.spec(n_hidden), what) for band, what in BANDS.items()]
    autos: dict[str, list[str]] = {}
    for kind in LAYER_DEFAULTS:
        autos.setdefault(resolve_layer(AUTO_LAYER, kind, n_hidden), []).append(kind.value)
    named += [(spec, f"auto for {', '.join(kinds)}") for spec, kinds in autos.items()]
    first: dict[tuple[int, ...], str] = {}  # one row per set of layers, its descriptions joined
    for spec, what in [*specs.items(), *named]:
        row = first.setdefault(parse_layers(spec, n_hidden), spec)
        specs[row] = "; ".join(filter(None, [specs.get(row, ""), what]))
    return {spec: specs[spec] for spec in first.values()}


def add_batch(
    teacher: Teacher,
    acc: WordSums,
    where: dict[int, int],
    wids: list[np.ndarray],
    occ: list[np.ndarray],
    batch: list[Encoding],
) -> list[np.ndarray]:
    """One forward: its occurrences added to ``acc`` (``where``: encoding -> its row in ``wids``, ``occ``).

    Returns each input's per-hidden-state means.
    """
    outs = teacher.forward(batch, ALL)
    rows = [where[id(e)] for e in batch]
    vec = np.concatenate([o.hidden[occ[i]] for o, i in zip(outs, rows, strict=True)])
    part = WordSums.of(np.concatenate([wids[i][occ[i]] for i in rows]), vec.reshape(len(vec), -1))
    if acc.sums is None:
        acc.sums = np.zeros((len(acc.ids), part.sums.shape[1]))
    acc.sums[part.ids] += part.sums
    acc.counts[part.ids] += part.counts
    return [o.hidden_mean for o in outs]


def corpus_sums(
    teacher: Teacher,
    sentences: Iterator[tuple[int, list[str]]],
    n_sents: int,
    vocab: Vocab,
    chunk: int,
    budget: int,
    save: Path | None,
) -> WordSums:
    """Per word: its occurrence vectors summed per hidden state ([V, n_hidden * d]) and counted.

    Each batch's occurrences are added to the sums as the batch comes out of the teacher, so no
    chunk's vectors are ever held together. With ``save``, every sentence's per-hidden-state means
    go to ``save/sent_means.npy`` on the way.
    """
    acc = WordSums(np.arange(len(vocab)), None, np.zeros(len(vocab), np.int64))
    means, done = None, 0
    with tqdm(total=n_sents, unit="sent", file=sys.stderr, mininterval=10) as bar:
        while block := [toks for _, toks in itertools.islice(sentences, chunk)]:
            encs = teacher.encode(block)
            wids = word_ids(vocab.index, block)
            occ = mark_occurrences(encs, wids)
            where = {id(e): i for i, e in enumerate(encs)}
            block_means = np.stack(
                run_sorted(encs, budget, partial(add_batch, teacher, acc, where, wids, occ))
            )
            if save is not None:
                if means is None:
                    shape = (n_sents, *block_means.shape[1:])
                    means = np.lib.format.open_memmap(save / "sent_means.npy", "w+", np.float32, shape)
                means[done : done + len(block)] = block_means
                done += len(block)
            bar.update(len(block))
    if means is not None:
        means.flush()
    return acc


def word_table(teacher: Teacher, vocab: Vocab, budget: int, chunk: int = 4096) -> np.ndarray:
    """Every vocabulary word encoded alone, at every hidden state: float32 [V, n_hidden, d]."""
    word = None
    for start in range(0, len(vocab), chunk):
        words = vocab.words[start : start + chunk]
        outs = run_sorted(teacher.encode([[w] for w in words]), budget, lambda b: teacher.forward(b, ALL))
        if word is None:
            word = np.zeros((len(vocab), *outs[0].hidden.shape[1:]), np.float32)
        word[start : start + len(words)] = [o.hidden[0] for o in outs]
    return word


def spec_scores(
    words: list[str],
    counts: np.ndarray,
    layer: Callable[[int], np.ndarray],
    n_hidden: int,
    specs: list[str],
    benchmarks: list[Benchmark],
    standardize: Standardize,
) -> tuple[dict[str, list[Score]], set[str]]:
    """Each spec's table scored: the mean of its hidden states' rows (``layer(i)``: [rows, d]).

    The mean is summed one hidden state at a time, never from a copy of every hidden state's rows.
    Returns the scores and the specs whose table ``standardize`` z-scored.
    """
    out, zscored = {}, set()
    for spec in specs:
        pick = parse_layers(spec, n_hidden)
        rows = sum(layer(i).astype(np.float64) for i in pick) / len(pick)
        rows, z, _ = standardized_table(rows, standardize)
        if z:
            zscored.add(spec)
        out[spec] = evaluate(Vectors(words, rows, counts), benchmarks)
    return out, zscored


def ase_scores(
    acc: WordSums,
    vocab: Vocab,
    n_hidden: int,
    specs: list[str],
    benchmarks: list[Benchmark],
    save: Path | None,
    standardize: Standardize,
) -> tuple[dict[str, list[Score]], set[str]]:
    """Each spec's ``ase`` table (words the teacher saw whole) scored; with ``save``, the sums kept."""
    sums = acc.sums.reshape(len(vocab), n_hidden, -1)
    if save is not None:
        np.save(save / "occ_sum.npy", sums)
        np.save(save / "occ_count.npy", acc.counts)
    seen = np.flatnonzero(acc.counts > 0)
    words, counts = [vocab.words[i] for i in seen], vocab.counts[seen]
    return spec_scores(
        words,
        counts,
        lambda i: sums[seen, i] / acc.counts[seen, None],
        n_hidden,
        specs,
        benchmarks,
        standardize,
    )


def columns(scores: list[Score]) -> dict[str, Score]:
    """Similarity and categorization scores by set, analogy 3CosAdd as "NAME add"."""
    return {s.benchmark: s for s in scores if s.family != "analogy"} | {
        f"{s.benchmark} add": s for s in scores if "3CosAdd" in s.metric
    }


def table(
    rows: dict[str, list[Score]], names: list[str], labels: dict[str, str], zscored: set[str]
) -> list[str]:
    """Markdown: a row per spec (label; "z" if z-scored) with the columns ``names`` and sim+ana; coverage."""
    lines = ["| spec | " + " | ".join(names) + " | sim+ana |", "|---|" + "---:|" * (len(names) + 1)]
    for spec, scores in rows.items():
        col = columns(scores)
        mix = (col["avg5"].score + (col["google add"].score + col["msr add"].score) / 2) / 2
        name = f"`{spec}` {labels.get(spec, '')}{' z' if spec in zscored else ''}".rstrip()
        lines.append(f"| {name} | " + " | ".join(f"{col[n].score:.1f}" for n in names) + f" | {mix:.1f} |")
    col = columns(next(iter(rows.values())))
    return [
        *lines,
        "| coverage | " + " | ".join(f"{col[n].covered / col[n].total:.0%}" for n in names) + " | |",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teacher", default="minilm", help="short name, model folder or hub id")
    ap.add_argument("--corpus", nargs="+", required=True)
    ap.add_argument(
        "--specs", nargs="+", help="layer specs as extract --layer takes them (default: made for the depth)"
    )
    ap.add_argument("--max-sentences", type=int, default=0, help="read the first N sentences (0 = all)")
    ap.add_argument("--precision", choices=["float32", "int8"], default="float32", help="as extract's")
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--chunk", type=int, default=1000, help="sentences tokenised and length-sorted together")
    ap.add_argument("--token-budget", type=int, default=4096, help="padded tokens per batch (memory)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--out", required=True, help="markdown results file")
    ap.add_argument("--save", type=Path, help="folder for the per-layer arrays (module docstring)")
    ap.add_argument(
        "--standardize", choices=[m.value for m in Standardize], default="auto", help="as the students'"
    )
    args = ap.parse_args()
    if args.save is not None:
        args.save.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    corpus = Corpus(args.corpus)
    vocab = Vocab.build(corpus, VocabConfig(min_count=args.min_count))
    teacher = Teacher.load(args.teacher, TeacherConfig(precision=args.precision))

    def sentences() -> Iterator[tuple[int, list[str]]]:
        return itertools.islice(corpus.sentences(), args.max_sentences or None)

    n_sents = sum(1 for _ in sentences())
    benchmarks = load_benchmarks((Family.SIMILARITY, Family.ANALOGY, Family.CATEGORIZATION))
    with torch_threads(args.threads):
        acc = corpus_sums(teacher, sentences(), n_sents, vocab, args.chunk, args.token_budget, args.save)
        t_corpus = time.perf_counter() - t0
        n_hidden = teacher.n_hidden
        labels = default_specs(n_hidden) if args.specs is None else {}
        specs = args.specs or list(labels)
        seen = np.flatnonzero(acc.counts > 0)
        n_occurrences = int(acc.counts.sum())
        mode = Standardize(args.standardize)
        results = {"ase": ase_scores(acc, vocab, n_hidden, specs, benchmarks, args.save, mode)}
        del acc  # the sums go before the word table comes
        word = word_table(teacher, vocab, args.token_budget)
    if args.save is not None:
        np.save(args.save / "word_emb.npy", word)
    results["word"] = spec_scores(
        vocab.words, vocab.counts, lambda i: word[:, i], n_hidden, specs, benchmarks, mode
    )
    secs = time.perf_counter() - t0
    part = f" (the first {n_sents:,} sentences)" if args.max_sentences else ""
    sim = [b.name for b in benchmarks if isinstance(b, SimilaritySet)]
    names = [*sim, "avg5", "google add", "msr add", "ap", "battig", "essli2008"]
    lines = [
        f"# Layer choice for `word` and `ase`: {args.teacher}",
        "",
        f"Date: {datetime.date.today()}. Command (repository root): `python {argv_line(sys.argv)}`",
        f"Corpus: {', '.join(args.corpus)}{part}; {n_occurrences:,} occurrences of {len(vocab):,} "
        f"words (min_count {args.min_count}), {len(seen):,} seen whole by the teacher (`ase` rows). "
        f"Teacher: {n_hidden} hidden states, {teacher.precision.value}. "
        f"Teacher pass {t_corpus / 60:.1f} min, total {secs / 60:.1f} min, {args.threads} torch thread(s), "
        f"{platform.processor() or platform.machine()}.",
        "",
        "Spearman x100 (similarity), 3CosAdd accuracy x100 (analogy), purity x100 (categorization); "
        "sim+ana = (avg5 + mean of google and msr add) / 2. Spec = `extract --layer` (hidden state 0 = "
        "embeddings).",
    ]
    for name in ("ase", "word"):
        lines += ["", f"## {name}", "", *table(results[name][0], names, labels, results[name][1])]
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
