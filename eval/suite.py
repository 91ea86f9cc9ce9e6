"""`evaluate`: run every benchmark (similarity, analogy, categorization, downstream) on one set of vectors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ctx2static.errors import UserError
from ctx2static.eval.analogy import AnalogyConfig, analogy_coverage, evaluate_analogy
from ctx2static.eval.benchmarks import (
    AnalogySet,
    Benchmark,
    CategorizationSet,
    SimilaritySet,
    load_benchmarks,
)
from ctx2static.eval.categorization import CLUSTERING, categorization_coverage, evaluate_categorization
from ctx2static.eval.downstream import DownstreamTask, ProbeConfig, evaluate_downstream
from ctx2static.eval.downstream.tasks import FAMILY, protocol
from ctx2static.eval.results import Score
from ctx2static.eval.similarity import evaluate_similarity, similarity_coverage
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


ItemMasks = Mapping[str, np.ndarray]
"""Benchmark name -> mask over its items (pairs, questions, items) that may be scored."""


def evaluate(
    vectors: Vectors,
    benchmarks: Sequence[Benchmark] | None = None,
    analogy: AnalogyConfig | None = None,
    only: ItemMasks | None = None,
    compose: bool = False,
) -> list[Score]:
    """Scores of ``vectors`` on ``benchmarks`` (default: all bundled ones), plus the avg5 summary.

    The protocol scores the items whose words the table holds. With ``only`` (e.g.
    :func:`common_items`), each benchmark is scored on the items of its mask that ``vectors``
    covers. Downstream tasks run only without ``only``: their probes score every token, known or
    not, so one run serves both tables (:func:`with_downstream`). With ``compose``, similarity and
    categorization items cover every word: a word the table lacks gets its composed vector
    (:meth:`Vectors.query`); analogy keeps the protocol (answers are searched among the table).
    """
    require_finite(vectors, "eval input", "load them with --nonfinite drop to leave those words out")
    analogy = analogy or AnalogyConfig()
    benchmarks = load_benchmarks() if benchmarks is None else benchmarks
    covered = composed(vectors, benchmarks) if compose else vectors
    scores: list[Score] = []
    for bench in benchmarks:
        if isinstance(bench, DownstreamTask):
            scores += evaluate_downstream(vectors, bench) if only is None else []
            continue
        mask = None if only is None else only[bench.name]
        if isinstance(bench, SimilaritySet):
            scores.append(evaluate_similarity(covered, bench, mask))
        elif isinstance(bench, AnalogySet):
            scores += evaluate_analogy(vectors, bench, analogy, mask)
        elif isinstance(bench, CategorizationSet):
            scores.append(evaluate_categorization(covered, bench, mask))
    summary = avg5(scores)
    return scores if summary is None else [*scores, summary]


def with_downstream(common: Sequence[Score], own: Sequence[Score]) -> list[Score]:
    """Scores on common items plus the downstream rows of the scores on own items (the same run)."""
    return [*common, *(s for s in own if s.family == FAMILY)]


def coverage(vectors: Vectors, bench: Benchmark, analogy: AnalogyConfig) -> np.ndarray:
    """The mask of ``bench``'s items that ``vectors`` can score."""
    if isinstance(bench, SimilaritySet):
        return similarity_coverage(vectors, bench)
    if isinstance(bench, AnalogySet):
        return analogy_coverage(vectors, bench, analogy)
    return categorization_coverage(vectors, bench)


def common_items(
    vectors: Iterable[Vectors], benchmarks: Sequence[Benchmark], analogy: AnalogyConfig
) -> dict[str, np.ndarray]:
    """Per benchmark, the items that every one of ``vectors`` covers: a fair comparison's ground.

    Downstream tasks have no mask: their probes score every token, known or not.
    """
    masks: dict[str, np.ndarray] = {}
    intrinsic = [b for b in benchmarks if not isinstance(b, DownstreamTask)]
    for v in vectors:
        for bench in intrinsic:
            mask = coverage(v, bench, analogy)
            masks[bench.name] = mask if bench.name not in masks else masks[bench.name] & mask
    return masks


def composed(vectors: Vectors, benchmarks: Sequence[Benchmark]) -> Vectors:
    """``vectors`` plus composed vectors for the similarity and categorization words it lacks."""
    if vectors.composer is None:
        raise UserError(
            "these vectors have no composer for words outside the table; fit one with "
            "'ctx2static compose VECTORS --cache DIR' or evaluate without --compose"
        )
    return vectors.covering([w for b in benchmarks for w in _words(b)])


def _words(bench: Benchmark) -> list[str]:
    """The words of a similarity or categorization set (multi-word items split), none of an analogy set."""
    if isinstance(bench, SimilaritySet):
        return [w for pair in bench.pairs for w in pair]
    if isinstance(bench, CategorizationSet):
        return [w for item in bench.items for w in item.split()]  # a phrase: the mean of its words
    return []


def notes(analogy: AnalogyConfig, common: bool = False, downstream: bool = False) -> list[str]:
    """Lines stating the protocol under a results table.

    ``common``: scored on the items every column covers; ``downstream``: the probes' protocol too.
    """
    cells = (
        "cells: score x100 on the items every column covers ('common': their share of all items), "
        "with the column's own coverage (items with all words found / all items)"
        if common
        else "cells: score x100 (coverage = items with all words found / all items)"
    )
    lines = [
        cells,
        f"analogy: search over the top N={analogy.top_n} most frequent words (all if fewer), "
        f"3CosMul eps={analogy.eps}; covered = all 4 words in the top N; question words excluded",
        f"categorization: purity of {CLUSTERING}; multi-word items = mean of their word vectors",
        f"avg5: mean Spearman of {', '.join(AVG5)}",
    ]
    return lines + protocol(ProbeConfig()) if downstream else lines


def config_dict(analogy: AnalogyConfig, downstream: bool = False) -> dict[str, Any]:
    """The protocol as data for the JSON output."""
    out = {
        "analogy_top_n": analogy.top_n,
        "analogy_eps": analogy.eps,
        "clustering": CLUSTERING,
        "avg5": list(AVG5),
        "score_scale": "x100",
    }
    return {**out, "downstream_probes": ProbeConfig().to_dict()} if downstream else out
