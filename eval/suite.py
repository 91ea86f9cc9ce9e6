"""`evaluate`: run every benchmark (similarity, analogy, categorization) on one set of vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ctx2static.errors import UserError
from ctx2static.eval.analogy import AnalogyConfig, evaluate_analogy
from ctx2static.eval.benchmarks import (
    AnalogySet,
    Benchmark,
    CategorizationSet,
    SimilaritySet,
    load_benchmarks,
)
from ctx2static.eval.categorization import CLUSTERING, evaluate_categorization
from ctx2static.eval.results import Score
from ctx2static.eval.similarity import evaluate_similarity
from ctx2static.vectors import Vectors

AVG5 = ("ws353", "simlex999", "men3k", "rw", "rg65")
"""The headline number: mean Spearman over these five similarity sets."""


def avg5(scores: Sequence[Score]) -> Score | None:
    """Mean of the AVG5 sets' Spearman (NaN if any is NaN); None unless all five were run."""
    by_name = {s.benchmark: s for s in scores if s.family == "similarity"}
    if not all(name in by_name for name in AVG5):
        return None
    picked = [by_name[name] for name in AVG5]
    mean = float(np.mean([s.score for s in picked]))
    metric = f"mean spearman ({', '.join(AVG5)})"
    covered, total = sum(s.covered for s in picked), sum(s.total for s in picked)
    return Score("avg5", "summary", metric, mean, covered, total)


def evaluate(
    vectors: Vectors,
    benchmarks: Sequence[Benchmark] | None = None,
    analogy: AnalogyConfig | None = None,
    compose: bool = False,
) -> list[Score]:
    """Scores of ``vectors`` on ``benchmarks`` (default: all bundled ones), plus the avg5 summary.

    The protocol scores the items whose words the table holds. With ``compose``, similarity and
    categorization items cover every word: a word the table lacks gets its composed vector
    (:meth:`Vectors.query`); analogy keeps the protocol (answers are searched among the table).
    """
    analogy = analogy or AnalogyConfig()
    benchmarks = load_benchmarks() if benchmarks is None else benchmarks
    covered = vectors
    if compose:
        if vectors.composer is None:
            raise UserError(
                "these vectors have no composer for words outside the table; fit one with "
                "'ctx2static compose VECTORS --cache DIR' or evaluate without --compose"
            )
        covered = vectors.covering([w for b in benchmarks for w in _words(b)])
    scores: list[Score] = []
    for bench in benchmarks:
        if isinstance(bench, SimilaritySet):
            scores.append(evaluate_similarity(covered, bench))
        elif isinstance(bench, AnalogySet):
            scores += evaluate_analogy(vectors, bench, analogy)
        elif isinstance(bench, CategorizationSet):
            scores.append(evaluate_categorization(covered, bench))
    summary = avg5(scores)
    return scores if summary is None else [*scores, summary]


def _words(bench: Benchmark) -> list[str]:
    """The words of a similarity or categorization set (multi-word items split), none of an analogy set."""
    if isinstance(bench, SimilaritySet):
        return [w for pair in bench.pairs for w in pair]
    if isinstance(bench, CategorizationSet):
        return [w for item in bench.items for w in item.split()]  # a phrase: the mean of its words
    return []


def notes(analogy: AnalogyConfig) -> list[str]:
    """Lines stating the protocol under a results table."""
    return [
        "cells: score x100 (coverage = items with all words found / all items)",
        f"analogy: search over the top N={analogy.top_n} most frequent words (all if fewer), "
        f"3CosMul eps={analogy.eps}; covered = all 4 words in the top N; question words excluded",
        f"categorization: purity of {CLUSTERING}; multi-word items = mean of their word vectors",
        f"avg5: mean Spearman of {', '.join(AVG5)}",
    ]


def config_dict(analogy: AnalogyConfig) -> dict[str, Any]:
    """The protocol as data for the JSON output."""
    return {
        "analogy_top_n": analogy.top_n,
        "analogy_eps": analogy.eps,
        "clustering": CLUSTERING,
        "avg5": list(AVG5),
        "score_scale": "x100",
    }
