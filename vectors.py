"""`Vectors`: the one type every stage passes on (words, float32 matrix, counts, metadata).

Formats, chosen by the path:
- a folder (or a path ending ``/``): native form, ``vectors.npy`` (memory-mappable),
  ``vocab.tsv`` (word, count) and ``meta.json``;
- ``*.bin``: word2vec binary with header; anything else: word2vec text with header.
  Both load with gensim's ``KeyedVectors.load_word2vec_format`` (``binary=True`` for .bin);
  metadata and counts go to a sidecar ``<file>.meta.json``.
Reading needs numpy only (no torch). Vectors fitted from a teacher cache may carry a
:class:`~ctx2static.composer.Composer` (``subwords.npy`` + ``tokenizer.json`` in the folder, or
``<file>.subwords.npy`` + ``<file>.tokenizer.json`` beside a word2vec file) that gives any word a
vector (:meth:`Vectors.query`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ctx2static.composer import Composer
from ctx2static.errors import UserError
from ctx2static.fileio import atomic_dir, atomic_write


@dataclass
class Vectors:
    """Static word vectors: ``matrix[i]`` is the vector of ``words[i]``."""

    words: list[str]
    matrix: np.ndarray
    counts: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    composer: Composer | None = field(default=None, repr=False)
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

    def query(self, words: Sequence[str]) -> np.ndarray:
        """float32 ``[len(words), dim]``: each word's row (found as :meth:`lookup` does) or its composition.

        A word the table lacks is composed from the teacher's subwords when the vectors carry a
        composer; without one it is a ``KeyError``.
        """
        rows = [self.lookup(w) for w in words]
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        known = [k for k, r in enumerate(rows) if r is not None]
        missing = [k for k, r in enumerate(rows) if r is None]
        out[known] = self.matrix[[rows[k] for k in known]]
        if missing:
            if self.composer is None:
                raise KeyError(f"{words[missing[0]]!r} is not in the vectors, which have no composer")
            out[missing] = self.composer.compose([words[k] for k in missing])
        return out

    def similarity(self, a: str, b: str) -> float:
        """Cosine of the vectors of ``a`` and ``b`` (composed where the table lacks them)."""
        x, y = self.query([a, b]).astype(np.float64)
        return float(x @ y / max(np.linalg.norm(x) * np.linalg.norm(y), 1e-24))

    def most_similar(self, positive: Query, topn: int = 10, negative: Query = ()) -> list[tuple[str, float]]:
        """The ``topn`` words nearest by cosine to the sum of unit ``positive`` minus ``negative`` vectors.

        Each of ``positive``/``negative`` is a word, a vector or a list of them; words the table lacks
        are composed (:meth:`query`). With ``positive=[b, c], negative=[a]`` this is the 3CosAdd
        analogy a : b :: c : ? (Mikolov et al. 2013, as gensim's ``most_similar``). Words given are
        never answers.
        """
        pos, neg = _items(positive), _items(negative)
        target = np.zeros(self.dim, dtype=np.float64)
        given = set()
        for items, sign in ((pos, 1.0), (neg, -1.0)):
            for item in items:
                if isinstance(item, str):
                    given.add(self.lookup(item))
                    vec = self.query([item])[0]
                else:
                    vec = np.asarray(item, dtype=np.float64)
                    if vec.shape != (self.dim,):
                        raise ValueError(f"a query vector must have shape ({self.dim},), not {vec.shape}")
                target += sign * vec / max(np.linalg.norm(vec), 1e-12)
        sims = self.unit() @ (target / max(np.linalg.norm(target), 1e-12))
        for i in given - {None}:
            sims[i] = -np.inf
        top = np.argsort(-sims, kind="stable")[:topn]
        return [(self.words[j], float(sims[j])) for j in top if np.isfinite(sims[j])]

    def covering(self, words: Sequence[str]) -> Vectors:
        """These vectors plus, after the last row, a composed row for each of ``words`` the table lacks."""
        new = list(dict.fromkeys(w for w in words if self.lookup(w) is None))
        if not new:
            return self
        matrix = np.concatenate([np.asarray(self.matrix), self.query(new)])
        counts = None if self.counts is None else np.concatenate([self.counts, np.zeros(len(new), np.int64)])
        return Vectors([*self.words, *new], matrix, counts, dict(self.meta), self.composer)

    def to_gensim(self) -> Any:
        """A gensim ``KeyedVectors`` with these words, vectors and counts (needs gensim)."""
        from gensim.models import KeyedVectors

        kv = KeyedVectors(self.dim)
        kv.add_vectors(list(self.words), np.asarray(self.matrix))
        if self.counts is not None:
            kv.allocate_vecattrs(attrs=["count"], types=[np.int64])
            kv.expandos["count"][:] = self.counts
        return kv

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
        meta = self._meta_with_composer(path.parent, path.name + ".")
        with atomic_write(_sidecar(path), "w", encoding="utf-8") as fh:
            counts = None if self.counts is None else self.counts.tolist()
            json.dump({"meta": meta, "counts": counts}, fh)
        return path

    def _meta_with_composer(self, folder: Path, prefix: str) -> dict[str, Any]:
        """The meta to write: the composer's settings under "composer" once its files are written."""
        meta = {k: v for k, v in self.meta.items() if k != "composer"}
        if self.composer is not None:
            meta["composer"] = self.composer.save(folder, prefix)
        else:
            Composer.remove(folder, prefix)  # a composer saved there before belongs to other vectors
        return meta

    def _save_native(self, path: Path) -> None:
        with atomic_dir(path) as tmp:
            np.save(tmp / "vectors.npy", self.matrix)
            with open(tmp / "vocab.tsv", "w", encoding="utf-8") as fh:
                counts = self.counts if self.counts is not None else np.zeros(len(self.words), int)
                for w, c in zip(self.words, counts.tolist(), strict=True):
                    fh.write(f"{w}\t{c}\n")
            meta = self._meta_with_composer(tmp, "")
            with open(tmp / "meta.json", "w", encoding="utf-8") as fh:
                json.dump(meta, fh, indent=1)

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
        composer = Composer.load(path.parent, path.name + ".", meta.get("composer") or {})
        return cls(words, matrix, counts, meta, composer)

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
        v.composer = Composer.load(path, "", meta.get("composer") or {})
        return v


Query = str | np.ndarray | Sequence[str | np.ndarray]
"""A word, a vector, or a list of words and vectors (:meth:`Vectors.most_similar`)."""


def _items(query: Query) -> list[str | np.ndarray]:
    if isinstance(query, str) or (isinstance(query, np.ndarray) and query.ndim == 1):
        return [query]
    return list(query)


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
