"""Similarity of GloVe vectors files: Spearman x100 of cosine over covered pairs (lower-cased lookups).

Usage: PYTHONPATH=... python bench/bench_glove.py VECTORS [VECTORS ...]
Stand-in until the eval suite lands; the fit commands are in bench/results/glove.md.
"""

import sys

import numpy as np
from scipy.stats import spearmanr

from ctx2static.resources import BENCHMARK_DIR
from ctx2static.vectors import Vectors

SETS = ["ws353", "simlex999", "men3k", "rw", "rg65"]


def similarity(vectors: Vectors, name: str) -> tuple[float, int, int]:
    unit = vectors.unit()
    gold, pred, total = [], [], 0
    for line in (BENCHMARK_DIR / "similarity" / f"{name}.txt").read_text(encoding="utf-8").splitlines():
        a, b, score = line.split("\t")
        total += 1
        i, j = vectors.index.get(a.lower()), vectors.index.get(b.lower())
        if i is not None and j is not None:
            gold.append(float(score))
            pred.append(float(unit[i] @ unit[j]))
    rho = spearmanr(gold, pred).statistic if len(gold) > 1 else float("nan")
    return 100 * rho, len(gold), total


def main(paths: list[str]) -> None:
    print("| vectors | " + " | ".join(SETS) + " | avg |")
    print("|---" * (len(SETS) + 2) + "|")
    for path in paths:
        vectors = Vectors.load(path)
        cells, rhos = [], []
        for name in SETS:
            rho, covered, total = similarity(vectors, name)
            rhos.append(rho)
            cells.append(f"{rho:.1f} ({covered}/{total})")
        print(f"| {path} | " + " | ".join(cells) + f" | {np.nanmean(rhos):.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
