"""`evaluate`: run every benchmark on one set of vectors, each as its family says (:mod:`.families`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from typing import Any

import numpy as np

from ctx2static.errors import UserError, spell
from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.benchmarks import Benchmark, load_benchmarks
from ctx2static.eval.families import AVG5_WORDS, FAMILIES, FamilySpec, family, family_of
from ctx2static.eval.results import MIN_ITEMS, Results, Score, summary, usable
from ctx2static.eval.sentences import mean_accuracy, mean_spearman
from ctx2static.vectors import Vectors
from ctx2static.vectors.table import require_finite

AVG5 = ("ws353", "simlex999", "men3k", "rw", "rg65")
"""The headline number: mean Spearman over these five similarity sets."""


def avg5(scores: Sequence[Score]) -> Score | None:
    """Mean of the AVG5 sets' Spearman (NaN if any is NaN); None unless all five were run."""
    by_name = {s.benchmark: s for s in scores if s.family == "similarity"}
    if not all(name in by_name for name in AVG5):
        return None
    return summary([by_name[name] for name in AVG5], "avg5", f"mean spearman ({', '.join(AVG5)})")


ItemMasks = Mapping[str, np.ndarray]
"""Benchmark name -> mask over its items (pairs, questions, items) that may be scored."""


def evaluate(
    vectors: Vectors,
    benchmarks: Sequence[Benchmark] | None = None,
    analogy: AnalogyConfig | None = None,
    only: ItemMasks | None = None,
    compose: bool = False,
) -> list[Score]:
    """Scores of ``vectors`` on ``benchmarks`` (default: all bundled ones), plus the families' means.

    The means: avg5, sentences-mean, and pairs-mean where two pair sets or more were scored.

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
        spec = family_of(bench)
        if spec.coverage is None:  # scores every token: on each file's own items only
            scores += spec.evaluate(vectors, bench, analogy, None) if only is None else []
            continue
        mask = None if only is None else only[bench.name]
        scores += spec.evaluate(vectors if spec.words is None else covered, bench, analogy, mask)
    means = (avg5(scores), mean_accuracy(scores), mean_spearman(scores))
    return [*scores, *(s for s in means if s is not None)]


def with_downstream(common: Sequence[Score], own: Sequence[Score]) -> list[Score]:
    """Scores on common items plus the rows of the families without a mask (downstream) on own items."""
    unmasked = {name for name, f in FAMILIES.items() if f.coverage is None}
    return [*common, *(s for s in own if s.family in unmasked)]


def coverage(vectors: Vectors, bench: Benchmark, analogy: AnalogyConfig) -> np.ndarray:
    """The mask of ``bench``'s items that ``vectors`` can score (an unmasked family's set: an error)."""
    spec = family_of(bench)
    if spec.coverage is None:
        raise TypeError(f"{bench.name}: the {spec.name} family scores every token; its sets have no mask")
    return spec.coverage(vectors, bench, analogy)


def common_items(
    vectors: Iterable[Vectors], benchmarks: Sequence[Benchmark], analogy: AnalogyConfig
) -> dict[str, np.ndarray]:
    """Per benchmark, the items that every one of ``vectors`` covers: a fair comparison's ground.

    Downstream tasks have no mask: their probes score every token, known or not.
    """
    masks: dict[str, np.ndarray] = {}
    masked = [b for b in benchmarks if family_of(b).coverage is not None]
    for v in vectors:
        for bench in masked:
            mask = coverage(v, bench, analogy)
            masks[bench.name] = mask if bench.name not in masks else masks[bench.name] & mask
    return masks


def composed(vectors: Vectors, benchmarks: Sequence[Benchmark]) -> Vectors:
    """``vectors`` plus composed vectors for the words it lacks of the families that compose (``words``)."""
    if vectors.composer is None:
        raise UserError(
            "these vectors have no composer for words outside the table; fit one with "
            f"'ctx2static compose VECTORS --cache DIR' or evaluate without {spell('compose', True)}"
        )
    return vectors.with_composed([w for b in benchmarks for w in _words(b)])


def _words(bench: Benchmark) -> list[str]:
    """The words of ``bench`` that --compose gives vectors (none for a family that does not compose)."""
    words = family_of(bench).words
    return [] if words is None else words(bench)


def _stated(families: Iterable[str | Enum], default: bool) -> list[FamilySpec]:
    """The default families (always stated under a table), or the others among ``families``."""
    asked = {family(f).name for f in families}
    return [f for f in FAMILIES.values() if f.default == default and (default or f.name in asked)]


def _find(scores: Sequence[Score], benchmark: str) -> Score | None:
    return next((s for s in scores if s.benchmark == benchmark), None)


def similarity_scores(results: Results) -> tuple[dict[str, Score], str, str]:
    """Each column's word-similarity number with the items it rests on, its name, and what it is.

    avg5 where every column has one; else (a set covered by too few items, on a small corpus) the
    mean of the avg5 sets every column scores usably, named ``avgN`` and said to be no avg5, since
    it does not compare with an avg5 elsewhere. Empty when no set is usable.
    """
    avg5 = {n: s for n, r in results.items() if usable(s := _find(r, "avg5"))}
    if avg5 and len(avg5) == len(results):
        return avg5, "avg5", AVG5_WORDS
    sets = [b for b in AVG5 if all(usable(_find(r, b)) for r in results.values())]
    if not sets:
        return {}, "", ""
    out = {}
    for name, found in results.items():
        picked = [s for s in found if s.benchmark in sets]
        mean = sum(s.score for s in picked) / len(picked)
        covered, total = sum(s.covered for s in picked), sum(s.total for s in picked)
        out[name] = Score(f"avg{len(sets)}", "summary", "mean spearman", mean, covered, total)
    return out, f"avg{len(sets)}", f"avg{len(sets)}: the mean Spearman of {', '.join(sets)}, not avg5"


def thin_sets(results: Results) -> list[str]:
    """``rg65 (6 items)`` for each avg5 set too thinly covered to score, in the first column's scores."""
    first = next(iter(results.values()), [])
    return [f"{s.benchmark} ({s.covered} items)" for b in AVG5 if (s := _find(first, b)) and s.thin]


def avg5_fallback(results: Results) -> list[str]:
    """Under a table whose avg5 is n/a for too few items: the line giving what can be compared instead."""
    scores, name, what = similarity_scores(results)
    thin = thin_sets(results)
    if name in ("", "avg5") or not thin:
        return []
    values = ", ".join(f"{n} {s.score:.1f}" for n, s in scores.items())
    thin_said = ", ".join(thin)
    return [f"avg5 n/a: {thin_said}, fewer than the {MIN_ITEMS} a score needs; instead {what}: {values}"]


def notes(analogy: AnalogyConfig, common: bool = False, families: Iterable[str | Enum] = ()) -> list[str]:
    """Lines stating the protocol under a results table.

    ``common``: scored on the items every column covers; ``families``: the families run (those not
    run by default state their protocol only when run).
    """
    cells = (
        "cells: score x100 on the items every column covers ('common': their share of all items), "
        "with the column's own coverage (items with all words found / all items)"
        if common
        else "cells: score x100 (coverage = items with all words found / all items)"
    )
    lines = [cells, *(line for f in _stated(families, True) for line in f.note(analogy))]
    lines.append(f"avg5: mean Spearman of {', '.join(AVG5)}")
    return lines + [line for f in _stated(families, False) for line in f.note(analogy)]


def config_dict(analogy: AnalogyConfig, families: Iterable[str | Enum] = ()) -> dict[str, Any]:
    """The protocol as data for the JSON output (``families``: the families run, as for :func:`notes`)."""
    families = list(families)
    out = {k: v for f in _stated(families, True) for k, v in f.protocol(analogy).items()}
    out |= {"avg5": list(AVG5), "score_scale": "x100"}
    return out | {k: v for f in _stated(families, False) for k, v in f.protocol(analogy).items()}
