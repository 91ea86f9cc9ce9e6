"""Time the downstream family on one vectors file (the issue's target: 40k x 384 in <= 2 min on 2 cores).

    python bench/bench_downstream.py VECTORS [--random-dim 384] >> bench/results/downstream_speed.md

With --random-dim D the vectors are replaced by Gaussian ones of size D on the same vocabulary
(the cost depends on the size, not the values; L-BFGS may take more steps on random vectors).
Prints one Markdown row per task and the total: wall seconds, CPU seconds of this process (what
an idle machine's wall time would be: the probes run one BLAS thread) and the machine's load
average, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from machine import cpu_name

from ctx2static.eval import evaluate, load_benchmarks
from ctx2static.eval.benchmarks import Family
from ctx2static.eval.downstream import Task
from ctx2static.vectors import Vectors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vectors")
    parser.add_argument("--random-dim", type=int, default=0)
    args = parser.parse_args()
    vectors = Vectors.load(args.vectors)
    if args.random_dim:
        matrix = np.random.default_rng(0).standard_normal((len(vectors), args.random_dim), dtype=np.float32)
        vectors = Vectors(vectors.words, matrix)
    print(
        f"\n{args.vectors}{' (random values)' if args.random_dim else ''}: {len(vectors):,} x {vectors.dim}; "
        f"{cpu_name()}, {os.cpu_count()} CPUs\n"
    )
    print("| task (load + evaluate) | scores | wall s | CPU s | load average (1 min) before, after |")
    print("|---|---|---:|---:|---|")
    total_wall = total_cpu = 0.0
    for task in Task:
        load, wall, cpu = os.getloadavg()[0], time.perf_counter(), time.process_time()
        benches = load_benchmarks((Family.DOWNSTREAM,), tasks=(task,))
        scores = evaluate(vectors, benches)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        total_wall += wall
        total_cpu += cpu
        cells = "; ".join(f"{s.benchmark} {s.cell()}" for s in scores)
        after = os.getloadavg()[0]
        print(f"| {task.value} | {cells} | {wall:.1f} | {cpu:.1f} | {load:.1f}, {after:.1f} |")
    print(f"| **all** | | **{total_wall:.1f}** | **{total_cpu:.1f}** | |")


if __name__ == "__main__":
    main()
