"""Word similarity: Spearman rank correlation between cosine and human scores, on covered pairs.

Files: ``word1<TAB>word2<TAB>score`` per line (whitespace-separated also accepted).
"""

from __future__ import annotations

import math
import os
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress
from pathlib import Path

import numpy as np

from ctx2static.errors import InputError
from ctx2static.eval.reading import lines
from ctx2static.eval.results import Score
from ctx2static.vectors import Vectors

PAIR_BYTES = 8 << 20
"""What the rows of the pairs whose cosines are computed at once may take: each pair holds two rows
as stored and two in float64, so 300-dim float32 rows go 1,165 pairs at a time."""


@dataclass(frozen=True)
class SimilaritySet:
    """Word pairs with gold similarity scores."""

    name: str
    pairs: list[tuple[str, str]]
    gold: np.ndarray


def read_similarity(path: str | os.PathLike) -> SimilaritySet:
    """Read ``word1 word2 score`` lines (tab- or whitespace-separated), streamed.

    A word is one string however many pairs hold it (the pairs of a large file repeat their
    words), and the scores go to an array as they come.
    """
    path = Path(path)
    pairs: list[tuple[str, str]] = []
    gold = array("d")
    seen: dict[str, str] = {}
    for n, line in lines(path):
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) != 3:
            raise InputError(
                path, f"{path}: line {n} has {len(parts)} fields; expected 'word1<TAB>word2<TAB>score'"
            )
        try:
            score = float(parts[2])
        except ValueError:
            raise InputError(path, f"{path}: line {n}: score {parts[2]!r} is not a number") from None
        if not math.isfinite(score):
            raise InputError(
                path, f"{path}: line {n}: score {parts[2]!r} is not finite; fix or drop the line"
            )
        gold.append(score)
        a, b = parts[0].strip(), parts[1].strip()
        pairs.append((seen.setdefault(a, a), seen.setdefault(b, b)))
    if not pairs:
        raise InputError(path, f"{path}: no word pairs found")
    return SimilaritySet(path.stem, pairs, np.frombuffer(gold, dtype=np.float64))


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


def pair_rows(vectors: Vectors, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    """``(len(pairs), 2)`` int64: each word's row as ``Vectors.row_of`` finds it, -1 where absent."""
    found = (vectors.row_of(w) for pair in pairs for w in pair)
    return np.fromiter((-1 if r is None else r for r in found), np.int64, 2 * len(pairs)).reshape(-1, 2)


def pair_cosines(vectors: Vectors, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
    """Cosines (float64) of the pairs whose two words ``Vectors.row_of`` finds, and the covered mask.

    Computed a few pairs at a time (:data:`PAIR_BYTES`): the float64 rows of every pair at once
    took 2 x pairs x dim x 8 bytes (1 GB for 200,000 pairs of 300-dim vectors).
    """
    rows = pair_rows(vectors, pairs)
    covered = np.all(rows >= 0, axis=1)
    idx = rows[covered]
    cos = np.empty(len(idx), dtype=np.float64)
    row_bytes = vectors.matrix.shape[1] * (vectors.matrix.itemsize + 8)
    chunk = max(1, PAIR_BYTES // (2 * row_bytes))
    for s in range(0, len(idx), chunk):
        a = np.asarray(vectors.matrix[idx[s : s + chunk, 0]], dtype=np.float64)
        b = np.asarray(vectors.matrix[idx[s : s + chunk, 1]], dtype=np.float64)
        norms = np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-24)
        cos[s : s + chunk] = np.einsum("ij,ij->i", a, b) / norms
    return cos, covered


def similarity_coverage(vectors: Vectors, bench: SimilaritySet) -> np.ndarray:
    """Which pairs ``vectors`` holds both words of."""
    return np.all(pair_rows(vectors, bench.pairs) >= 0, axis=1)


def evaluate_similarity(vectors: Vectors, bench: SimilaritySet, only: np.ndarray | None = None) -> Score:
    """Spearman rho x 100 between cosine and gold scores on the covered pairs, with coverage.

    ``only`` (a mask over the pairs) restricts the scored pairs further, e.g. to those every
    compared output covers.
    """
    pairs = bench.pairs if only is None else list(compress(bench.pairs, only))
    gold = bench.gold if only is None else bench.gold[only]
    cos, covered = pair_cosines(vectors, pairs)
    rho = spearman(cos, gold[covered])
    return Score(bench.name, "similarity", "spearman", 100.0 * rho, int(covered.sum()), len(bench.pairs))
