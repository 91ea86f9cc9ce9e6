"""The teacher cache on disk, and its reader (numpy, h5py and pyarrow only: no torch needed).

Layout of a cache folder::

    manifest.json              teacher, corpus, vocabulary, options, per-shard sha256 checksums
    vocab.tsv                  the static vocabulary (word<TAB>count), ids are line numbers
    shard_00000.h5             dense arrays of N sentences (see SHARD_ARRAYS)
    shard_00000.attn.parquet   attention context words (variable length per occurrence), optional
    vocab.h5                   per-vocabulary-word baselines: token_emb, word_emb
    teacher_tokens.parquet     teacher token id -> token string -> static word id (for substitutes)
    pca.h5                     with --pca: mean, components (occ_vec = (v - mean) @ components.T)

An *occurrence* is a word of a sentence that is in the static vocabulary and was not cut by the
teacher's maximum length; every per-occurrence array has one row per occurrence, in corpus order.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ctx2static.errors import UserError
from ctx2static.fileio import atomic_write
from ctx2static.pipeline.vocab import Vocab

MANIFEST = "manifest.json"
VOCAB_TSV = "vocab.tsv"
VOCAB_H5 = "vocab.h5"
TEACHER_TOKENS = "teacher_tokens.parquet"
PCA_H5 = "pca.h5"
FORMAT_VERSION = 1

# name -> what it holds (cache info prints this)
SHARD_ARRAYS = {
    "sent_para": "paragraph id per sentence",
    "sent_offsets": "sentence start offsets into word_ids (n+1)",
    "word_ids": "static word id per word (-1: out of vocabulary)",
    "word_aligned": "False where the teacher's max length cut the word",
    "sent_ctx": "mean of the last layer over all tokens of the sentence (X2Static Eq. 3)",
    "para_ctx": "per-sentence mean when the teacher saw the paragraph (X2Static Eq. 4; sent_ctx if cut)",
    "occ_vec": "subword-pooled last-layer vector per occurrence (fp16; PCA-reduced with --pca)",
    "topk_ids": "LM top-k substitute teacher token ids per occurrence (SemGloVe md)",
    "topk_scores": "raw logits of the substitutes",
}
ATTN_COLUMNS = ("occ", "ctx", "offset", "weight")


def shard_name(i: int) -> str:
    """Stem of shard ``i``."""
    return f"shard_{i:05d}"


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_h5(path: Path, arrays: dict[str, np.ndarray]) -> str:
    """Write arrays to one HDF5 file atomically and reproducibly (no timestamps); return its sha256."""
    with atomic_write(path, "w+b") as fh, h5py.File(fh, "w", libver="v110") as f:
        for key, arr in arrays.items():
            f.create_dataset(key, data=arr, track_times=False)
    return sha256_file(path)


def write_parquet(path: Path, columns: dict[str, np.ndarray]) -> str:
    """Write columns to one Parquet file atomically; return its sha256."""
    table = pa.table({k: pa.array(v) for k, v in columns.items()})
    with atomic_write(path, "wb") as fh:
        pq.write_table(table, fh, compression="zstd")
    return sha256_file(path)


def read_manifest(folder: Path) -> dict | None:
    """The manifest of a cache folder, or None when there is none yet."""
    p = folder / MANIFEST
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        raise UserError(f"{p}: not valid JSON; delete the cache folder and extract again") from None


def write_manifest(folder: Path, manifest: dict) -> None:
    """Replace manifest.json atomically."""
    with atomic_write(folder / MANIFEST, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True)
        fh.write("\n")


@dataclass
class Shard:
    """The arrays of one shard (see SHARD_ARRAYS), plus attention contexts when cached."""

    index: int
    arrays: dict[str, np.ndarray]
    attention: dict[str, np.ndarray] | None = None

    def __getitem__(self, key: str) -> np.ndarray:
        return self.arrays[key]

    def __contains__(self, key: str) -> bool:
        return key in self.arrays

    @property
    def n_sentences(self) -> int:
        """Sentences in this shard."""
        return len(self.arrays["sent_para"])

    def occurrences(self) -> np.ndarray:
        """Positions (into ``word_ids``) of the occurrences: in-vocabulary, aligned words."""
        return np.flatnonzero((self.arrays["word_ids"] >= 0) & self.arrays["word_aligned"])

    def occurrence_sentence(self) -> np.ndarray:
        """Sentence (row of ``sent_ctx``) of each occurrence."""
        return np.searchsorted(self.arrays["sent_offsets"], self.occurrences(), side="right") - 1

    def sentence_words(self, i: int) -> np.ndarray:
        """Static word ids of sentence ``i`` (-1 for out-of-vocabulary words)."""
        off = self.arrays["sent_offsets"]
        return self.arrays["word_ids"][off[i] : off[i + 1]]


@dataclass
class Cache:
    """Read access to a finished (or partial) teacher cache; students use only this."""

    folder: Path
    manifest: dict
    vocab: Vocab = field(repr=False)

    @classmethod
    def open(cls, folder: str | os.PathLike) -> Cache:
        """Open a cache folder written by ``extract``."""
        folder = Path(folder)
        manifest = read_manifest(folder)
        if manifest is None:
            raise UserError(f"{folder}: no {MANIFEST}; run 'ctx2static extract' to build a cache there")
        return cls(folder, manifest, Vocab.load(folder / VOCAB_TSV))

    @property
    def complete(self) -> bool:
        """True once every shard and the vocabulary signals are written."""
        return bool(self.manifest.get("complete"))

    @property
    def signals(self) -> list[str]:
        """Names of the per-shard arrays this cache holds."""
        return list(self.manifest["signals"])

    @property
    def n_shards(self) -> int:
        """Complete shards."""
        return len(self.manifest["shards"])

    def shard(self, i: int, keys: list[str] | None = None) -> Shard:
        """Load shard ``i`` (all arrays, or only ``keys``; the index arrays always come along)."""
        stem = shard_name(i)
        with h5py.File(self.folder / f"{stem}.h5", "r") as f:
            names = list(f.keys()) if keys is None else sorted({*keys, *_INDEX_ARRAYS} & set(f.keys()))
            arrays = {k: f[k][()] for k in names}
        attn = None
        ap = self.folder / f"{stem}.attn.parquet"
        if ap.is_file() and (keys is None or "attention" in keys):
            t = pq.read_table(ap)
            attn = {c: t.column(c).to_numpy() for c in ATTN_COLUMNS}
        return Shard(i, arrays, attn)

    def shards(self, keys: list[str] | None = None) -> Iterator[Shard]:
        """Iterate the complete shards in corpus order."""
        for i in range(self.n_shards):
            yield self.shard(i, keys)

    def _final_file(self, name: str) -> Path:
        """A file extract writes after the last shard: one-line error while the cache is unfinished."""
        path = self.folder / name
        if not path.exists():
            raise UserError(
                f"{self.folder}: no {name} yet (extract writes it after the last shard); "
                "re-run the same extract command to finish the cache"
            )
        return path

    def vocab_arrays(self) -> dict[str, np.ndarray]:
        """Per-vocabulary-word baselines: ``token_emb`` (input embeddings) and ``word_emb`` (word alone)."""
        with h5py.File(self._final_file(VOCAB_H5), "r") as f:
            return {k: f[k][()] for k in f}

    def pca(self) -> dict[str, np.ndarray] | None:
        """``mean``, ``components`` and ``explained_variance_ratio`` when vectors were PCA-reduced."""
        if PCA_H5 not in self.manifest.get("aux_files", {}):
            return None
        with h5py.File(self.folder / PCA_H5, "r") as f:
            return {k: f[k][()] for k in f}

    def teacher_tokens(self) -> dict[str, np.ndarray]:
        """Teacher token table: ``id``, ``token`` (string) and ``word`` (static word id or -1)."""
        t = pq.read_table(self._final_file(TEACHER_TOKENS))
        return {c: t.column(c).to_numpy(zero_copy_only=False) for c in t.column_names}

    def files(self) -> dict[str, str]:
        """Every checksummed file -> its recorded sha256."""
        out: dict[str, str] = {}
        for s in self.manifest["shards"]:
            out.update(s["files"])
        out.update(self.manifest.get("aux_files", {}))
        out.update(self.manifest.get("vocab_files", {}))
        return out

    def verify(self) -> list[str]:
        """Recompute every checksum; return one line per problem (empty when the cache is valid)."""
        problems = []
        for name, digest in self.files().items():
            p = self.folder / name
            if not p.is_file():
                problems.append(f"{name}: missing")
            elif sha256_file(p) != digest:
                problems.append(f"{name}: checksum mismatch")
        return problems


_INDEX_ARRAYS = ("sent_para", "sent_offsets", "word_ids", "word_aligned")
