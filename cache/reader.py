"""Reading a teacher cache (numpy, h5py and pyarrow only: no torch, no teacher)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np
import pyarrow.parquet as pq

from ctx2static.cache.layout import (
    ATTN_COLUMNS,
    FORMAT_VERSION,
    INDEX_ARRAYS,
    MANIFEST,
    PCA_H5,
    SIGNALS,
    TEACHER_TOKENIZER,
    TEACHER_TOKENS,
    VOCAB_H5,
    VOCAB_TSV,
    shard_name,
)
from ctx2static.errors import UserError
from ctx2static.fileio import read_json, sha256_file
from ctx2static.text.vocab import Vocab


def read_manifest(folder: Path) -> dict | None:
    """The manifest of a cache folder, or None when there is none yet."""
    p = folder / MANIFEST
    if not p.is_file():
        return None
    return read_json(p, fix="delete the cache folder and extract again")


@dataclass
class Shard:
    """The arrays of one shard (see ``cache.layout.SIGNALS``), plus attention contexts when cached."""

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
        version = manifest.get("identity", {}).get("format")
        if version != FORMAT_VERSION:
            raise UserError(
                f"{folder}: cache format {version} (this ctx2static reads format {FORMAT_VERSION}); "
                "re-run extract into a new folder"
            )
        return cls(folder, manifest, Vocab.load(folder / VOCAB_TSV))

    @property
    def complete(self) -> bool:
        """True once every shard and the vocabulary signals are written."""
        return bool(self.manifest.get("complete"))

    @property
    def signals(self) -> list[str]:
        """Names of the per-shard signals this cache holds."""
        return list(self.manifest["signals"])

    @property
    def n_shards(self) -> int:
        """Complete shards."""
        return len(self.manifest["shards"])

    def totals(self, key: str) -> int:
        """A corpus total recorded at the end of extract (``n_words``, ``n_occurrences``...), 0 before."""
        return int(self.manifest.get("totals", {}).get(key, 0))

    def shard(self, i: int, keys: list[str] | None = None) -> Shard:
        """Load shard ``i`` (all arrays, or only ``keys``; the index arrays always come along).

        Asking for a signal the cache does not hold is a one-line error naming the extract flag.
        """
        for key in keys or ():
            if key not in self.signals:
                raise UserError(
                    f"{self.folder}: the cache has no '{key}'; extract again with {SIGNALS[key].flag}"
                )
        stem = shard_name(i)
        with h5py.File(self.folder / f"{stem}.h5", "r") as f:
            names = list(f.keys()) if keys is None else sorted({*keys, *INDEX_ARRAYS} & set(f.keys()))
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
        """Per-vocabulary-word tables: ``token_emb`` (input embeddings), ``word_emb`` (word alone), ..."""
        with h5py.File(self._final_file(VOCAB_H5), "r") as f:
            return {k: f[k][()] for k in f}

    def word_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Each word's contextual vectors summed over the corpus (float64 [V, d]) and their counts.

        From ``vocab.h5`` once the cache is complete, else from the running sums of the shards
        committed so far (a partial cache trains on what is there).
        """
        if self.complete:
            with h5py.File(self._final_file(VOCAB_H5), "r") as f:
                return f["occ_sum"][()].astype(np.float64), f["occ_count"][()]
        running = self.manifest.get("word_sums")
        if running is None:
            raise UserError(f"{self.folder}: no shard is complete yet; re-run the same extract command")
        with h5py.File(self.folder / running["file"], "r") as f:
            return f["sum"][()], f["count"][()]

    def pca(self) -> dict[str, np.ndarray] | None:
        """``mean``, ``components`` and ``explained_variance_ratio`` when vectors were PCA-reduced."""
        if PCA_H5 not in self.manifest.get("aux_files", {}):
            return None
        with h5py.File(self.folder / PCA_H5, "r") as f:
            return {k: f[k][()] for k in f}

    def teacher_tokenizer(self) -> str:
        """The teacher's tokenizer as ``tokenizers`` JSON (load with ``Tokenizer.from_str``)."""
        return self._final_file(TEACHER_TOKENIZER).read_text(encoding="utf-8")

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
