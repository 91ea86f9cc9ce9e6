"""`Vectors`: the one type every stage passes on (words, float32 matrix, counts, metadata).

Formats, chosen by the path:
- a folder (or a path ending ``/``): native form, ``vectors.npy`` (memory-mappable),
  ``vocab.tsv`` (word, count) and ``meta.json``;
- ``*.bin``: word2vec binary with header; anything else: word2vec text with header.
  Both load with gensim's ``KeyedVectors.load_word2vec_format`` (``binary=True`` for .bin);
  metadata and counts go to a sidecar ``<file>.meta.json``.
Reading needs numpy only (no torch).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ctx2static.errors import UserError
from ctx2static.fileio import atomic_dir, atomic_write


@dataclass
class Vectors:
    """Static word vectors: ``matrix[i]`` is the vector of ``words[i]``."""

    words: list[str]
    matrix: np.ndarray
    counts: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.matrix = np.asarray(self.matrix, dtype=np.float32)
        if self.matrix.ndim != 2 or self.matrix.shape[0] != len(self.words):
            raise UserError(f"a matrix of shape {self.matrix.shape} cannot hold {len(self.words)} words")
        if self.counts is not None:
            self.counts = np.asarray(self.counts, dtype=np.int64)
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def __getitem__(self, word: str) -> np.ndarray:
        return self.matrix[self.index[word]]

    @property
    def dim(self) -> int:
        """Vector size."""
        return int(self.matrix.shape[1])

    def lookup(self, word: str) -> int | None:
        """Row of ``word``, falling back to its lower-case form; None when absent."""
        i = self.index.get(word)
        if i is None:
            i = self.index.get(word.lower())
        return i

    def unit(self) -> np.ndarray:
        """Rows scaled to unit L2 norm (zero rows stay zero)."""
        norms = np.linalg.norm(self.matrix, axis=1, keepdims=True)
        return self.matrix / np.maximum(norms, 1e-12)

    def most_similar(self, word: str, topn: int = 10) -> list[tuple[str, float]]:
        """The ``topn`` nearest words by cosine, excluding ``word`` itself."""
        i = self.lookup(word)
        if i is None:
            raise KeyError(word)
        unit = self.unit()
        sims = unit @ unit[i]
        sims[i] = -np.inf
        top = np.argsort(-sims)[:topn]
        return [(self.words[j], float(sims[j])) for j in top]

    def save(self, path: str | os.PathLike) -> Path:
        """Write atomically in the format the path implies (see module docstring)."""
        path = Path(path)
        if str(path).endswith(os.sep) or path.is_dir() or path.suffix == "":
            self._save_native(path)
            return path
        binary = path.suffix == ".bin"
        with atomic_write(path, "wb") as fh:
            fh.write(f"{len(self.words)} {self.dim}\n".encode())
            for w, row in zip(self.words, self.matrix, strict=True):
                if binary:
                    fh.write(w.encode() + b" " + row.astype("<f4").tobytes() + b"\n")
                else:
                    fh.write((w + " " + " ".join(f"{x:.6g}" for x in row) + "\n").encode())
        with atomic_write(_sidecar(path), "w", encoding="utf-8") as fh:
            counts = None if self.counts is None else self.counts.tolist()
            json.dump({"meta": self.meta, "counts": counts}, fh)
        return path

    def _save_native(self, path: Path) -> None:
        with atomic_dir(path) as tmp:
            np.save(tmp / "vectors.npy", self.matrix)
            with open(tmp / "vocab.tsv", "w", encoding="utf-8") as fh:
                counts = self.counts if self.counts is not None else np.zeros(len(self.words), int)
                for w, c in zip(self.words, counts.tolist(), strict=True):
                    fh.write(f"{w}\t{c}\n")
            with open(tmp / "meta.json", "w", encoding="utf-8") as fh:
                json.dump(self.meta, fh, indent=1)

    @classmethod
    def load(cls, path: str | os.PathLike, mmap: bool = False) -> Vectors:
        """Read any supported format; a malformed file is a one-line :class:`UserError`."""
        path = Path(path)
        if path.is_dir():
            return cls._load_native(path, mmap)
        if not path.is_file():
            raise UserError(f"{path}: no such vectors file or folder")
        with open(path, "rb") as fh:
            head = fh.readline()
            try:
                n, d = (int(x) for x in head.split())
            except ValueError:
                raise UserError(
                    f"{path}: line 1 must be the word2vec header '<count> <dim>'; "
                    "add it or save the vectors with ctx2static/gensim"
                ) from None
            if path.suffix == ".bin":
                words, matrix = _read_binary(fh, path, n, d)
            else:
                words, matrix = _read_text(fh, path, n, d)
        meta: dict[str, Any] = {}
        counts = None
        side = _sidecar(path)
        if side.is_file():
            data = json.loads(side.read_text(encoding="utf-8"))
            meta = data.get("meta") or {}
            if data.get("counts") is not None and len(data["counts"]) == n:
                counts = np.array(data["counts"], dtype=np.int64)
        return cls(words, matrix, counts, meta)

    @classmethod
    def _load_native(cls, path: Path, mmap: bool) -> Vectors:
        for name in ("vectors.npy", "vocab.tsv"):
            if not (path / name).is_file():
                raise UserError(f"{path}: folder lacks {name}; it is not a ctx2static vectors folder")
        matrix = np.load(path / "vectors.npy", mmap_mode="r" if mmap else None)
        words, counts = [], []
        with open(path / "vocab.tsv", encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 2 or not parts[1].isdigit():
                    raise UserError(
                        f"{path / 'vocab.tsv'}: line {n} is not 'word<TAB>count'; re-save the vectors"
                    )
                words.append(parts[0])
                counts.append(int(parts[1]))
        if len(words) != matrix.shape[0]:
            raise UserError(
                f"{path}: vocab.tsv has {len(words)} words but vectors.npy {matrix.shape[0]} rows"
            )
        meta_path = path / "meta.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        v = cls.__new__(cls)
        v.words, v.matrix, v.counts, v.meta = words, matrix, np.array(counts, np.int64), meta
        v.index = {w: i for i, w in enumerate(words)}
        return v


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".meta.json")


def _read_text(fh: Any, path: Path, n: int, d: int) -> tuple[list[str], np.ndarray]:
    words: list[str] = []
    matrix = np.empty((n, d), dtype=np.float32)
    for lineno, raw in enumerate(fh, 2):
        if not raw.strip():
            continue
        try:
            parts = raw.decode("utf-8").rstrip().split(" ")
        except UnicodeDecodeError:
            raise UserError(f"{path}: line {lineno} is not UTF-8; is it a binary file (use .bin)?") from None
        if len(words) == n:
            raise UserError(f"{path}: more rows than the header's {n}; fix the header line")
        if len(parts) != d + 1:
            raise UserError(
                f"{path}: line {lineno} has {len(parts) - 1} values, expected {d}; "
                "the file is ragged or truncated, re-export it"
            )
        try:
            matrix[len(words)] = np.array(parts[1:], dtype=np.float32)
        except ValueError:
            raise UserError(f"{path}: line {lineno} has a value that is not a number") from None
        words.append(parts[0])
    if len(words) != n:
        raise UserError(f"{path}: header says {n} words but the file has {len(words)}; it is truncated")
    return words, matrix


def _read_binary(fh: Any, path: Path, n: int, d: int) -> tuple[list[str], np.ndarray]:
    words: list[str] = []
    matrix = np.empty((n, d), dtype=np.float32)
    data = fh.read()
    pos = 0
    nbytes = 4 * d
    for i in range(n):
        while pos < len(data) and data[pos : pos + 1] in (b"\n", b" "):
            pos += 1
        end = data.find(b" ", pos)
        if end < 0 or end + 1 + nbytes > len(data):
            raise UserError(f"{path}: word {i + 1} of {n} is cut short; the binary file is truncated")
        try:
            words.append(data[pos:end].decode("utf-8"))
        except UnicodeDecodeError:
            raise UserError(f"{path}: word {i + 1} is not UTF-8; is this a word2vec binary file?") from None
        matrix[i] = np.frombuffer(data, dtype="<f4", count=d, offset=end + 1)
        pos = end + 1 + nbytes
    return words, matrix
