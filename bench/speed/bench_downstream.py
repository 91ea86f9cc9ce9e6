"""Time the downstream family on one vectors file (the target: 40k x 384 in <= 2 min on 2 cores).

    python bench/speed/bench_downstream.py VECTORS [--random-dim 384] [--out bench/results/FILE.md]

With --random-dim D the vectors are replaced by Gaussian ones of size D on the same vocabulary
(the cost depends on the size, not the values). One row per task and the total: wall seconds,
CPU seconds of this process and the load average. The probes run one BLAS thread, so on a busy
shared machine the CPU seconds are what an idle machine's wall time would be.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np
from machine import argv_line, cpu_name

from ctx2static.eval import evaluate, load_benchmarks
from ctx2static.eval.benchmarks import Family
from ctx2static.eval.downstream import Task
from ctx2static.fileio.atomic import atomic_write
from ctx2static.vectors import Vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("vectors")
    parser.add_argument("--random-dim", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    vectors = Vectors.load(args.vectors)
    if args.random_dim:
        matrix = np.random.default_rng(0).standard_normal((len(vectors), args.random_dim), dtype=np.float32)
        vectors = Vectors(vectors.words, matrix)
    lines = [
        "| task (read data + evaluate) | scores | wall s | CPU s | load average (1 min) before, after |",
        "|---|---|---:|---:|---|",
    ]
    print("\n".join(lines), flush=True)
    total_wall = total_cpu = 0.0
    for task in Task:
        load, wall, cpu = os.getloadavg()[0], time.perf_counter(), time.process_time()
        scores = evaluate(vectors, load_benchmarks((Family.DOWNSTREAM,), tasks=(task,)))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        total_wall += wall
        total_cpu += cpu
        cells = "; ".join(f"{s.benchmark} {s.cell()}" for s in scores)
        lines.append(
            f"| {task.value} | {cells} | {wall:.1f} | {cpu:.1f} | {load:.1f}, {os.getloadavg()[0]:.1f} |"
        )
        print(lines[-1], flush=True)
    lines.append(f"| **all** | | **{total_wall:.1f}** | **{total_cpu:.1f}** | |")
    print(lines[-1])
    if args.out:
        what = " (random values)" if args.random_dim else ""
        head = [
            "# Downstream family: time for one vectors file",
            "",
            f"Date: {date.today()}. Command: `PYTHONPATH=<pkg> python {argv_line(sys.argv)}`",
            "",
            f"Vectors: {args.vectors}{what}, {len(vectors):,} x {vectors.dim}. Machine: {cpu_name()}, "
            f"{os.cpu_count()} CPU cores, shared with other jobs (load averages below). The probes run one "
            "BLAS thread, so the CPU seconds are the busy time: an idle machine's wall time.",
            "",
        ]
        with atomic_write(args.out, "w", encoding="utf-8") as fh:
            fh.write("\n".join([*head, *lines, ""]))


if __name__ == "__main__":
    main()
