"""Evaluation results: one :class:`Score` per row, side-by-side tables, JSON and Markdown output."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ctx2static.fileio import atomic_write, write_json


@dataclass(frozen=True)
class Score:
    """One result: ``score`` on a 0-100 scale over ``covered`` of ``total`` items (NaN if none)."""

    benchmark: str
    family: str
    metric: str
    score: float
    covered: int
    total: int

    @property
    def coverage(self) -> float:
        """Fraction of the benchmark's items that were scored."""
        return self.covered / self.total if self.total else 0.0

    def cell(self) -> str:
        """Table cell, e.g. ``65.3 (98%)``; coverage is rounded down, so 100% means complete."""
        value = "n/a" if math.isnan(self.score) else f"{round(self.score, 1) + 0.0:.1f}"  # no "-0.0"
        return f"{value} ({math.floor(100 * self.coverage)}%)"

    def to_json(self) -> dict[str, Any]:
        """Plain dict; NaN becomes null."""
        d = asdict(self)
        d["score"] = None if math.isnan(self.score) else self.score
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Score:
        """The inverse of :meth:`to_json` (null becomes NaN)."""
        return cls(**{**d, "score": float("nan") if d["score"] is None else d["score"]})


Results = Mapping[str, Sequence[Score]]
"""Scores per vectors file (column name -> its scores)."""


def table(results: Results) -> tuple[list[str], list[list[str]]]:
    """Header and rows with one column per vectors file; rows in first-seen (benchmark, metric) order."""
    keys: dict[tuple[str, str], None] = {}
    for scores in results.values():
        keys.update(((s.benchmark, s.metric), None) for s in scores)
    cells = {name: {(s.benchmark, s.metric): s.cell() for s in scores} for name, scores in results.items()}
    header = ["benchmark", "metric", *results]
    rows = [[b, m, *(cells[name].get((b, m), "-") for name in results)] for b, m in keys]
    return header, rows


def format_text(results: Results, notes: Sequence[str] = ()) -> str:
    """Aligned plain-text table followed by the notes."""
    header, rows = table(results)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r: list[str]) -> str:
        cells = (c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        return "  ".join(cells).rstrip()

    out = [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]
    return "\n".join([*out, "", *notes]).rstrip() + "\n"


def format_markdown(results: Results, notes: Sequence[str] = ()) -> str:
    """GitHub Markdown table followed by the notes as a list."""
    header, rows = table(results)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * 2 + "---:|" * (len(header) - 2)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    if notes:
        out += ["", *(f"- {n}" for n in notes)]
    return "\n".join(out) + "\n"


def write_markdown(path: str | os.PathLike, results: Results, notes: Sequence[str] = ()) -> None:
    """Write :func:`format_markdown` atomically."""
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write(format_markdown(results, notes))


def write_results_json(path: str | os.PathLike, results: Results, config: Mapping[str, Any]) -> None:
    """Write ``{"config": ..., "results": {vectors: [score, ...]}}`` atomically."""
    write_json(
        path, {"config": dict(config), "results": {k: [s.to_json() for s in v] for k, v in results.items()}}
    )
