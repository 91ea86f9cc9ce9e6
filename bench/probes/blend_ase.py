"""A student blended with ase: does the mix beat both? (students_vs_ase_brown.md).

    python bench/probes/blend_ase.py --ase ASE --student STUDENT [--weights 0 0.25 0.5 0.75 1] [--out F]

Both vectors files come from one cache (same width; the words both hold are kept). Each row is
the unit-normalised mix ``w * unit(ase) + (1 - w) * unit(student)`` (w = 0: the student, w = 1:
ase), scored on the bundled similarity sets, avg5 and Google/MSR analogy (3CosAdd).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ctx2static.eval import evaluate, load_benchmarks
from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.benchmarks import Family
from ctx2static.vectors import Vectors

COLUMNS = ("ws353", "simlex999", "men3k", "rw", "rg65", "mturk287", "avg5", "google", "msr")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ase", type=Path, required=True)
    ap.add_argument("--student", type=Path, required=True)
    ap.add_argument("--weights", type=float, nargs="+", default=[0.0, 0.25, 0.5, 0.75, 1.0])
    ap.add_argument("--out", type=Path, help="Also append the table to this file.")
    args = ap.parse_args()
    ase, student = Vectors.load(args.ase), Vectors.load(args.student)
    if ase.dim != student.dim:
        raise SystemExit(f"{args.ase} and {args.student}: not the same width")
    words = [w for w in student.words if w in ase.index]  # ase leaves out words never seen whole
    a = ase.unit()[[ase.index[w] for w in words]]
    b = student.unit()[[student.index[w] for w in words]]
    benchmarks = load_benchmarks((Family.SIMILARITY, Family.ANALOGY))
    lines = [
        f"ase = {args.ase}, student = {args.student}",
        "",
        "| weight of ase | " + " | ".join(COLUMNS) + " |",
        "|---:|" + "---:|" * len(COLUMNS),
    ]
    for w in args.weights:
        v = Vectors(words, (w * a + (1 - w) * b).astype(np.float32), None, {})
        results = evaluate(v, benchmarks, AnalogyConfig())
        scores = {s.benchmark: s.score for s in results if s.metric != "3CosMul acc"}
        lines.append(f"| {w:g} | " + " | ".join(f"{scores[c]:.1f}" for c in COLUMNS) + " |")
        print(lines[-1], flush=True)
    if args.out is not None:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
