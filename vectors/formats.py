"""The files vectors are kept in, chosen by the path.

- a folder (or a path ending ``/``, or without a suffix): native form, ``vectors.npy``
  (memory-mappable), ``vocab.tsv`` (word, count; backslash, tab, newline, CR and NUL in a word
  escaped with a backslash, so it holds any word) and ``meta.json``;
- ``*.bin``: word2vec binary with header; anything else: word2vec text with header.
  Both load with gensim's ``KeyedVectors.load_word2vec_format`` (``binary=True`` for .bin);
  metadata and counts go to a sidecar ``<file>.meta.json``. Their words are separated by a space
  and a line break, so a word holding either, or an empty word, is refused when saving (one line
  naming the word; a folder holds it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ctx2static.errors import InputError
from ctx2static.fileio.reading import read_json
from ctx2static.vectors.meta import checked_meta

NATIVE_FILES = ("vectors.npy", "vocab.tsv", "meta.json")
"""What a native vectors folder holds (its composer's files besides, when it has one)."""


def sidecar(path: Path) -> Path:
    """Where a word2vec file's metadata and counts are kept: ``<file>.meta.json`` beside it."""
    return path.with_name(path.name + ".meta.json")


def read_through(path: Path) -> Path:
    """The file whose sidecars a read of ``path`` uses: a link's target, unless the link has its own."""
    linked = path.is_symlink() and path.is_file()  # a dangling link or a loop is read (and refused) as given
    return path.resolve() if linked and not sidecar(path).exists() else path


def saves_folder(path: str | os.PathLike) -> bool:
    """Whether :meth:`Vectors.save` writes ``path`` as a folder: a path ending ``/``, a folder, no extension.

    An extension holds a letter (``.txt``, ``.vec``, ``.bin``): a run named ``kd-0.07`` or ``v1.2``
    is a folder, not a word2vec file named by its version.
    """
    suffix = Path(path).suffix
    return str(path).endswith(os.sep) or os.path.isdir(path) or not any(c.isalpha() for c in suffix)


_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\0": "\\0"}
_UNESCAPES = {v[1]: k for k, v in _ESCAPES.items()}
_ESCAPE = re.compile(r"[\\\t\n\r\0]")
_UNESCAPE = re.compile(r"\\([\\tnr0])")


def escape_word(word: str) -> str:
    """``word`` as a folder's ``vocab.tsv`` holds it: backslash, tab, newline, CR and NUL backslash-escaped.

    So a line is always ``word<TAB>count`` whatever the word holds, and any word round-trips.
    """
    return _ESCAPE.sub(lambda m: _ESCAPES[m[0]], word)


def unescape_word(text: str) -> str:
    """The word :func:`escape_word` wrote as ``text`` (a backslash before any other character stays)."""
    return _UNESCAPE.sub(lambda m: _UNESCAPES[m[1]], text) if "\\" in text else text


_SEPARATOR = re.compile("[ \n]")


def require_word2vec_words(words: Sequence[str], path: Path) -> None:
    """A one-line error naming the first word a word2vec file cannot hold (before anything is written).

    A word2vec line is the word, a space and the values (the binary form: the word, a space, the
    bytes), so a word may hold no space nor line break, and an empty word would start a line with
    the separator. Both gensim and this reader would read such a file wrongly or not at all.
    """
    for w in words:
        if w and not _SEPARATOR.search(w):
            continue
        what = (
            "a word is empty"
            if not w
            else f"the word {w!r} holds a " + ("space" if " " in w else "line break")
        )
        raise InputError(
            path,
            f"{path}: not written: {what}, which a word2vec file cannot hold (a space and a line break "
            "end its words); save to a folder (a path without a suffix), whose vocab.tsv holds any word",
        )


def json_dict(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; anything else is a one-line error."""
    data = read_json(path, fix="delete it (metadata only) or re-save the vectors")
    if not isinstance(data, dict):
        raise InputError(path, f"{path}: not a JSON object; delete it (metadata only) or re-save the vectors")
    return data


def sidecar_data(path: Path, n: int) -> dict[str, Any]:
    """The sidecar's ``meta`` (a dict), ``counts`` (n integers, else None) and ``files`` (None: not named).

    ``files``: the sha256 of each file of the set it was saved with, by role (``table``,
    ``subwords.npy``, ``tokenizer.json``); a sidecar written before they were named has none.
    """
    data = json_dict(path)
    files = data.get("files")
    if files is not None and not (
        isinstance(files, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
    ):
        raise InputError(path, f"{path}: 'files' is not a map of names to digests; re-save the vectors")
    counts = data.get("counts")
    ok = (
        isinstance(counts, list)
        and len(counts) == n
        and all(type(c) is int and 0 <= c < 2**63 for c in counts)
    )
    meta = data.get("meta")
    meta = checked_meta(meta, path) if isinstance(meta, dict) else {}
    return {"meta": meta, "counts": counts if ok else None, "files": files}


def _empty_matrix(fh: Any, path: Path, n: int, d: int, min_bytes: int) -> np.ndarray:
    """The [n, d] matrix to fill, once the header is plausible: a row takes at least ``min_bytes`` a value."""
    size = os.fstat(fh.fileno()).st_size
    if n < 0 or d < 1 or n * d * min_bytes > size:
        raise InputError(
            path,
            f"{path}: the header says {n} words of {d} values, which this {size}-byte file cannot hold; "
            "fix the header line or re-export the file",
        )
    return np.empty((n, d), dtype=np.float32)


def read_text(fh: Any, path: Path, n: int, d: int) -> tuple[list[str], np.ndarray]:
    """The ``n`` words and [n, d] rows of a word2vec text file after its header (each line checked)."""
    words: list[str] = []
    matrix = _empty_matrix(fh, path, n, d, 2)
    for lineno, raw in enumerate(fh, 2):
        if not raw.strip():
            continue
        try:
            parts = raw.decode("utf-8").rstrip().split(" ")
        except UnicodeDecodeError:
            raise InputError(
                path, f"{path}: line {lineno} is not UTF-8; is it a binary file (use .bin)?"
            ) from None
        if len(words) == n:
            raise InputError(path, f"{path}: more rows than the header's {n}; fix the header line")
        if len(parts) != d + 1:
            raise InputError(
                path,
                f"{path}: line {lineno} has {len(parts) - 1} values, expected {d}; "
                "the file is ragged or truncated, re-export it",
            )
        try:
            with np.errstate(over="ignore"):  # a value beyond float32 is inf: load() reports its word
                matrix[len(words)] = np.array(parts[1:], dtype=np.float32)
        except ValueError:
            raise InputError(path, f"{path}: line {lineno} has a value that is not a number") from None
        words.append(parts[0])
    if len(words) != n:
        raise InputError(
            path, f"{path}: header says {n} words but the file has {len(words)}; it is truncated"
        )
    return words, matrix


def read_binary(fh: Any, path: Path, n: int, d: int) -> tuple[list[str], np.ndarray]:
    """The ``n`` words and [n, d] rows of a word2vec binary file after its header line."""
    words: list[str] = []
    matrix = _empty_matrix(fh, path, n, d, 4)
    data = fh.read()
    pos = 0
    nbytes = 4 * d
    for i in range(n):
        while pos < len(data) and data[pos : pos + 1] in (b"\n", b" "):
            pos += 1
        end = data.find(b" ", pos)
        if end < 0 or end + 1 + nbytes > len(data):
            raise InputError(path, f"{path}: word {i + 1} of {n} is cut short; the binary file is truncated")
        try:
            words.append(data[pos:end].decode("utf-8"))
        except UnicodeDecodeError:
            raise InputError(
                path, f"{path}: word {i + 1} is not UTF-8; is this a word2vec binary file?"
            ) from None
        matrix[i] = np.frombuffer(data, dtype="<f4", count=d, offset=end + 1)
        pos = end + 1 + nbytes
    return words, matrix
