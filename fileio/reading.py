"""Reading text, compressed or not, and JSON, every line checked.

A NUL byte or bad UTF-8 is a one-line :class:`UserError` naming the file and the line.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import stat
import zlib
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ctx2static.errors import InputError
from ctx2static.fileio.outputs import kind_of

_OPENERS = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}
COMPRESSED = tuple(_OPENERS)


def read_json(path: str | os.PathLike, fix: str = "delete it and run again") -> Any:
    """Parse a JSON file; a file that is not JSON is a one-line error naming ``fix``."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):  # nesting deeper than Python's stack
        raise InputError(path, f"{path}: not valid JSON; {fix}") from None


def open_compressed(path: str | os.PathLike) -> BinaryIO:
    """Open a file for reading bytes, decompressing by suffix (.gz, .xz, .bz2, in any case)."""
    path = Path(path)
    opener = _OPENERS.get(path.suffix.lower(), open)  # "x.GZ" is as gzipped as "x.gz"
    return opener(path, "rb")  # type: ignore[operator]


_BOM = b"\xef\xbb\xbf"


def read_lines(
    path: str | os.PathLike, expect: str, limit: int | None = None
) -> Generator[tuple[int, str], None, None]:
    """Yield ``(line number, line)`` of a plain or compressed UTF-8 file, without line ends.

    ``expect`` describes the format for the error messages (e.g. "UTF-8 text, one sentence a
    line"): a NUL byte, bad UTF-8, a missing file or a damaged archive is a one-line error naming
    the line. A UTF-8 byte order mark opening the file is dropped. With
    ``limit`` no line costs more than ``limit`` bytes of memory: a longer one comes in pieces (each
    with the line's number), cut after a space or tab where there is one, else between characters.
    """
    require_file(path, expect)
    n = 0
    try:
        with open_compressed(path) as fh:
            for n, raw in _numbered(fh, limit, strip=_BOM):
                if b"\x00" in raw:
                    raise InputError(
                        path,
                        f"{path}: line {n} holds a NUL byte, so this looks like a binary file; pass {expect}",
                    )
                try:
                    yield n, raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as exc:
                    raise InputError(
                        path,
                        f"{path}: line {n} is not valid UTF-8 ({exc.reason}); "
                        "convert the file first, e.g. iconv -f latin1 -t utf-8",
                    ) from None
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        raise InputError(
            path,
            f"{path}: cannot decompress or read it near line {n + 1} ({exc}); check the file is complete",
        ) from None


def require_file(path: str | os.PathLike, expect: str) -> None:
    """A one-line error naming ``expect`` unless ``path`` is a regular file (a link to one is).

    A named pipe or a device is named as what it is, not as missing: it may never end (``/dev/zero``)
    or be read once only, where an input is read more than once.
    """
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise InputError(path, f"{path}: no such file; pass {expect}") from None
    if not stat.S_ISREG(mode):
        raise InputError(
            path,
            f"{path}: is {kind_of(mode)}, not a file (a pipe or a device may never end, and an input is read "
            f"more than once); pass {expect}",
        )


def _numbered(fh: BinaryIO, limit: int | None, strip: bytes = b"") -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of ``fh``; with ``limit``, lines longer than it in pieces (see read_lines).

    ``strip``: bytes dropped where they open the file (a byte order mark, which Windows tools write).
    """
    if strip and fh.peek(len(strip))[: len(strip)] == strip:  # type: ignore[attr-defined]
        fh.read(len(strip))
    if limit is None:
        yield from enumerate(fh, 1)
        return
    n, carry = 1, b""
    while True:
        raw = carry + fh.readline(limit - len(carry))
        if len(raw) < limit or raw.endswith(b"\n"):  # the line's end (or the file's)
            if raw:
                yield n, raw
            if not raw.endswith(b"\n"):
                return
            n, carry = n + 1, b""
            continue
        cut = max(raw.rfind(b" ", limit // 2), raw.rfind(b"\t", limit // 2)) + 1
        if cut <= 0:  # no blank in the second half: cut before the last character's first byte
            cut = len(raw) - 1
            while cut > len(raw) - 4 and raw[cut] & 0xC0 == 0x80:
                cut -= 1
        yield n, raw[:cut]
        carry = raw[cut:]
