"""Reading benchmark files: numbered lines and CSV rows, streamed; a malformed line is one :class:`UserError`.

Each family's module (:mod:`ctx2static.eval.families`) reads its own format with these. A file is
read a line at a time (plain or compressed, :func:`~ctx2static.fileio.reading.read_lines`), never whole: a
50 MB similarity file held as one string, its list of lines and their tuples peaked far above
its size. No line may exceed :data:`LINE_LIMIT` (a benchmark line holds a few words), so a file
without newlines cannot be read whole either. Lines come in Unicode NFC, as the corpus does, so a
word saved in NFD finds its row.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from ctx2static.errors import InputError
from ctx2static.fileio.reading import read_lines
from ctx2static.memory import format_bytes
from ctx2static.text.normal import nfc

LINE_LIMIT = 1 << 20
"""Bytes a benchmark line may hold (the longest bundled line, a sentence pair, is under 10 KB)."""


def lines(path: Path, expect: str = "a benchmark file") -> Iterator[tuple[int, str]]:
    """Numbered non-blank lines, stripped, in NFC; a missing file, bad UTF-8, an over-long line: UserError."""
    if not path.is_file():
        raise InputError(path, f"{path}: no such benchmark file")
    held: tuple[int, str] | None = None  # a line is passed on once the next one shows it was whole
    for n, line in read_lines(path, expect, limit=LINE_LIMIT):
        if held is not None and held[0] == n:  # read_lines cut it: the line is over the limit
            raise InputError(
                path,
                f"{path}: line {n} is longer than {format_bytes(LINE_LIMIT)}; a benchmark line holds a "
                "few words (is this the right file?)",
            )
        if held is not None and held[1]:
            yield held
        held = n, nfc(line.strip())
    if held is not None and held[1]:
        yield held


def csv_rows(
    path: Path, columns: tuple[str, ...], may_be_empty: tuple[str, ...] = ()
) -> Iterator[tuple[int, list[str]]]:
    """Numbered rows of a CSV file restricted to ``columns`` (found by header name)."""
    rows = ((n, _csv_row(path, n, line)) for n, line in lines(path, "a CSV file"))
    first = next(rows, None)
    if first is None:
        raise InputError(path, f"{path}: empty file; expected a CSV header naming {', '.join(columns)}")
    header = [h.strip().lstrip("\ufeff") for h in first[1]]
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(path, f"{path}: line {first[0]}: CSV header lacks column(s) {', '.join(missing)}")
    cols = [header.index(c) for c in columns]
    for n, row in rows:
        if len(row) != len(header):
            raise InputError(path, f"{path}: line {n} has {len(row)} fields, the header has {len(header)}")
        values = [row[c].strip() for c in cols]
        empty = [c for c, v in zip(columns, values, strict=True) if not v and c not in may_be_empty]
        if empty:
            raise InputError(path, f"{path}: line {n} has an empty {empty[0]} field")
        yield n, values


def _csv_row(path: Path, n: int, line: str) -> list[str]:
    """One line's CSV fields; a line csv cannot parse (a lone carriage return, say) is one UserError."""
    try:
        return next(csv.reader([line]))
    except csv.Error as exc:  # csv's own words speak of its reader's modes, not of the file
        why = "a stray carriage return (\\r) inside it" if "new-line" in str(exc) else str(exc)
        raise InputError(
            path, f"{path}: line {n} is not a CSV row: {why}; save the file as CSV, a row a line"
        ) from None
