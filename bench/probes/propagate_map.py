"""Post-specialisation maps compared: none, ridge (several rho), a small residual MLP (torch).

Input: the original vectors and a specialised copy in which some words did not move (made with
``attract_repel_table.py --hold-out --save``, so no similarity-set word was specialised
directly). Each map is fitted on the moved words (original -> specialised, unit rows) and applied
to the others; the similarity sets are then scored. The MLP (Vulic et al. 2018 use a deeper
one with a max-margin loss) is f(x) = x + W2 swish(W1 x + b1) + b2, trained with 1 - cos(f(x0), x)
by Adam: it tells whether a non-linear map earns its cost over ridge regression.

    python bench/probes/propagate_map.py /tmp/ar/word.bin /tmp/ar/save/word.ar-lr.01/ --out runs/ar/maps.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from ctx2static.eval import Family, evaluate, load_benchmarks
from ctx2static.retrofit.propagate import propagate
from ctx2static.vectors import Vectors


def mlp_map(x0: np.ndarray, x: np.ndarray, hidden: int, epochs: int, seed: int = 0):
    import torch

    torch.set_num_threads(1)  # a tiny net: more threads only contend
    torch.manual_seed(seed)
    a = torch.from_numpy(np.ascontiguousarray(x0, np.float32))
    b = torch.from_numpy(np.ascontiguousarray(x, np.float32))
    net = torch.nn.Sequential(
        torch.nn.Linear(a.shape[1], hidden), torch.nn.SiLU(), torch.nn.Linear(hidden, a.shape[1])
    )
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    for _ in range(epochs):
        for idx in torch.randperm(len(a)).split(128):
            pred = a[idx] + net(a[idx])
            loss = (1 - torch.nn.functional.cosine_similarity(pred, b[idx])).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    def apply(rows: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            t = torch.from_numpy(np.ascontiguousarray(rows, np.float32))
            return (t + net(t)).numpy()

    return apply


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("original", type=Path)
    ap.add_argument("specialised", type=Path)
    ap.add_argument("--ridge", type=float, nargs="+", default=[0.1, 1.0, 10.0, 100.0])
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    benchmarks = load_benchmarks((Family.SIMILARITY,))
    original = Vectors.load(args.original)
    q0 = original.unit().astype(np.float32)
    q = Vectors.load(args.specialised).matrix
    moved = np.abs(q - q0).max(axis=1) > 1e-4  # a text file rounds the rows that did not move
    print(f"{moved.sum()} of {len(moved)} words moved", flush=True)
    rows: list[tuple[str, np.ndarray, float]] = [("none", q, 0.0)]
    for rho in args.ridge:
        start = time.perf_counter()
        out, _, _ = propagate(q0, q, moved, rho)
        rows.append((f"ridge {rho:g}", out, time.perf_counter() - start))
    start = time.perf_counter()
    apply = mlp_map(q0[moved], q[moved], args.hidden, args.epochs)
    out = q.copy()
    out[~moved] = apply(q0[~moved])
    rows.append((f"mlp {args.hidden}, {args.epochs} epochs", out, time.perf_counter() - start))
    with args.out.open("a") as fh:
        for label, matrix, seconds in rows:
            scores = evaluate(Vectors(original.words, matrix), benchmarks)
            cells = " | ".join(f"{s.benchmark} {s.score:.1f}" for s in scores)
            line = f"| {args.specialised.name} | {label} | {cells} | {seconds:.1f} s |"
            fh.write(line + "\n")
            print(line, flush=True)


if __name__ == "__main__":
    main()
