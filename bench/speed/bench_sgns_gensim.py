"""Benchmark: ctx2static's Numba SGNS/CBOW against gensim's Word2Vec on identical sentences.

Both train from the same token lists (ctx2static's Corpus tokeniser), with the same settings;
timings exclude vocabulary building and (for ours) the JIT warm-up. Quality is the Spearman
correlation x100 of cosine similarity on five word-similarity sets (covered pairs only).

    PYTHONPATH=<pkg> python bench/speed/bench_sgns_gensim.py --out bench/results/sgns_vs_gensim.md
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from machine import SHARED_CORPUS, argv_line
from scipy.stats import spearmanr

from ctx2static.resources import BENCHMARK_DIR
from ctx2static.students import cbow, sgns
from ctx2static.text.encoded import EncodedCorpus, encode_corpus
from ctx2static.text.vocab import Vocab, VocabConfig

SIM_SETS = {"WS353": "ws353", "SimLex": "simlex999", "MEN": "men3k", "RW": "rw", "RG65": "rg65"}


class InMemory:
    """Token lists shaped like a Corpus (for Vocab.build and encode_corpus)."""

    def __init__(self, sentences: list[list[str]], paths: list[str]) -> None:
        self.sents = sentences
        self.paths = paths

    def __iter__(self) -> Iterator[list[str]]:
        return iter(self.sents)

    def sentences(self) -> Iterator[tuple[int, list[str]]]:
        yield from enumerate(self.sents)


def similarity_scores(lookup: Callable[[str], np.ndarray | None]) -> dict[str, tuple[float, float]]:
    """Spearman x100 and coverage of each similarity set (lower-cased look-ups)."""
    out = {}
    for name, stem in SIM_SETS.items():
        gold, pred, total = [], [], 0
        for line in (BENCHMARK_DIR / "similarity" / f"{stem}.txt").read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) < 3:
                continue
            total += 1
            a, b = lookup(parts[0].lower()), lookup(parts[1].lower())
            if a is None or b is None:
                continue
            gold.append(float(parts[2]))
            pred.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12)))
        rho = spearmanr(gold, pred).statistic * 100 if len(gold) > 2 else float("nan")
        out[name] = (rho, len(gold) / max(total, 1))
    return out


def run_ours(
    student: str, encoded: EncodedCorpus, vocab: Vocab, args: argparse.Namespace, seed: int
) -> tuple:
    module = sgns if student == "sgns" else cbow
    config = module.Config(epochs=args.epochs, threads=args.threads, seed=seed)
    start, cpu = time.perf_counter(), time.process_time()
    vectors = module.fit(encoded, vocab, config)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu

    def lookup(w: str) -> np.ndarray | None:
        i = vectors.index.get(w)
        return None if i is None else vectors.matrix[i]

    return seconds, cpu, lookup


def run_gensim(student: str, sentences: list[list[str]], args: argparse.Namespace, seed: int) -> tuple:
    from gensim.models import Word2Vec

    sg = int(student == "sgns")
    model = Word2Vec(
        vector_size=100, window=5, negative=5, hs=0, sample=1e-3, min_count=args.min_count,
        workers=args.threads, epochs=args.epochs, seed=seed, sg=sg,
        alpha=0.025 if sg else 0.05, min_alpha=1e-4, cbow_mean=1,
    )  # fmt: skip
    model.build_vocab(sentences)
    start, cpu = time.perf_counter(), time.process_time()
    model.train(sentences, total_examples=model.corpus_count, epochs=args.epochs)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    kv = model.wv
    return seconds, cpu, lambda w: kv[w] if w in kv.key_to_index else None


def warm_up(student: str) -> None:
    """Load (or compile) the Numba kernels outside the timed region."""
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 20, 400).astype(np.int32)
    enc = EncodedCorpus(ids, np.arange(0, 401, 20, dtype=np.int64), np.zeros(20, np.int32))
    vocab = Vocab([f"w{i}" for i in range(20)], np.bincount(ids, minlength=20) + 1)
    module = sgns if student == "sgns" else cbow
    module.fit(enc, vocab, module.Config(epochs=1, threads=1))


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus-dir", default=str(SHARED_CORPUS))
    ap.add_argument("--files", nargs="+", default=["brown.txt.xz", "sotu.txt.xz", "gcide.txt.xz"])
    ap.add_argument("--students", nargs="+", default=["sgns", "cbow"], choices=["sgns", "cbow"])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1], help="one run per seed, results averaged")
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--out", help="write the Markdown report here")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from ctx2static.text.corpus import Corpus

    load_before = uptime()
    paths = [str(Path(args.corpus_dir) / f) for f in args.files]
    t0 = time.perf_counter()
    sentences = list(Corpus(paths))
    n_raw = sum(len(s) for s in sentences)
    print(f"tokenised {n_raw:,} tokens, {len(sentences):,} sentences in {time.perf_counter() - t0:.0f} s")
    corpus = InMemory(sentences, paths)
    vocab = Vocab.build(corpus, VocabConfig(min_count=args.min_count))  # type: ignore[arg-type]
    runs = []  # (student, impl, seed, wall s, CPU s, scores)
    with tempfile.TemporaryDirectory() as work:
        encoded = encode_corpus(corpus, vocab, work)  # type: ignore[arg-type]
        for student in args.students:
            warm_up(student)
            for seed in args.seeds:  # interleaved, so both see similar background load
                for impl in ("ctx2static", "gensim"):
                    if impl == "gensim":
                        seconds, cpu, lookup = run_gensim(student, sentences, args, seed)
                    else:
                        seconds, cpu, lookup = run_ours(student, encoded, vocab, args, seed)
                    scores = {k: rho for k, (rho, _) in similarity_scores(lookup).items()}
                    runs.append((student, impl, seed, seconds, cpu, scores))
                    per = ", ".join(f"{k} {r:.1f}" for k, r in scores.items())
                    avg = np.mean(list(scores.values()))
                    print(
                        f"{student} {impl} seed {seed}: {seconds:.1f} s ({cpu:.1f} CPU s), "
                        f"{n_raw * args.epochs / seconds:,.0f} words/s, avg {avg:.1f} "
                        f"({per}) [{uptime()}]",
                        flush=True,
                    )
        coverage = similarity_scores(lambda w: np.ones(1) if w in vocab else None)
    load_after = uptime()
    report = render(runs, coverage, args, n_raw, len(sentences), len(vocab), load_before, load_after)
    print(report)
    if args.out:
        from ctx2static.fileio.atomic import atomic_write

        with atomic_write(args.out, "w", encoding="utf-8") as fh:
            fh.write(report)


def render(
    runs: list,
    coverage: dict,
    args: argparse.Namespace,
    n_raw: int,
    n_sent: int,
    n_vocab: int,
    before: str,
    after: str,
) -> str:
    names = list(SIM_SETS)
    lines = [
        "# ctx2static SGNS/CBOW vs gensim Word2Vec",
        "",
        f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC. "
        f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with other jobs; "
        f"{args.threads} threads for both. Python {platform.python_version()}.",
        f"Load before: `{before}`; after: `{after}`.",
        "",
        f"Corpus: {', '.join(args.files)} ({n_raw:,} tokens, {n_sent:,} sentences, "
        f"{n_vocab:,} words with min_count {args.min_count}), tokenised once with ctx2static's Corpus; "
        f"gensim gets the same token lists in memory.",
        f"Settings (both): dim 100, window 5, negative 5, sample 1e-3, epochs {args.epochs}, "
        "alpha 0.025 (sg) / 0.05 (cbow, mean), min_alpha 1e-4; "
        f"seeds {', '.join(map(str, args.seeds))}, ours and gensim interleaved per seed; means over seeds.",
        "words/s = raw corpus tokens x epochs / training wall seconds (vocabulary building and JIT warm-up "
        "excluded); CPU s = process CPU time over all threads during training (less sensitive to other load; "
        "gensim's includes its job-producer thread).",
        "Similarity: Spearman x100 of cosine on covered pairs (lower-cased); avg = mean of the five "
        "(+- standard deviation over seeds).",
        "",
        "| model | impl | train s | CPU s | words/s | " + " | ".join(names) + " | avg |",
        "|---|---|---:|---:|---:|" + "---:|" * len(names) + "---:|",
    ]
    summary = {}
    for student in dict.fromkeys(r[0] for r in runs):
        for impl in ("ctx2static", "gensim"):
            mine = [r for r in runs if r[0] == student and r[1] == impl]
            wall = float(np.mean([r[3] for r in mine]))
            cpu = float(np.mean([r[4] for r in mine]))
            per = {n: float(np.mean([r[5][n] for r in mine])) for n in names}
            avgs = [float(np.mean(list(r[5].values()))) for r in mine]
            summary[student, impl] = (wall, cpu, float(np.mean(avgs)))
            cells = " | ".join(f"{per[n]:.1f}" for n in names)
            sd = f" +- {np.std(avgs, ddof=1):.1f}" if len(avgs) > 1 else ""
            lines.append(
                f"| {student} | {impl} | {wall:.1f} | {cpu:.1f} | {n_raw * args.epochs / wall:,.0f} | "
                f"{cells} | {np.mean(avgs):.1f}{sd} |"
            )
    lines.append("")
    lines.append(
        "Coverage (pairs with both words in vocabulary): "
        + ", ".join(f"{n} {coverage[n][1]:.0%}" for n in names)
    )
    lines.append("")
    for student in dict.fromkeys(r[0] for r in runs):
        (ow, oc, oa), (tw, tc, ta) = summary[student, "ctx2static"], summary[student, "gensim"]
        lines.append(
            f"- {student}: speed ratio ours/gensim = {tw / ow:.2f} by wall clock, {tc / oc:.2f} by CPU time; "
            f"avg similarity ours - gensim = {oa - ta:+.1f} points."
        )
    lines += ["", "Per run (wall s, CPU s, avg):", ""]
    for student, impl, seed, wall, cpu, scores in runs:
        lines.append(
            f"- {student} {impl} seed {seed}: {wall:.1f}, {cpu:.1f}, {np.mean(list(scores.values())):.1f}"
        )
    lines += ["", "Command:", "", "```", "PYTHONPATH=<pkg> python " + argv_line(sys.argv), "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
