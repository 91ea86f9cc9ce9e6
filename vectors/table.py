"""The :class:`Vectors` table: words, a float32 matrix, counts and metadata, and its queries.

Reading needs numpy only (no torch). Vectors holding NaN or infinity are refused when loaded (or
left out, ``nonfinite="drop"``) and never written. Vectors fitted from a teacher cache may carry a
:class:`~ctx2static.composer.Composer` (``subwords.npy`` + ``tokenizer.json`` in the folder, or
``<file>.subwords.npy`` + ``<file>.tokenizer.json`` beside a word2vec file) that gives any word a
vector (:meth:`Vectors.query`).

Opening a file or folder is the one place its contents are checked, so no later stage meets a
malformed value: ``meta.json`` (or the sidecar's ``meta``) against
:data:`~ctx2static.vectors.meta.META_SCHEMA`, the composer's files against the table
(:meth:`Composer.load`), and every word once. A word listed twice keeps its first row, as gensim's
``KeyedVectors.load_word2vec_format`` does (4.x: it keeps the first occurrence and logs a warning
per duplicate), so a table reads the same in both tools; one warning names the file, the count and
the first duplicate. Keeping both rows would make the word its own nearest neighbour and carry the
copy into every retrofit and export.

A word2vec file and the files beside it are one set: the sidecar names the sha256 of the table and
of each composer file it was saved with (``files``). It is renamed into place first and the table
last, so a save stopped between its renames, even by SIGKILL, leaves the old set, the new set, or
the new sidecar beside a table it does not name, which loading refuses in one line
(:func:`_check_set`); a composer file present must be the one named too. The table's own header
cannot carry such a mark: gensim reads it as exactly two numbers.
"""

from __future__ import annotations

import enum
import itertools
import json
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from ctx2static.composer import ROWS, TOKENIZER, Composer, map_rows
from ctx2static.errors import InputError, OptionError, Style, UserError, speaking_to, spell
from ctx2static.fileio.atomic import Renames, atomic_dir, atomic_files, atomic_write, write_npy
from ctx2static.fileio.digests import sha256_file
from ctx2static.fileio.reading import read_lines
from ctx2static.options import configure
from ctx2static.vectors.encoding import EncodeConfig, Weighting
from ctx2static.vectors.formats import (
    NATIVE_FILES,
    escape_word,
    json_dict,
    read_binary,
    read_text,
    read_through,
    require_word2vec_words,
    saves_folder,
    sidecar,
    sidecar_data,
    unescape_word,
)
from ctx2static.vectors.meta import VectorsMeta, checked_meta, is_count
from ctx2static.words import tokenize

log = logging.getLogger(__name__)
COMPOSE_CHUNK = 1 << 12
"""Words composed at a time by :meth:`Vectors.with_composed`: a chunk holds its tokens' rows in float16
and float32 (150 MB for 4,096 words of 8 tokens at 768 dims; 65,536 words held 2.4 GB)."""
COMPOSED_WORD_BYTES = 256
"""What a composed word costs beyond its row: its string and its entries in the word list and index."""
_BLOCK = 1 << 14
"""Rows (or texts) :meth:`Vectors.reduced` holds as float64 at a time: a block, never the table."""


class NonFinite(str, enum.Enum):
    """What loading does with words whose vectors hold NaN or infinity."""

    ERROR = "error"  # a one-line error naming the first such word
    DROP = "drop"  # leave them out, with a warning


def nonfinite_rows(matrix: np.ndarray) -> np.ndarray:
    """Indices of the rows of ``matrix`` holding NaN or infinity (read in blocks: no whole-matrix mask)."""
    block = 1 << 16
    bad = [
        start + np.flatnonzero(~np.isfinite(matrix[start : start + block]).all(axis=1))
        for start in range(0, len(matrix), block)
    ]
    return np.concatenate(bad) if bad else np.zeros(0, dtype=np.int64)


def require_finite(vectors: Vectors, where: str, fix: str) -> None:
    """A one-line error naming the first word whose vector holds NaN or infinity (and ``fix``), if any."""
    bad = nonfinite_rows(vectors.matrix)
    if len(bad):
        raise InputError(
            where,
            f"{where}: the vector of {vectors.words[bad[0]]!r} holds NaN or infinity "
            f"({len(bad)} such words); {fix}",
        )


@dataclass(repr=False)
class Vectors:
    """Static word vectors: ``matrix[i]`` is the vector of ``words[i]``.

    The matrix is float32 however the vectors were made or read; a float32 memory map stays one.
    Its unit rows are computed once (:meth:`unit`) and again only after ``matrix`` is assigned, as
    gensim caches its norms: a change made in place to the matrix's values is not seen.
    """

    words: list[str]
    matrix: np.ndarray
    counts: np.ndarray | None = None
    meta: VectorsMeta = field(default_factory=VectorsMeta)
    composer: Composer | None = None
    index: dict[str, int] = field(init=False)
    _unit: np.ndarray | None = field(default=None, init=False, compare=False)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "matrix":
            value = value if _is_float32(value) else np.asarray(value, dtype=np.float32)
            object.__setattr__(self, "_unit", None)
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        meta = cast(dict[str, Any], self.meta)
        made = [f"{k} {meta[k]!r}" for k in ("student", "teacher") if meta.get(k)]
        return f"Vectors({', '.join([f'{len(self):,} words x {self.dim}', *made])})"

    def __post_init__(self) -> None:
        if self.matrix.ndim != 2 or self.matrix.shape[0] != len(self.words):
            raise UserError(f"a matrix of shape {self.matrix.shape} cannot hold {len(self.words)} words")
        if self.counts is not None:
            self.counts = np.asarray(self.counts, dtype=np.int64)
        self.index = {w: i for i, w in enumerate(self.words)}
        if len(self.index) != len(self.words):
            twice = next(w for i, w in enumerate(self.words) if self.index[w] != i)
            raise UserError(f"the words hold {twice!r} more than once; a table has one row per word")

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

    def row_of(self, word: str) -> int | None:
        """Row of ``word``, falling back to its lower-case form; None when absent."""
        i = self.index.get(word)
        if i is None:
            i = self.index.get(word.lower())
        return i

    @property
    def lowercase(self) -> bool:
        """Whether a text is lower-cased before its words are looked up.

        As the corpus was read when the metadata records it, else when every word of the table is
        lower-case (a table from elsewhere).
        """
        recorded = (self.meta.get("corpus_config") or {}).get("lowercase")
        return recorded if recorded is not None else all(w == w.lower() for w in self.words)

    def unit(self) -> np.ndarray:
        """Rows scaled to unit L2 norm (zero rows stay zero); computed once, read-only."""
        if self._unit is None:
            norms = np.linalg.norm(self.matrix, axis=1, keepdims=True)
            unit = self.matrix / np.maximum(norms, 1e-12)
            unit.setflags(write=False)
            self._unit = unit
        return self._unit

    def query(self, words: Sequence[str]) -> np.ndarray:
        """float32 ``[len(words), dim]``: each word's row (found as :meth:`row_of` does) or its composition.

        A word the table lacks is composed from the teacher's subwords when the vectors carry a
        composer; without one it is a ``KeyError``.
        """
        rows = [self.row_of(w) for w in words]
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        known = [k for k, r in enumerate(rows) if r is not None]
        missing = [k for k, r in enumerate(rows) if r is None]
        out[known] = self.matrix[[r for r in rows if r is not None]]
        if missing:
            if self.composer is None:
                raise KeyError(f"{words[missing[0]]!r} is not in the vectors, which have no composer")
            out[missing] = self.composer.compose([words[k] for k in missing])
        return out

    def similarity(self, a: str, b: str) -> float:
        """Cosine of the vectors of ``a`` and ``b`` (composed where the table lacks them)."""
        x, y = self.query([a, b]).astype(np.float64)
        return float(x @ y / max(np.linalg.norm(x) * np.linalg.norm(y), 1e-24))

    def composed(self, words: Sequence[str]) -> list[bool]:
        """For each of ``words``, whether :meth:`query` composes it (the table lacks it, as row_of looks).

        A composed vector is the mean of the teacher's pieces mapped into the table's space: less
        sure than a row the corpus trained, so a caller can tell the two apart (``neighbours`` marks
        them with ``*``).
        """
        return [self.row_of(w) is None for w in words]

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
                    given.add(self.row_of(item))
                    vec = self.query([item])[0]
                else:
                    vec = np.asarray(item, dtype=np.float64)
                    if vec.shape != (self.dim,):
                        raise ValueError(f"a query vector must have shape ({self.dim},), not {vec.shape}")
                target += sign * vec / max(np.linalg.norm(vec), 1e-12)
        sims = self.unit() @ (target / np.maximum(np.linalg.norm(target), 1e-12))
        for i in given - {None}:
            sims[i] = -np.inf
        top = np.argsort(-sims, kind="stable")[:topn]
        return [(self.words[j], float(sims[j])) for j in top if np.isfinite(sims[j])]

    def row_weights(self, weighting: Weighting | str, sif_a: float = 1e-3) -> np.ndarray:
        """float32 ``[len(self)]``: each word's weight ``a / (a + p(w))`` in a text's mean (ones for none).

        ``sif``: ``p(w) = c(w) / sum c`` over the table's counts (Arora et al. 2017, "A simple but
        tough-to-beat baseline for sentence embeddings", Algorithm 1 line 1). ``zipf``: the table's
        rows are taken as ranked by frequency (vocabularies are written most frequent first) and
        ``p`` of the r-th row is ``(r+1)^-1 / sum_k (k+1)^-1`` over the n rows, what Model2Vec's
        ``distill`` does for its ``sif_coefficient`` when no counts are known.
        """
        weighting = Weighting(weighting)
        if weighting is Weighting.NONE:
            return np.ones(len(self), dtype=np.float32)
        if weighting is Weighting.SIF:
            if self.counts is None or not self.counts.sum():
                raise UserError(
                    "weighting 'sif' needs word counts, which these vectors lack (vectors from a cache "
                    "carry them); use weighting 'zipf', which takes frequencies from the words' order"
                )
            p = self.counts / self.counts.sum()
        else:
            inverse_rank = 1.0 / np.arange(2, len(self) + 2)
            p = inverse_rank / inverse_rank.sum()
        return (sif_a / (sif_a + p)).astype(np.float32)

    def encode(
        self,
        texts: Sequence[str],
        *,
        weighting: Weighting | str = Weighting.NONE,
        sif_a: float = 1e-3,
        normalize: bool = True,
        batch: int = 4096,
    ) -> np.ndarray:
        """float32 ``[len(texts), dim]``: each text's weighted mean word vector ``v(s) = 1/|s| sum a(w) v_w``.

        A text is split into words as the corpus was read (:func:`~ctx2static.words.tokenize`,
        lower-cased when :attr:`lowercase`). A word the table lacks is left out, as Model2Vec leaves
        out its unknown token, unless the vectors carry a composer: then each of its teacher pieces
        enters with its composer row and weight 1 (an unseen word, ``p(w) = 0``), as a token bag
        (Model2Vec, sentence-transformers, our exports) counts them, so an exported folder encodes as
        this does; the pieces' mean is the word's composed vector (:meth:`query`). ``|s|`` counts the
        terms, and a text with none is a zero row. The weights ``a(w)`` are :meth:`row_weights`. SIF's second
        step (removing the sentences' first principal component) is left out: it is fitted on a set
        of texts, so a text's vector would depend on the others. With ``normalize`` each row is
        scaled to unit L2 norm. Texts are pooled ``batch`` at a time (one sparse [batch, words]
        matrix times the table), so memory does not grow with their number.
        """
        with speaking_to(Style.KEYWORD, unless_said=True):  # a Python caller's keywords
            config = configure(EncodeConfig, {"weighting": weighting, "sif_a": sif_a, "normalize": normalize})
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise OptionError(f"texts={type(texts).__name__}: pass a list of texts (one str each)", "texts")
        if batch < 1:
            raise OptionError(f"batch={batch} must be at least 1", "batch")
        weights = self.row_weights(config.weighting, config.sif_a)
        lowercase = self.lowercase
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), batch):
            out[start : start + batch] = self._pool(texts[start : start + batch], weights, lowercase)
        if config.normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def _pool(self, texts: Sequence[str], weights: np.ndarray, lowercase: bool) -> np.ndarray:
        """The weighted means of ``texts``: a sparse [texts, rows + pieces used] matrix times those rows."""
        from scipy import sparse

        n = len(self)
        split = [[(w, self.row_of(w)) for w in tokenize(text, lowercase)] for text in texts]
        pieces: dict[str, list[int]] = {}
        if self.composer is not None:
            unknown = list(dict.fromkeys(w for words in split for w, i in words if i is None))
            pieces = dict(zip(unknown, self.composer.token_ids(unknown), strict=True))
        piece_col: dict[int, int] = {}  # a teacher piece's column, after the table's rows
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        for t, words in enumerate(split):
            found = [(i, float(weights[i])) for _, i in words if i is not None]
            found += [
                (n + piece_col.setdefault(p, len(piece_col)), 1.0)
                for w, i in words
                if i is None
                for p in pieces.get(w, ())
            ]
            rows += [t] * len(found)
            cols += [c for c, _ in found]
            vals += [w / len(found) for _, w in found]
        shape = (len(texts), n + len(piece_col))
        mix = sparse.csr_matrix((np.array(vals, np.float32), (rows, cols)), shape=shape, dtype=np.float32)
        out = np.asarray(mix[:, :n] @ self.matrix, dtype=np.float32)
        if piece_col:
            assert self.composer is not None
            out += mix[:, n:] @ self.composer.rows[list(piece_col)].astype(np.float32)
        return out

    def reduced(
        self,
        dims: int,
        *,
        texts: Iterable[str] | None = None,
        drop: int = 0,
        weighting: Weighting | str = Weighting.NONE,
        sif_a: float = 1e-3,
    ) -> Vectors:
        """These vectors on ``dims`` principal axes: of the table's rows, or of ``texts``' mean vectors.

        Each row becomes ``(v - m) P``, ``P`` the eigenvectors of a covariance taken in order of
        their eigenvalues, from the ``drop + 1``-th on (each signed so that its largest entry is
        positive, so a refit gives the same table). Of the rows (``texts`` None: PCA as Model2Vec's
        ``pca_dims``), ``m`` is the rows' mean. Of ``texts`` (sentence-level PCA, Wada et al. 2025),
        the covariance and ``m`` are those of the texts' :meth:`encode` means at ``weighting``
        before normalising (a text with no known word left out): a sentence's mean is then its old
        mean less ``m``, mapped by ``P``, so the axes kept are those along which sentences differ,
        not words, and ``drop`` removes the directions every sentence shares most (their ABTT).
        The composer's rows go through the same map; it is affine, so a composed word stays the map
        of its pieces' mean. The metadata's ``pca`` records the dims kept, those of the table, the
        axes dropped and the texts fitted on (0: the rows).
        """
        if not 1 <= dims <= self.dim - drop:
            bound, side = (self.dim - drop, "or less") if dims > self.dim - drop else (1, "or more")
            less = f" less {spell('pca_drop', drop)}" if drop else ""
            raise OptionError(
                f"{spell('dims', dims)}: the table has {self.dim} dimensions{less}; "
                f"use {spell('dims', bound)} {side}",
                "dims",
            )
        mean, scatter, n = np.zeros(self.dim), np.zeros((self.dim, self.dim)), 0
        for x in self._blocks(texts, weighting, sif_a):
            mean += x.sum(0)
            scatter += x.T @ x
            n += len(x)
        if texts is not None and n < 2:
            raise OptionError(
                f"{spell('pca_text')}: {n} text(s) hold a word of the table; PCA needs at least 2", "pca_text"
            )
        mean /= max(n, 1)
        values, vecs = np.linalg.eigh(scatter / max(n, 1) - np.outer(mean, mean))
        axes = vecs[:, np.argsort(-values, kind="stable")[drop : drop + dims]]
        axes *= np.sign(axes[np.abs(axes).argmax(0), np.arange(dims)])
        shift = -mean @ axes
        matrix = np.empty((len(self), dims), dtype=np.float32)
        for start in range(0, len(self), _BLOCK):
            matrix[start : start + _BLOCK] = (
                np.asarray(self.matrix[start : start + _BLOCK], np.float64) @ axes + shift
            )
        composer = None
        if self.composer is not None:
            composer = replace(self.composer, rows=map_rows(self.composer.rows, axes, shift))
            composer._tokenizer = self.composer._tokenizer
        pca = {"dims": dims, "of": self.dim, "drop": drop, "texts": n if texts is not None else 0}
        meta: VectorsMeta = {**self.meta, "pca": pca}
        return Vectors(list(self.words), matrix, self.counts, meta, composer)

    def _blocks(
        self, texts: Iterable[str] | None, weighting: Weighting | str, sif_a: float
    ) -> Iterator[np.ndarray]:
        """float64 blocks of the table's rows, or of ``texts``' unnormalised means (none all-zero)."""
        if texts is None:
            for start in range(0, len(self), _BLOCK):
                yield np.asarray(self.matrix[start : start + _BLOCK], dtype=np.float64)
            return
        batch: list[str] = []
        for text in itertools.chain(texts, [None]):
            if text is not None:
                batch.append(text)
            if batch and (text is None or len(batch) == _BLOCK):
                x = self.encode(batch, weighting=weighting, sif_a=sif_a, normalize=False).astype(np.float64)
                yield x[np.any(x != 0, axis=1)]
                batch = []

    def with_composed(self, words: Sequence[str]) -> Vectors:
        """These vectors plus, after the last row, a composed row for each of ``words`` the table lacks.

        The new table is allocated once and the composed rows written into it a chunk at a time:
        composing all, then joining, peaked 10.6 GiB above the start for 300k words added to a
        30k x 768 table (0.94 GiB); this peaks 1.06 GiB (memory.PeakRss, 8-letter words).
        """
        new = list(dict.fromkeys(w for w in words if self.row_of(w) is None))
        if not new:
            return self
        if self.composer is None:
            raise KeyError(f"{new[0]!r} is not in the vectors, which have no composer")
        n = len(self.words)
        matrix = np.empty((n + len(new), self.dim), np.result_type(self.matrix.dtype, np.float32))
        matrix[:n] = self.matrix
        for start in range(0, len(new), COMPOSE_CHUNK):
            chunk = new[start : start + COMPOSE_CHUNK]
            matrix[n + start : n + start + len(chunk)] = self.composer.compose(chunk)
        counts = None if self.counts is None else np.concatenate([self.counts, np.zeros(len(new), np.int64)])
        return Vectors([*self.words, *new], matrix, counts, self.meta.copy(), self.composer)

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
        """Write atomically in the format the path implies (see module docstring); never NaN or infinity."""
        path = Path(path)
        require_finite(
            self, f"{path}: not written", "the training diverged (lower its lr) or its input holds NaN"
        )
        if saves_folder(path):
            self._save_native(path)
            return path
        binary = path.suffix == ".bin"
        require_word2vec_words(self.words, path)
        with atomic_files() as group:  # the table, its sidecar and composer appear together or not at all
            with atomic_write(path, "wb", group=group) as fh:
                fh.write(f"{len(self.words)} {self.dim}\n".encode())
                for w, row in zip(self.words, self.matrix, strict=True):
                    if binary:
                        fh.write(w.encode() + b" " + row.astype("<f4").tobytes() + b"\n")
                    else:
                        fh.write((w + " " + " ".join(f"{x:.6g}" for x in row) + "\n").encode())
            meta = self._meta_with_composer(path.parent, path.name + ".", group)
            files = {_role(target, path): sha256_file(tmp) for tmp, target in group if tmp is not None}
            with atomic_write(sidecar(path), "w", encoding="utf-8", group=group) as fh:
                counts = None if self.counts is None else self.counts.tolist()
                json.dump({"meta": meta, "counts": counts, "files": files}, fh)
            table, *composer, side = group
            group[:] = [side, *composer, table]  # until the table's rename, the sidecar names another table
        return path

    def _meta_with_composer(self, folder: Path, prefix: str, group: Renames | None = None) -> dict[str, Any]:
        """The meta to write: the composer's settings under "composer" once its files are written."""
        meta = {k: v for k, v in self.meta.items() if k != "composer"}
        if self.composer is not None:
            meta["composer"] = self.composer.save(folder, prefix, group)
        else:
            Composer.remove(folder, prefix, group)  # a composer saved there before belongs to other vectors
        return meta

    def _save_native(self, path: Path) -> None:
        with atomic_dir(path, may_hold=(ROWS, TOKENIZER)) as tmp:  # a composer saved there before
            with open(tmp / NATIVE_FILES[0], "wb") as fh:
                write_npy(fh, self.matrix)
            with open(tmp / NATIVE_FILES[1], "w", encoding="utf-8") as fh:
                counts = self.counts if self.counts is not None else np.zeros(len(self.words), int)
                for w, c in zip(self.words, counts.tolist(), strict=True):
                    fh.write(f"{escape_word(w)}\t{c}\n")
            meta = self._meta_with_composer(tmp, "")
            with open(tmp / NATIVE_FILES[2], "w", encoding="utf-8") as fh:
                json.dump(meta, fh, indent=1)

    @classmethod
    def load(
        cls, path: str | os.PathLike, mmap: bool = False, nonfinite: NonFinite | str = NonFinite.ERROR
    ) -> Vectors:
        """Read any supported format; a malformed file is a one-line :class:`UserError`.

        Words whose vectors hold NaN or infinity are an error naming the first of them, or with
        ``nonfinite="drop"`` are left out (a warning says how many).
        """
        vectors = cls._load(Path(path), mmap)
        bad = nonfinite_rows(vectors.matrix)
        if not len(bad):
            return vectors
        if NonFinite(nonfinite) is NonFinite.ERROR:
            require_finite(vectors, str(path), "pass --nonfinite drop to leave them out, or make them again")
        log.warning(
            "%s: left out %d words whose vectors hold NaN or infinity (first: %r)",
            path,
            len(bad),
            vectors.words[bad[0]],
        )
        keep = np.setdiff1d(np.arange(len(vectors)), bad)
        counts = None if vectors.counts is None else vectors.counts[keep]
        return replace(
            vectors, words=[vectors.words[i] for i in keep], matrix=vectors.matrix[keep], counts=counts
        )

    @classmethod
    def _load(cls, path: Path, mmap: bool) -> Vectors:
        if path.is_dir():
            return cls._load_native(path, mmap)
        if not path.is_file():
            raise InputError(path, f"{path}: no such vectors file or folder")
        path = read_through(path)
        with open(path, "rb") as fh:
            head = fh.readline()
            try:
                n, d = (int(x) for x in head.split())
            except ValueError:
                raise InputError(
                    path,
                    f"{path}: line 1 must be the word2vec header '<count> <dim>'; "
                    "add it or save the vectors with ctx2static/gensim",
                ) from None
            if path.suffix == ".bin":
                words, matrix = read_binary(fh, path, n, d)
            else:
                words, matrix = read_text(fh, path, n, d)
        meta: VectorsMeta = {}
        counts = None
        files: dict[str, str] | None = None
        side = sidecar(path)
        if side.is_file():
            data = sidecar_data(side, n)
            files = data["files"]
            if files is not None:
                _check_set(path, side, files, [path])
            meta = data["meta"]
            if data["counts"] is not None:
                counts = np.array(data["counts"], dtype=np.int64)
        keep, _ = _unique_rows(words, path)
        if keep is not None:
            words, matrix = [words[i] for i in keep], matrix[keep]
            counts = None if counts is None else counts[keep]
        composer = Composer.load(path.parent, path.name + ".", meta.get("composer"), d)
        if files is not None:  # after the composer's own checks, whose lines say what is damaged
            _check_set(path, side, files, [p for p in _composer_files(path) if p.is_file()])
        return cls(words, matrix, counts, meta, composer)

    @classmethod
    def _load_native(cls, path: Path, mmap: bool) -> Vectors:
        for name in ("vectors.npy", "vocab.tsv"):
            if not (path / name).is_file():
                raise InputError(path, f"{path}: folder lacks {name}; it is not a ctx2static vectors folder")
        matrix = _load_npy(path / "vectors.npy", mmap)
        words, counts = [], []
        for n, line in read_lines(path / "vocab.tsv", "a vectors folder's vocab.tsv (word<TAB>count)"):
            parts = line.split("\t")
            if len(parts) != 2 or not is_count(parts[1]):
                raise InputError(
                    path / "vocab.tsv",
                    f"{path / 'vocab.tsv'}: line {n} is not 'word<TAB>count'; re-save the vectors",
                )
            words.append(unescape_word(parts[0]))
            counts.append(int(parts[1]))
        if len(words) != matrix.shape[0]:
            raise InputError(
                path, f"{path}: vocab.tsv has {len(words)} words but vectors.npy {matrix.shape[0]} rows"
            )
        meta_path = path / "meta.json"
        meta = checked_meta(json_dict(meta_path), meta_path) if meta_path.is_file() else {}
        keep, index = _unique_rows(words, path / "vocab.tsv")
        counts_array = np.array(counts, np.int64)
        if keep is not None:
            words, matrix, counts_array = list(index), matrix[keep], counts_array[keep]
        return cls(
            words, matrix, counts_array, meta, Composer.load(path, "", meta.get("composer"), matrix.shape[1])
        )


Query = str | np.ndarray | Sequence[str | np.ndarray]
"""A word, a vector, or a list of words and vectors (:meth:`Vectors.most_similar`)."""


def nearest_words(
    path: str | os.PathLike, words: Sequence[str], analogies: Sequence[tuple[str, str, str]], topn: int = 10
) -> tuple[dict[str, list[tuple[str, float]]], list[str]]:
    """The ``topn`` nearest words of each of ``words`` and the answers of each analogy (a, b, c) at ``path``.

    Keyed by the word, or ``a:b::c:?``, a word outside the table marked ``*``; returned with the
    words that were composed. Outside a table without a composer a word is a one-line error.
    """
    if not words and not analogies:
        raise UserError(f"give words to look up, or {spell('analogy')} A B C")
    v = Vectors.load(path, mmap=True)
    asked = [*words, *(w for triple in analogies for w in triple)]
    unknown = [w for w, made in zip(asked, v.composed(asked), strict=True) if made]
    paths = [w for w in unknown if w.endswith(os.sep) or os.path.exists(w)]  # "and/or" stays a word
    if paths:  # a second table given as a word would be composed from its name's subwords, silently
        rest = " ".join(w for w in words if w not in paths) or "WORD"
        raise InputError(
            paths[0],
            f"{paths[0]}: a path where a word is expected; neighbours looks words up in one table, its first "
            f"argument: for this one, run ctx2static neighbours {paths[0]} {rest}",
        )
    if unknown and v.composer is None:
        raise InputError(
            path,
            f"{path}: '{unknown[0]}' is not among its {len(v):,} words and the vectors have no composer "
            f"(fit one: ctx2static compose {path} --cache DIR --out NEW)",
        )
    mark = {w: w + "*" * (w in unknown) for w in asked}
    columns = {mark[w]: v.most_similar(w, topn) for w in words}
    for a, b, c in analogies:
        columns[f"{mark[a]}:{mark[b]}::{mark[c]}:?"] = v.most_similar([b, c], topn, negative=[a])
    return columns, unknown


def _items(query: Query) -> list[str | np.ndarray]:
    if isinstance(query, str) or (isinstance(query, np.ndarray) and query.ndim == 1):
        return [query]
    return list(query)


def _unique_rows(words: list[str], path: Path) -> tuple[np.ndarray | None, dict[str, int]]:
    """The rows to keep (each word's first; None when no word repeats) and the kept words' index.

    As gensim's ``load_word2vec_format``: the first occurrence wins; one warning (not one per word)
    names ``path``, how many rows were left out and the first repeated word.
    """
    first: dict[str, int] = {}
    for i, w in enumerate(words):
        first.setdefault(w, i)
    if len(first) == len(words):
        return None, first
    twice = next(w for i, w in enumerate(words) if first[w] != i)
    log.warning(
        "%s: a word listed more than once keeps its first row, as in gensim "
        "(%d later rows left out; the first repeated word: %r)",
        path,
        len(words) - len(first),
        twice,
    )
    keep = np.fromiter(first.values(), dtype=np.int64, count=len(first))
    return keep, {w: k for k, w in enumerate(first)}


def _is_float32(matrix: Any) -> bool:
    """Whether ``matrix`` is a float32 array in native byte order: kept as it is (a memory map too)."""
    return isinstance(matrix, np.ndarray) and matrix.dtype == np.dtype(np.float32)


TABLE = "table"
"""The word2vec file's role in a sidecar's ``files`` (the composer's files go by their suffix)."""


def _role(file: Path, table: Path) -> str:
    """What ``file`` is to the word2vec file ``table``: ``table``, or the composer file's suffix."""
    return TABLE if file == table else file.name.removeprefix(table.name + ".")


def _composer_files(table: Path) -> list[Path]:
    """Where the composer of the word2vec file ``table`` is kept, beside it."""
    return [table.with_name(f"{table.name}.{name}") for name in (ROWS, TOKENIZER)]


def _check_set(path: Path, side: Path, files: dict[str, str], present: list[Path]) -> None:
    """A one-line error unless each of ``present`` (the table, composer files) is what ``side`` names.

    A sidecar beside files it was not saved with (a save stopped between its renames, a file
    replaced alone) would give a table another save's metadata, counts or composer, silently.
    Composer files deleted both are the fix a damaged composer's line gives: the table then loads
    without one.
    """
    for file in present:
        want = files.get(_role(file, path))
        if sha256_file(file) == want:
            continue
        what = f"is not the file {side.name} was saved with" if want else f"was not saved with {side.name}"
        also = (
            " and the composer's files beside it" if any(f.is_file() for f in _composer_files(path)) else ""
        )
        raise InputError(
            file,
            f"{file}: {what}: the set is mixed (a save stopped between its renames, or a file replaced "
            f"alone); restore it, or delete {side.name}{also} to load the table alone",
        )


def _load_npy(path: Path, mmap: bool) -> np.ndarray:
    """A 2-d float matrix from a .npy file; a damaged or foreign file is a one-line error."""
    try:
        matrix = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(path, f"{path}: not a readable .npy matrix ({exc}); re-save the vectors") from None
    if matrix.ndim != 2 or matrix.dtype.kind != "f":
        raise InputError(
            path, f"{path}: holds a {matrix.dtype} array of shape {matrix.shape}, not a 2-d float matrix"
        )
    return matrix
