"""Word similarity: Spearman rank correlation between cosine and human scores, on covered pairs.

Files: ``word1<TAB>word2<TAB>score`` per line (whitespace-separated also accepted).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ctx2static.errors import UserError
from ctx2static.eval.reading import lines
from ctx2static.eval.results import Score
from ctx2static.vectors import Vectors


@dataclass(frozen=True)
class SimilaritySet:
    """Word pairs with gold similarity scores."""

    name: str
    pairs: list[tuple[str, str]]
    gold: np.ndarray


def read_similarity(path: str | os.PathLike) -> SimilaritySet:
    """Read ``word1 word2 score`` lines (tab- or whitespace-separated)."""
    path = Path(path)
    pairs, gold = [], []
    for n, line in lines(path):
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) != 3:
            raise UserError(f"{path}: line {n} has {len(parts)} fields; expected 'word1<TAB>word2<TAB>score'")
        try:
            score = float(parts[2])
        except ValueError:
            raise UserError(f"{path}: line {n}: score {parts[2]!r} is not a number") from None
        if not np.isfinite(score):
            raise UserError(f"{path}: line {n}: score {parts[2]!r} is not finite; fix or drop the line")
        gold.append(score)
        pairs.append((parts[0].strip(), parts[1].strip()))
    if not pairs:
        raise UserError(f"{path}: no word pairs found")
    return SimilaritySet(path.stem, pairs, np.array(gold, dtype=np.float64))


def rank_average(x: np.ndarray) -> np.ndarray:
    """1-based ranks of ``x``; tied values share the mean of their ranks (scipy's ``rankdata``)."""
    x = np.asarray(x)
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    ends = np.r_[starts[1:], len(x)]
    group = np.repeat(np.arange(len(starts)), ends - starts)
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = ((starts + 1 + ends) / 2.0)[group]
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho: Pearson correlation of the average ranks; NaN for < 2 items or constant input."""
    if len(x) != len(y):
        raise ValueError(f"spearman needs equal lengths, got {len(x)} and {len(y)}")
    if len(x) < 2:
        return float("nan")
    rx = rank_average(x)
    ry = rank_average(y)
    rx -= rx.mean()
    ry -= ry.mean()
    denom = np.sqrt(rx @ rx) * np.sqrt(ry @ ry)
    return float(rx @ ry / denom) if denom > 0 else float("nan")


def pair_cosines(vectors: Vectors, pairs: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
    """Cosines (float64) of the pairs whose two words ``Vectors.row_of`` finds, and the covered mask."""
    rows = [(vectors.row_of(a), vectors.row_of(b)) for a, b in pairs]
    covered = np.array([i is not None and j is not None for i, j in rows], dtype=bool)
    idx = np.array([r for r, ok in zip(rows, covered, strict=True) if ok], dtype=np.int64).reshape(-1, 2)
    a = np.asarray(vectors.matrix[idx[:, 0]], dtype=np.float64)
    b = np.asarray(vectors.matrix[idx[:, 1]], dtype=np.float64)
    norms = np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-24)
    return np.einsum("ij,ij->i", a, b) / norms, covered


def similarity_coverage(vectors: Vectors, bench: SimilaritySet) -> np.ndarray:
    """Which pairs ``vectors`` holds both words of."""
    return np.array([vectors.row_of(a) is not None and vectors.row_of(b) is not None for a, b in bench.pairs])


def evaluate_similarity(vectors: Vectors, bench: SimilaritySet, only: np.ndarray | None = None) -> Score:
    """Spearman rho x 100 between cosine and gold scores on the covered pairs, with coverage.

    ``only`` (a mask over the pairs) restricts the scored pairs further, e.g. to those every
    compared output covers.
    """
    pairs = bench.pairs if only is None else [p for p, keep in zip(bench.pairs, only, strict=True) if keep]
    gold = bench.gold if only is None else bench.gold[only]
    cos, covered = pair_cosines(vectors, pairs)
    rho = spearman(cos, gold[covered])
    return Score(bench.name, "similarity", "spearman", 100.0 * rho, int(covered.sum()), len(bench.pairs))
