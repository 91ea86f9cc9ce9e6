"""Files in and out, one way each: atomic writes, JSON, checksums, compressed text, checked lines.

Writes go to a temp name in the same folder, are fsynced and renamed over the target, so no run
ever leaves a half-written file where a good one was. Reads of text check every line (a NUL byte
or bad UTF-8 is a one-line :class:`UserError` naming the file and line).
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import json
import lzma
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO

from ctx2static.errors import UserError

_OPENERS = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}
COMPRESSED = tuple(_OPENERS)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", encoding: str | None = None) -> Iterator[IO]:
    """Open a temp file beside ``path``; on success fsync and rename it over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual mode
        with os.fdopen(fd, mode, encoding=encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temp folder beside ``path``; on success it replaces ``path`` whole."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    os.chmod(tmp, 0o777 & ~_umask())
    try:
        yield tmp
        for f in tmp.rglob("*"):
            if f.is_file():
                with open(f, "rb") as fh:
                    os.fsync(fh.fileno())
        old = None
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_json(path: str | os.PathLike, data: Any, indent: int | None = 1, sort_keys: bool = False) -> None:
    """Write ``data`` as JSON (one trailing newline), atomically."""
    with atomic_write(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=indent, sort_keys=sort_keys)
        fh.write("\n")


def read_json(path: str | os.PathLike, fix: str = "delete it and run again") -> Any:
    """Parse a JSON file; a file that is not JSON is a one-line error naming ``fix``."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise UserError(f"{path}: not valid JSON; {fix}") from None


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def open_compressed(path: str | os.PathLike) -> BinaryIO:
    """Open a file for reading bytes, decompressing by suffix (.gz, .xz, .bz2)."""
    path = Path(path)
    opener = _OPENERS.get(path.suffix, open)
    return opener(path, "rb")  # type: ignore[operator]


def read_lines(path: str | os.PathLike, expect: str) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, line)`` of a plain or compressed UTF-8 file, without line ends.

    ``expect`` describes the format for the error messages (e.g. "UTF-8 text, one sentence a
    line"): a NUL byte, bad UTF-8, a missing file or a damaged archive is a one-line error.
    """
    if not Path(path).is_file():
        raise UserError(f"{path}: no such file; pass {expect}")
    try:
        with open_compressed(path) as fh:
            for n, raw in enumerate(fh, 1):
                if b"\x00" in raw:
                    raise UserError(
                        f"{path}: line {n} holds a NUL byte, so this looks like a binary file; pass {expect}"
                    )
                try:
                    yield n, raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as exc:
                    raise UserError(
                        f"{path}: line {n} is not valid UTF-8 ({exc.reason}); "
                        "convert the file first, e.g. iconv -f latin1 -t utf-8"
                    ) from None
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        raise UserError(f"{path}: cannot decompress or read it ({exc}); check the file is complete") from None
