"""`evaluate`: run every benchmark (similarity, analogy, categorization) on one set of vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

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
from ctx2static.vectors import Vectors, require_finite

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
) -> list[Score]:
    """Scores of ``vectors`` on ``benchmarks`` (default: all bundled ones), plus the avg5 summary."""
    require_finite(vectors, "eval input", "load them with --nonfinite drop to leave those words out")
    analogy = analogy or AnalogyConfig()
    scores: list[Score] = []
    for bench in load_benchmarks() if benchmarks is None else benchmarks:
        if isinstance(bench, SimilaritySet):
            scores.append(evaluate_similarity(vectors, bench))
        elif isinstance(bench, AnalogySet):
            scores += evaluate_analogy(vectors, bench, analogy)
        elif isinstance(bench, CategorizationSet):
            scores.append(evaluate_categorization(vectors, bench))
    summary = avg5(scores)
    return scores if summary is None else [*scores, summary]


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
