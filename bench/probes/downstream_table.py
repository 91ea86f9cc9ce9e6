"""Downstream scores beside avg5 for several vectors files (the table of downstream_full.md).

    python bench/probes/downstream_table.py NAME=VECTORS [NAME=VECTORS ...] [--json scores.json] > table.md

Evaluates every file on the similarity family (for avg5) and the whole downstream family with
the fixed probes, then prints one Markdown table (a column per file) and, with three files or
more, Kendall's tau between each downstream row and avg5 over the files: does the intrinsic
ranking hold downstream? Scores are x100, downstream cells mean ±std over folds (coverage).
"""

from __future__ import annotations

import argparse
import json
import os
import time

from scipy.stats import kendalltau

from ctx2static.eval import evaluate, load_benchmarks
from ctx2static.eval.benchmarks import Family
from ctx2static.eval.downstream.probes import ProbeConfig
from ctx2static.eval.downstream.tasks import protocol
from ctx2static.vectors import Vectors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vectors", nargs="+", help="NAME=PATH")
    parser.add_argument("--json", help="also write every score here")
    args = parser.parse_args()
    files = dict(item.split("=", 1) for item in args.vectors)
    benches = load_benchmarks((Family.SIMILARITY, Family.DOWNSTREAM))
    scores, shapes, seconds = {}, {}, {}
    for name, path in files.items():
        v = Vectors.load(path)
        start = time.process_time()
        scores[name] = evaluate(v, benches)
        seconds[name] = time.process_time() - start
        shapes[name] = f"{len(v):,} x {v.dim}"
    first = scores[next(iter(files))]
    rows = [(s.benchmark, s.metric) for s in first if s.benchmark == "avg5"]
    rows += [(s.benchmark, s.metric) for s in first if s.family == "downstream"]
    cells = {n: {(s.benchmark, s.metric): s for s in ss} for n, ss in scores.items()}
    print(f"load average {os.getloadavg()[0]:.1f}; " + "; ".join(f"{n}: {shapes[n]}" for n in files) + "\n")
    print(
        "| benchmark | metric | "
        + " | ".join(files)
        + (" | Kendall tau with avg5 |" if len(files) > 2 else " |")
    )
    print("|---|---|" + "---:|" * (len(files) + (len(files) > 2)))
    for key in rows:
        line = [cells[n][key].cell() if key in cells[n] else "-" for n in files]
        if len(files) > 2 and key[0] != "avg5":
            tau = kendalltau([cells[n][key].score for n in files], [cells[n][rows[0]].score for n in files])
            line.append(f"{tau.statistic:+.2f}")
        elif len(files) > 2:
            line.append("")
        print(f"| {key[0]} | {key[1]} | " + " | ".join(line) + " |")
    print(
        "\nCPU seconds of evaluation (similarity + downstream): "
        + ", ".join(f"{n} {seconds[n]:.0f}" for n in files)
    )
    print("\n" + "\n".join(f"- {line}" for line in protocol(ProbeConfig())))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({n: [s.to_json() for s in ss] for n, ss in scores.items()}, fh, indent=1)


if __name__ == "__main__":
    main()
