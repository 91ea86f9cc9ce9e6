"""Reading benchmark files: numbered lines and CSV rows, every malformed line one :class:`UserError`.

Each family's module (:mod:`ctx2static.eval.families`) reads its own format with these.
"""

from __future__ import annotations

import csv
from pathlib import Path

from ctx2static.errors import UserError


def lines(path: Path) -> list[tuple[int, str]]:
    """Numbered non-blank lines, stripped; a missing or non-UTF-8 file is a UserError."""
    if not path.is_file():
        raise UserError(f"{path}: no such benchmark file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason}); re-save it as UTF-8") from None
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def csv_rows(
    path: Path, columns: tuple[str, ...], may_be_empty: tuple[str, ...] = ()
) -> list[tuple[int, list[str]]]:
    """Numbered rows of a CSV file restricted to ``columns`` (found by header name)."""
    rows = [(n, next(csv.reader([line]))) for n, line in lines(path)]
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
