"""The contextual students' two GEMMs per step, numpy's BLAS against torch's, one thread each.

Shapes of one bert-sg/ctx2vec step at the defaults (students/contextual.py): P = O U^T and
dU = G^T O with O (1010 x 384), U (300 x 384), G (1010 x 300), float32, outputs preallocated.
Prints GFLOP/s per library and shape (best of ``--repeats`` timings of ``--calls`` calls).

    python bench/speed/bench_gemm.py [--rows 1010 --d 384 --dim 300]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits


def gflops(fn, flops: float, calls: int, repeats: int) -> float:
    """Best GFLOP/s of ``repeats`` timings of ``calls`` calls of ``fn``."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, time.perf_counter() - start)
    return flops * calls / best / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1010)
    ap.add_argument("--d", type=int, default=384)
    ap.add_argument("--dim", type=int, default=300)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    occ, U = rng.random((args.rows, args.d), np.float32), rng.random((args.dim, args.d), np.float32)
    G = rng.random((args.rows, args.dim), np.float32)
    P, dU = np.empty((args.rows, args.dim), np.float32), np.empty_like(U)
    t_occ, tU, tG, tP, tdU = map(torch.from_numpy, (occ, U, G, P, dU))
    flops = 2.0 * args.rows * args.d * args.dim
    torch.set_num_threads(1)
    with threadpool_limits(1, user_api="blas"):
        rows = [
            ("numpy", "P = O U^T", lambda: np.matmul(occ, U.T, out=P)),
            ("numpy", "dU = G^T O", lambda: np.matmul(G.T, occ, out=dU)),
            ("torch", "P = O U^T", lambda: torch.matmul(t_occ, tU.T, out=tP)),
            ("torch", "dU = G^T O", lambda: torch.matmul(tG.T, t_occ, out=tdU)),
        ]
        print("| library | GEMM | GFLOP/s |\n|---|---|---:|")
        for lib, what, fn in rows:
            print(f"| {lib} | {what} | {gflops(fn, flops, args.calls, args.repeats):.1f} |")


if __name__ == "__main__":
    main()
