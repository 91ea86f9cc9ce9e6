"""Choose the ``sentence`` student's ridge on held-out sentences, not on any benchmark.

Every tenth sentence of the cache is held out; (S2) of students/sentence.py is solved on the other
nine tenths for each ridge, and the held-out sentences' mean squared error
(1/2 ||mean of rows - t_s||^2, the data term of (S1)) is reported next to the ase start's.

    python bench/probes/sentence_ridge.py --cache CACHE [--ridge 1e-4 --ridge 1e-3 ...] --out FILE.md

A "## What it means" section at the end of an existing ``--out`` (the reading written by hand after
a run) is kept.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ctx2static.cache import Cache
from ctx2static.errors import UserError
from ctx2static.fileio.outputs import check_writable
from ctx2static.students.cache_input import Init, context_stats, teacher_table
from ctx2static.students.sentence import sentence_design, solve
from ctx2static.transforms.postprocess import Standardize

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import argv_line, cpu_name, write_keeping_reading


def held_out_error(X: list[sp.csr_matrix], T: list[np.ndarray], R: np.ndarray) -> float:
    """Mean over the sentences of 1/2 ||X_s R - t_s||^2, X and T a block of rows per shard."""
    total = sum(float(np.square(x @ R - t).sum()) for x, t in zip(X, T, strict=True))
    return 0.5 * total / sum(x.shape[0] for x in X)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--ridge", type=float, action="append", help="repeatable (default: 1e-5 ... 1e-1)")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--tolerance", type=float, default=1e-5)
    ap.add_argument("--out", required=True, help="markdown table")
    args = ap.parse_args()
    ridges = args.ridge or [1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 1e-1]
    check_writable(args.out, inputs=[args.cache], folder=False)  # before the solves, not after them
    cache = Cache.open(args.cache)
    n_words = len(cache.vocab.counts)
    stats = context_stats(cache, "sent_ctx", Standardize.AUTO, "probe")
    scorer = stats if stats is not None and stats.wanted(Standardize.AUTO) else None
    R0 = teacher_table(cache, Init.ASE, scorer)
    train_x, train_t, test_x, test_t = [], [], [], []
    base = 0
    for i in range(cache.n_shards):
        shard = cache.shard(i, ["sent_ctx"])
        X = sentence_design(shard["word_ids"], shard["word_aligned"], shard["sent_offsets"], n_words)
        T = shard["sent_ctx"] if scorer is None else scorer.zscore(shard["sent_ctx"])
        used = np.diff(X.indptr) > 0
        held = (np.arange(base, base + X.shape[0]) % 10 == 0) & used
        kept = ~held & used
        base += X.shape[0]
        train_x.append(X[kept])
        train_t.append(np.asarray(T[kept], np.float64))
        test_x.append(X[held])
        test_t.append(np.asarray(T[held], np.float64))
    xt_t = sum(x.T @ t for x, t in zip(train_x, train_t, strict=True))
    start = (held_out_error(test_x, test_t, R0), held_out_error(train_x, train_t, R0))
    rows = [("ase start", "", "", *start, "")]
    for ridge in ridges:
        began = time.perf_counter()
        R, its, res = solve(train_x, xt_t + ridge * R0, R0, ridge, args.iterations, args.tolerance)
        rows.append((f"{ridge:g}", str(its), f"{res:.1e}", held_out_error(test_x, test_t, R),
                     held_out_error(train_x, train_t, R), f"{time.perf_counter() - began:.1f}"))  # fmt: skip
        print(rows[-1], flush=True)
    command = "python bench/probes/sentence_ridge.py " + argv_line(sys.argv[1:])
    lines = [
        "# The `sentence` student's ridge, chosen on held-out sentences (no benchmark)",
        "",
        f"Command (repository root): `{command}`",
        "",
        f"Date: {datetime.date.today()}. Machine: {cpu_name()}. The held-out and training errors are the"
        " mean over sentences of 1/2 ||mean of rows - t_s||^2, the data term of (S1) in"
        " students/sentence.py; the `ase start` row is the table the solve starts from.",
        "",
        f"Cache `{args.cache}`: {sum(x.shape[0] for x in train_x):,} training and "
        f"{sum(x.shape[0] for x in test_x):,} held-out sentences "
        f"(every tenth), {n_words:,} words; standardized: {scorer is not None}.",
        "",
        "| ridge | CG iterations | relative residual | held-out error | training error | seconds |",
        "|---|---:|---:|---:|---:|---:|",
        *(f"| {r} | {i} | {q} | {h:.5f} | {t:.5f} | {s} |" for r, i, q, h, t, s in rows),
        "",
    ]
    write_keeping_reading(Path(args.out), "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    try:
        main()
    except UserError as e:
        raise SystemExit(f"error: {e}") from None
