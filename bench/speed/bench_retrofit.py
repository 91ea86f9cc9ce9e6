"""Speed of one retrofitting iteration (sparse Jacobi form) vs a per-word Python loop.

Synthetic: N x D random vectors and an N-headword random lexicon (1..MAXDEG neighbours each),
written to a temp file and read back through the real lexicon reader. With --ppdb PATH also the
real PPDB-XL lexicon over a vocabulary made of its own words (random vectors).
The loop baseline follows Faruqui's reference retrofit.py (dict of vectors, neighbours per word,
in place) and Context2Vector's per-word kernel; it runs on a subset and is scaled to all headwords.

    PYTHONPATH=<pkg> python bench/speed/bench_retrofit.py [--ppdb "$CTX2STATIC_SHARED"/lexicons/ppdb-xl.txt] \
        [--out bench/results/retrofit_speed.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ctx2static.fileio.atomic import atomic_write
from ctx2static.retrofit.config import Method, RetrofitConfig
from ctx2static.retrofit.lexicon import build_graph, read_lexicon
from ctx2static.retrofit.solver import log_student_t_kernel, retrofit_matrix

sys.path.insert(0, str(Path(__file__).parent))
from machine import argv_line


def synthetic_lexicon(words: list[str], max_deg: int, rng: np.random.Generator, path: Path) -> None:
    n = len(words)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            nbrs = rng.integers(0, n, size=int(rng.integers(1, max_deg + 1)))
            fh.write(" ".join([words[i], *(words[j] for j in nbrs)]) + "\n")


def time_sparse(q0: np.ndarray, adjacency, method: Method, iterations: int) -> tuple[float, float]:
    """(seconds for the first iteration incl. weight set-up, mean seconds per iteration over `iterations`)."""
    cfg = RetrofitConfig(method=method, iterations=1)
    retrofit_matrix(q0[:10], adjacency[:10, :10], cfg)  # numba compile / cache load
    t = time.perf_counter()
    retrofit_matrix(q0, adjacency, cfg)
    first = time.perf_counter() - t
    cfg = RetrofitConfig(method=method, iterations=iterations)
    t = time.perf_counter()
    retrofit_matrix(q0, adjacency, cfg)
    return first, (time.perf_counter() - t) / iterations


def naive_iteration(
    q0: np.ndarray, words: list[str], lexicon: dict[str, list[str]], method: Method, cfg
) -> float:
    """Seconds per headword of one reference-style per-word iteration (on the given lexicon subset)."""
    vecs = {w: q0[i].astype(np.float64) for i, w in enumerate(words)}
    new = dict(vecs)
    vocab = set(vecs)
    t = time.perf_counter()
    for word in vocab.intersection(lexicon):
        nbrs = list(set(lexicon[word]).intersection(vocab))
        if not nbrs:
            continue
        if method is Method.FARUQUI:
            vec = len(nbrs) * vecs[word]
            for nb in nbrs:
                vec = vec + new[nb]
            new[word] = vec / (2 * len(nbrs))
        else:
            arr = np.array([new[nb] for nb in nbrs])
            logg = log_student_t_kernel(((arr - new[word]) ** 2).sum(1), cfg.nu, cfg.sigma)
            w = np.exp(logg - logg.max())
            new[word] = (vecs[word] + (w / w.sum()) @ arr) / 2
    return (time.perf_counter() - t) / len(lexicon)


def bench_case(name: str, words: list[str], lex_path: Path, dim: int, args, rng) -> list[str]:
    q0 = rng.normal(size=(len(words), dim)).astype(np.float32)
    q0 /= np.linalg.norm(q0, axis=1, keepdims=True)
    t = time.perf_counter()
    graph = build_graph(words, [lex_path])
    t_graph = time.perf_counter() - t
    heads = sum(1 for _ in read_lexicon(lex_path))
    stats = graph.stats()
    lexicon = dict(read_lexicon(lex_path))
    subset = dict(list(lexicon.items())[: args.naive_heads])
    rows = []
    for method in Method:
        first, per_it = time_sparse(q0, graph.adjacency, method, args.iterations)
        naive = naive_iteration(q0, words, subset, method, RetrofitConfig(method=method)) * heads
        rows.append(
            f"| {name} | {method.value} | {len(words):,} x {dim} | {heads:,} | {stats['edges']:,} | "
            f"{t_graph:.2f} | {first:.3f} | {per_it:.3f} | {naive:.2f} | {naive / per_it:.0f}x |"
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=300)
    ap.add_argument("--max-deg", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--naive-heads", type=int, default=3000, help="headwords timed in the per-word loop")
    ap.add_argument("--ppdb", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        words = [f"w{i}" for i in range(args.n)]
        lex = Path(tmp) / "random-lexicon.txt"
        synthetic_lexicon(words, args.max_deg, rng, lex)
        rows += bench_case("synthetic", words, lex, args.dim, args, rng)
    if args.ppdb:
        vocab = dict.fromkeys(w for head, nbrs in read_lexicon(args.ppdb) for w in [head, *nbrs])
        rows += bench_case("PPDB-XL", list(vocab), args.ppdb, args.dim, args, rng)
    if args.out:
        cmd = "PYTHONPATH=<pkg> python " + argv_line(sys.argv)
        text = "\n".join(
            [
                "# Retrofitting speed",
                "",
                f"Command: `{cmd}`",
                "",
                f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores "
                f"(shared with other jobs; load average at end {os.getloadavg()[0]:.1f}), "
                f"numba threads {os.environ.get('NUMBA_NUM_THREADS', 'default')}.",
                "",
                "Sparse = `retrofit_matrix` (Jacobi; compiled parallel passes over the CSR graph rows), "
                "vectors unit-normalised float32. *first it* includes the weight set-up; *per it* is the "
                f"mean over {args.iterations} iterations. *loop* = one per-word Python iteration in the "
                f"reference codes' style, timed on {args.naive_heads} headwords and scaled to all of them.",
                "",
                "| lexicon | method | vectors | headwords | edges in vocab | graph build s | first it s "
                "| per it s | loop it s (scaled) | speed-up |",
                "|---|---|---|---|---|---|---|---|---|---|",
                *rows,
                "",
            ]
        )
        with atomic_write(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
