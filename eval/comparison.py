"""Several vectors side by side: each scored on its own items, then on the items all of them cover.

Scores on different items do not compare (a table that lacks the rare words of a set scores
higher on the rest), so the fair table scores every output on the common ground, and the own
scores stand beside it. The command line's ``eval`` of several files and a study's report share
this one comparison; each brings its own way to score (a study reads back scores it saved).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.benchmarks import Benchmark
from ctx2static.eval.results import Score
from ctx2static.eval.suite import common_items, composed, evaluate, with_downstream
from ctx2static.vectors import Vectors

log = logging.getLogger(__name__)

Scorer = Callable[[str, Mapping[str, np.ndarray] | None], list[Score]]
"""Scores of the output named, on every item it covers (None) or on the items of each mask."""


@dataclass(frozen=True)
class Comparison:
    """Per output: its scores on the common items (downstream rows on its own) and on its own items."""

    common: dict[str, list[Score]]
    own: dict[str, list[Score]]


def compare(
    names: Sequence[str],
    score: Scorer,
    ground: Callable[[str], Vectors],
    benchmarks: Sequence[Benchmark],
    analogy: AnalogyConfig,
) -> Comparison:
    """Score every output of ``names`` on its own items, then on the items every ``ground(name)`` covers.

    ``ground`` gives the vectors whose coverage counts (with ``--compose``: the table plus its
    composed words); downstream families have no mask and keep their own scores.
    """
    own = {name: score(name, None) for name in names}
    masks = common_items(_each(names, ground), benchmarks, analogy)
    common = {name: with_downstream(score(name, masks), own[name]) for name in names}
    return Comparison(common, own)


def _each(names: Sequence[str], ground: Callable[[str], Vectors]) -> Iterable[Vectors]:
    """The ground of each output in turn (one loaded at a time: a study's outputs are many)."""
    return (ground(name) for name in names)


def compare_tables(
    tables: Mapping[str, Vectors],
    benchmarks: Sequence[Benchmark],
    analogy: AnalogyConfig,
    common: bool,
    compose: bool = False,
) -> Comparison:
    """Tables loaded side by side (the ``eval`` command), on the common items unless ``common`` is False.

    Without ``common`` both sides of the result hold the own scores. With ``compose`` words outside
    a table get composed vectors, and count as covered.
    """

    def score(name: str, only: Mapping[str, np.ndarray] | None) -> list[Score]:
        start, vectors = time.perf_counter(), tables[name]
        scores = evaluate(vectors, benchmarks, analogy, only, compose)
        if only is None:
            seconds = time.perf_counter() - start
            log.info("%s: %d words x %d, evaluated in %.1f s", name, len(vectors), vectors.dim, seconds)
        return scores

    if not common:
        own = {name: score(name, None) for name in tables}
        return Comparison(own, own)

    def ground(name: str) -> Vectors:
        return composed(tables[name], benchmarks) if compose else tables[name]

    return compare(list(tables), score, ground, benchmarks, analogy)
