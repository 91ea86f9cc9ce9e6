"""Concept categorization: Ward agglomerative clustering with k = number of gold classes; purity.

Files: a CSV whose header names the columns ``category`` and ``word``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ctx2static.errors import InputError
from ctx2static.eval.reading import csv_rows
from ctx2static.eval.results import Score
from ctx2static.vectors import Vectors

CLUSTERING = "Ward agglomerative clustering (scipy) on L2-normalised vectors, k = gold classes"


@dataclass(frozen=True)
class CategorizationSet:
    """Items (words or multi-word phrases) with their gold class labels."""

    name: str
    items: list[str]
    labels: list[str]


def read_categorization(path: str | os.PathLike) -> CategorizationSet:
    """Read a CSV with ``category`` and ``word`` columns (items may be multi-word phrases).

    Rows with an empty word are skipped (the bundled AP copy has one per category: 402 items remain).
    """
    path = Path(path)
    items: list[str] = []
    labels: list[str] = []
    seen: dict[str, str] = {}  # one string per category, however many items it has
    for _, (category, word) in csv_rows(path, ("category", "word"), may_be_empty=("word",)):
        if word:
            items.append(word)
            labels.append(seen.setdefault(category, category))
    if not items:
        raise InputError(path, f"{path}: no items found below the header")
    return CategorizationSet(path.stem, items, labels)


def purity(gold: Sequence[str], clusters: Sequence[int]) -> float:
    """Purity = (1/n) sum_clusters max_class |cluster ∩ class| (Baroni et al. 2014's categorization)."""
    if len(gold) != len(clusters):
        raise ValueError(f"purity needs equal lengths, got {len(gold)} and {len(clusters)}")
    by_cluster: dict[int, Counter[str]] = {}
    for g, c in zip(gold, clusters, strict=True):
        by_cluster.setdefault(c, Counter())[g] += 1
    return sum(max(cnt.values()) for cnt in by_cluster.values()) / len(gold) if gold else float("nan")


def ward_clusters(x: np.ndarray, k: int) -> np.ndarray:
    """Cluster ids (1..k) of the rows of ``x`` by Ward linkage on L2-normalised rows (deterministic)."""
    from scipy.cluster.hierarchy import fcluster, linkage

    if len(x) < 2:
        return np.ones(len(x), dtype=np.int64)
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    return fcluster(linkage(unit.astype(np.float64), method="ward"), t=k, criterion="maxclust")


def item_vector(vectors: Vectors, item: str) -> np.ndarray | None:
    """Vector of a word, or the mean of a phrase's word vectors when all are found; else None."""
    i = vectors.row_of(item)
    if i is not None:
        return np.asarray(vectors.matrix[i], dtype=np.float64)
    words = item.split()
    rows = [r for r in map(vectors.row_of, words) if r is not None]
    if len(words) < 2 or len(rows) < len(words):
        return None
    return np.asarray(vectors.matrix[rows], dtype=np.float64).mean(axis=0)


def categorization_coverage(vectors: Vectors, bench: CategorizationSet) -> np.ndarray:
    """Which items ``vectors`` gives a vector (a word, or a phrase whose words it all holds)."""
    return np.array([item_vector(vectors, w) is not None for w in bench.items])


def evaluate_categorization(
    vectors: Vectors, bench: CategorizationSet, only: np.ndarray | None = None
) -> Score:
    """Purity x 100 of Ward clusters of the covered items, k = number of gold classes among them.

    ``only`` (a mask over the items) restricts the clustered items further.
    """
    keep = np.ones(len(bench.items), dtype=bool) if only is None else only
    found = [
        (item_vector(vectors, w), g) for w, g, k in zip(bench.items, bench.labels, keep, strict=True) if k
    ]
    scored = [(v, g) for v, g in found if v is not None]
    gold = [g for _, g in scored]
    score = float("nan")
    if gold:
        clusters = ward_clusters(np.stack([v for v, _ in scored]), len(set(gold)))
        score = 100.0 * purity(gold, clusters.tolist())
    return Score(bench.name, "categorization", "purity (Ward)", score, len(gold), len(bench.items))
