"""avg5 of vectors files after all-but-the-top with D = 0 (mean-centring only), 1, 2, ... directions.

    python bench/probes/abtt_sweep.py runs/students/x2static.bin runs/full/sgns.bin --d 0 1 2 3 5 8

Prints one line per file: avg5 without post-processing, then after each D (students/postprocess.py).
"""

from __future__ import annotations

import argparse

from ctx2static.eval import evaluate, load_benchmarks
from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.benchmarks import Family
from ctx2static.eval.suite import avg5
from ctx2static.students.postprocess import all_but_the_top
from ctx2static.vectors import Vectors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("vectors", nargs="+")
    ap.add_argument("--d", nargs="+", type=int, default=[0, 1, 2, 3, 5, 8])
    args = ap.parse_args()
    benchmarks = load_benchmarks((Family.SIMILARITY,), {}, bundled=True)
    for path in args.vectors:
        v = Vectors.load(path)
        cells = [f"raw {avg5(evaluate(v, benchmarks, AnalogyConfig())).score:.1f}"]
        for d in args.d:
            post = Vectors(v.words, all_but_the_top(v.matrix, d), v.counts, {})
            cells.append(f"D={d} {avg5(evaluate(post, benchmarks, AnalogyConfig())).score:.1f}")
        print(path, " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
