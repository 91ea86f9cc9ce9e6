"""avg5 of a teacher's word-alone vectors read from each hidden layer: which `extract --layer` to use.

Each word of the five avg5 sets is encoded alone (as the cache's ``word`` table) and its subwords'
vectors at layer L are averaged; avg5 is computed per layer on those words.

    python bench/probes/layer_sweep.py --teacher smollm2 --layers 2 4 6 8 10 12 15 20 25 30 -1
"""

from __future__ import annotations

import argparse

import numpy as np

from ctx2static.eval import evaluate, load_benchmarks
from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.benchmarks import Family
from ctx2static.eval.suite import AVG5, avg5
from ctx2static.pipeline.batching import run_sorted
from ctx2static.pipeline.config import parse_layers
from ctx2static.pipeline.teacher import Request, Teacher
from ctx2static.vectors import Vectors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teacher", default="smollm2")
    ap.add_argument("--layers", nargs="+", default=["-1"], help="layer specs: -1, 3, 2,3,4 or -4:")
    args = ap.parse_args()
    benchmarks = [b for b in load_benchmarks((Family.SIMILARITY,), {}, bundled=True) if b.name in AVG5]
    words = sorted({w.lower() for b in benchmarks for pair in b.pairs for w in pair})
    teacher = Teacher.load(args.teacher)
    encs = teacher.encode([[w] for w in words])
    print(f"{args.teacher}: {len(words)} words of the avg5 sets", flush=True)
    for layer in args.layers:
        teacher.layers = parse_layers(layer, teacher.n_hidden)
        outs = run_sorted(encs, 4096, lambda b: teacher.forward(b, Request(vectors=True)))
        matrix = np.stack([o.vectors[0] for o in outs])
        v = Vectors(words, matrix, np.ones(len(words), np.int64), {})
        print(f"layer {layer}: avg5 {avg5(evaluate(v, benchmarks, AnalogyConfig())).score:.1f}", flush=True)


if __name__ == "__main__":
    main()
