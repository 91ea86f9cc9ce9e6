"""Evaluation results: one :class:`Score` per row, side-by-side tables, JSON and Markdown output."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeGuard

import numpy as np

from ctx2static.fileio.atomic import atomic_write, write_json

MIN_ITEMS = 20
"""A score on fewer of its set's items than this is shown as ``n/a (N items)``: two word pairs give a
Spearman of +-100, which says nothing about the vectors. How reliable a score is depends on how many
items it has, not on their share of the set (200 of RW's 2,034 pairs is a real measurement; the
share each cell shows says how representative it is). A summary (avg5) over such a score is n/a."""

THIN_NOTE = (
    f"n/a (N items): fewer than {MIN_ITEMS} items of the set were covered, too few for a score that "
    "means anything; a larger corpus (or --compose) covers more words"
)


@dataclass(frozen=True)
class Score:
    """One result: ``score`` on a 0-100 scale over ``covered`` of ``total`` items (NaN if none).

    ``std`` is the standard deviation over folds or seeds when the score is their mean (the
    downstream family); None for single-run scores.
    """

    benchmark: str
    family: str
    metric: str
    score: float
    covered: int
    total: int
    std: float | None = None

    @property
    def coverage(self) -> float:
        """Fraction of the benchmark's items that were scored."""
        return self.covered / self.total if self.total else 0.0

    @property
    def thin(self) -> bool:
        """Scored on too few of its set's items to mean anything (``MIN_ITEMS``).

        A set scored whole is never thin, nor a set smaller than ``MIN_ITEMS`` (a user's own, whose
        few items are all there is).
        """
        return 0 < self.covered < self.total and self.total >= MIN_ITEMS and self.covered < MIN_ITEMS

    def cell(self, coverage: float | None = None) -> str:
        """Table cell, e.g. ``65.3 (98%)`` or ``65.3 ±0.4 (98%)``; coverage (this score's unless given)."""
        if self.thin:
            return f"n/a ({self.covered} items)"
        value = "n/a" if math.isnan(self.score) else f"{round(self.score, 1) + 0.0:.1f}"  # no "-0.0"
        spread = "" if self.std is None or math.isnan(self.score) else f" ±{self.std:.1f}"
        return f"{value}{spread} ({_percent(self.coverage if coverage is None else coverage)})"

    def to_json(self) -> dict[str, Any]:
        """Plain dict; NaN becomes null, a missing ``std`` is left out."""
        d = asdict(self)
        d["score"] = None if math.isnan(self.score) else self.score
        if self.std is None:
            del d["std"]
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Score:
        """The inverse of :meth:`to_json` (null becomes NaN)."""
        return cls(**{**d, "score": float("nan") if d["score"] is None else d["score"]})


def usable(score: Score | None) -> TypeGuard[Score]:
    """A score that may be compared: present, not thin, not NaN."""
    return score is not None and not score.thin and not math.isnan(score.score)


def summary(picked: Sequence[Score], benchmark: str, metric: str) -> Score:
    """One row that averages ``picked`` (NaN if any is NaN or thin), covering what they cover together."""
    mean = float("nan") if any(s.thin for s in picked) else float(np.mean([s.score for s in picked]))
    covered, total = sum(s.covered for s in picked), sum(s.total for s in picked)
    return Score(benchmark, "summary", metric, mean, covered, total)


def _percent(fraction: float) -> str:
    """A coverage as a percentage rounded down, so 100% means complete and 0% means none.

    Under 1% it keeps a decimal: a set of thousands scored on a few dozen items is not "0%".
    """
    if 0 < fraction < 0.01:
        return f"{math.floor(1000 * fraction) / 10:.1f}%" if fraction >= 0.001 else "<0.1%"
    return f"{math.floor(100 * fraction)}%"


Results = Mapping[str, Sequence[Score]]
"""Scores per vectors file (column name -> its scores)."""


def table(results: Results, own: Results | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows with one column per vectors file; rows in first-seen (benchmark, metric) order.

    With ``own`` (each file scored on the items it covers), ``results`` are the scores on the items
    every file covers: a "common" column gives that share of the items, and each cell its file's
    own coverage.
    """
    keys: dict[tuple[str, str], None] = {}
    for scores in results.values():
        keys.update(((s.benchmark, s.metric), None) for s in scores)
    by_key = {name: {(s.benchmark, s.metric): s for s in scores} for name, scores in results.items()}
    own_by_key = {name: {(s.benchmark, s.metric): s for s in scores} for name, scores in (own or {}).items()}
    header = ["benchmark", "metric", *(["common"] if own is not None else []), *results]
    rows = []
    for key in keys:
        cells = []
        for name in results:
            score, mine = by_key[name].get(key), own_by_key.get(name, {}).get(key)
            cells.append("-" if score is None else score.cell(None if mine is None else mine.coverage))
        common = [] if own is None else [next(_percent(s[key].coverage) for s in by_key.values() if key in s)]
        rows.append([*key, *common, *cells])
    return header, rows


def _with_thin(results: Results, notes: Sequence[str]) -> list[str]:
    """``notes``, plus the line that explains the n/a cells when a table has any."""
    thin = any(s.thin for scores in results.values() for s in scores)
    return [*notes, *([THIN_NOTE] if thin else [])]


def format_text(results: Results, notes: Sequence[str] = (), own: Results | None = None) -> str:
    """Aligned plain-text table followed by the notes (``own``: see :func:`table`)."""
    header, rows = table(results, own)
    notes = _with_thin(results, notes)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        cells = (c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        return "  ".join(cells).rstrip()

    out = [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]
    return "\n".join([*out, "", *notes]).rstrip() + "\n"


def format_markdown(results: Results, notes: Sequence[str] = (), own: Results | None = None) -> str:
    """GitHub Markdown table followed by the notes as a list (``own``: see :func:`table`)."""
    header, rows = table(results, own)
    notes = _with_thin(results, notes)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * 2 + "---:|" * (len(header) - 2)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    if notes:
        out += ["", *(f"- {n}" for n in notes)]
    return "\n".join(out) + "\n"


def write_markdown(
    path: str | os.PathLike, results: Results, notes: Sequence[str] = (), own: Results | None = None
) -> None:
    """Write :func:`format_markdown` atomically."""
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write(format_markdown(results, notes, own))


def write_results_json(path: str | os.PathLike, results: Results, config: Mapping[str, Any]) -> None:
    """Write ``{"config": ..., "results": {vectors: [score, ...]}}`` atomically."""
    write_json(
        path, {"config": dict(config), "results": {k: [s.to_json() for s in v] for k, v in results.items()}}
    )
