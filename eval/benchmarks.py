"""Benchmark files: readers for the three formats and the bundled sets (data/benchmarks/README.md).

- similarity: ``word1<TAB>word2<TAB>score`` per line (whitespace-separated also accepted);
- analogy: ``a b c d`` per line (a:b :: c:d) with optional ``: section`` header lines (Google
  layout), or a CSV with header ``,type,word1,word2,word3,target`` (vecto's SemEval-2012 layout,
  scored per ``type``);
- categorization: a CSV whose header names the columns ``category`` and ``word``.

A malformed file raises a one-line :class:`UserError` naming the file and the line.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np

from ctx2static.errors import UserError
from ctx2static.eval.downstream import DownstreamTask, Task, load_downstream
from ctx2static.resources import BENCHMARK_DIR


class Family(str, Enum):
    """Benchmark families (``downstream``: the tasks of :mod:`ctx2static.eval.downstream`)."""

    SIMILARITY = "similarity"
    ANALOGY = "analogy"
    CATEGORIZATION = "categorization"
    DOWNSTREAM = "downstream"


INTRINSIC = (Family.SIMILARITY, Family.ANALOGY, Family.CATEGORIZATION)
"""The families run by default (the downstream family takes minutes per file: asked for explicitly)."""


@dataclass(frozen=True)
class SimilaritySet:
    """Word pairs with gold similarity scores."""

    name: str
    pairs: list[tuple[str, str]]
    gold: np.ndarray


@dataclass(frozen=True)
class AnalogySet:
    """Questions ``a:b :: c:d``; ``sections[i]`` labels question i ("" without sections).

    ``per_section`` sets are scored as the mean accuracy over sections (SemEval-2012 subcategories).
    """

    name: str
    questions: list[tuple[str, str, str, str]]
    sections: list[str]
    per_section: bool = False


@dataclass(frozen=True)
class CategorizationSet:
    """Items (words or multi-word phrases) with their gold class labels."""

    name: str
    items: list[str]
    labels: list[str]


Benchmark = SimilaritySet | AnalogySet | CategorizationSet | DownstreamTask

BUNDLED: dict[Family, tuple[str, ...]] = {
    Family.SIMILARITY: (
        "ws353.txt",
        "ws353_sim.txt",
        "ws353_rel.txt",
        "simlex999.txt",
        "men3k.txt",
        "rw.txt",
        "rg65.txt",
        "mturk287.txt",
    ),
    Family.ANALOGY: ("google.txt", "msr.txt"),
    Family.CATEGORIZATION: ("ap.csv", "battig.csv", "essli2008.csv"),
}


SEMEVAL2012 = BENCHMARK_DIR / "analogy" / "semeval2012.csv"
"""Bundled but not run by default: this copy has no gold relational-similarity ratings, only analogy
questions built per subcategory, whose accuracy (1-2% for every vectors file) is noise, not a
result; pass it with ``--analogy`` to see it."""


def bundled_paths(family: Family) -> list[Path]:
    """Paths of the bundled benchmark files of ``family``."""
    return [BENCHMARK_DIR / family.value / name for name in BUNDLED[family]]


def _lines(path: Path) -> list[tuple[int, str]]:
    """Numbered non-blank lines, stripped; a missing or non-UTF-8 file is a UserError."""
    if not path.is_file():
        raise UserError(f"{path}: no such benchmark file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason}); re-save it as UTF-8") from None
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _csv_rows(
    path: Path, columns: tuple[str, ...], may_be_empty: tuple[str, ...] = ()
) -> list[tuple[int, list[str]]]:
    """Numbered rows of a CSV file restricted to ``columns`` (found by header name)."""
    rows = [(n, next(csv.reader([line]))) for n, line in _lines(path)]
    if not rows:
        raise UserError(f"{path}: empty file; expected a CSV header naming {', '.join(columns)}")
    header = [h.strip() for h in rows[0][1]]
    missing = [c for c in columns if c not in header]
    if missing:
        raise UserError(f"{path}: line {rows[0][0]}: CSV header lacks column(s) {', '.join(missing)}")
    cols = [header.index(c) for c in columns]
    out = []
    for n, row in rows[1:]:
        if len(row) != len(header):
            raise UserError(f"{path}: line {n} has {len(row)} fields, the header has {len(header)}")
        values = [row[c].strip() for c in cols]
        empty = [c for c, v in zip(columns, values, strict=True) if not v and c not in may_be_empty]
        if empty:
            raise UserError(f"{path}: line {n} has an empty {empty[0]} field")
        out.append((n, values))
    return out


def read_similarity(path: str | os.PathLike) -> SimilaritySet:
    """Read ``word1 word2 score`` lines (tab- or whitespace-separated)."""
    path = Path(path)
    pairs, gold = [], []
    for n, line in _lines(path):
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


def read_analogy(path: str | os.PathLike) -> AnalogySet:
    """Read Google-layout questions (``: section`` lines optional) or a vecto SemEval CSV."""
    path = Path(path)
    questions: list[tuple[str, str, str, str]] = []
    sections: list[str] = []
    if path.suffix.lower() == ".csv":
        for _, (kind, *words) in _csv_rows(path, ("type", "word1", "word2", "word3", "target")):
            questions.append(tuple(words))  # type: ignore[arg-type]
            sections.append(kind)
    else:
        section = ""
        for n, line in _lines(path):
            if line.startswith(":"):
                section = line[1:].strip()
                continue
            words = line.split()
            if len(words) != 4:
                raise UserError(f"{path}: line {n} has {len(words)} words; expected 'a b c d' (a:b :: c:d)")
            questions.append(tuple(words))  # type: ignore[arg-type]
            sections.append(section)
    if not questions:
        raise UserError(f"{path}: no analogy questions found")
    return AnalogySet(path.stem, questions, sections, per_section=path.suffix.lower() == ".csv")


def read_categorization(path: str | os.PathLike) -> CategorizationSet:
    """Read a CSV with ``category`` and ``word`` columns (items may be multi-word phrases).

    Rows with an empty word are skipped (the bundled AP copy has one per category: 402 items remain).
    """
    path = Path(path)
    rows = [(c, w) for _, (c, w) in _csv_rows(path, ("category", "word"), may_be_empty=("word",)) if w]
    if not rows:
        raise UserError(f"{path}: no items found below the header")
    return CategorizationSet(path.stem, [w for _, w in rows], [c for c, _ in rows])


READERS = {
    Family.SIMILARITY: read_similarity,
    Family.ANALOGY: read_analogy,
    Family.CATEGORIZATION: read_categorization,
}


def load_benchmarks(
    families: Sequence[Family] = INTRINSIC,
    extra: Mapping[Family, Sequence[str | os.PathLike]] | None = None,
    bundled: bool = True,
    tasks: Sequence[Task] = tuple(Task),
) -> list[Benchmark]:
    """Read the bundled sets of ``families`` (unless ``bundled`` is False) and the ``extra`` files.

    The downstream family loads its bundled ``tasks`` (it has no extra files).
    """
    out: list[Benchmark] = []
    for family in INTRINSIC:
        paths = bundled_paths(family) if bundled and family in families else []
        paths += list((extra or {}).get(family, []))
        for path in paths:
            bench = READERS[family](path)
            if any(b.name == bench.name for b in out):
                raise UserError(f"{path}: a benchmark named {bench.name!r} is already loaded; rename it")
            out.append(bench)
    if Family.DOWNSTREAM in families:
        out += load_downstream(tasks)
    return out
