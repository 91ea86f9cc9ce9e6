"""Writing a teacher cache: identity check, resume, atomic shards, the manifest after each shard.

Every file is written whole (temp name, fsync, rename) and recorded in the manifest only after,
with its sha256; the manifest is rewritten after every shard. A writer opened on a folder that
holds a cache of the same identity continues after its last recorded shard, so a run that was
killed and run again writes the same bytes as one uninterrupted run; a different identity is
refused. ``extract`` (the teacher stage) and the tests' synthetic caches both write through it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ctx2static.cache.layout import (
    FORMAT_VERSION,
    MANIFEST,
    TEACHER_TOKENS,
    VOCAB_H5,
    VOCAB_TSV,
    shard_name,
    shard_signals,
)
from ctx2static.cache.reader import read_manifest
from ctx2static.errors import UserError
from ctx2static.fileio import atomic_write, sha256_file, write_json
from ctx2static.text.vocab import Vocab


def write_h5(path: Path, arrays: Mapping[str, np.ndarray]) -> str:
    """Write arrays to one HDF5 file atomically and reproducibly (no timestamps); return its sha256."""
    with atomic_write(path, "w+b") as fh, h5py.File(fh, "w", libver="v110") as f:
        for key, arr in arrays.items():
            f.create_dataset(key, data=arr, track_times=False)
    return sha256_file(path)


def read_h5(path: Path) -> dict[str, np.ndarray]:
    """Every array of one HDF5 file."""
    with h5py.File(path, "r") as f:
        return {k: f[k][()] for k in f}


def write_parquet(path: Path, columns: Mapping[str, np.ndarray]) -> str:
    """Write columns to one Parquet file atomically; return its sha256."""
    table = pa.table({k: pa.array(v) for k, v in columns.items()})
    with atomic_write(path, "wb") as fh:
        pq.write_table(table, fh, compression="zstd")
    return sha256_file(path)


def _diff(a: Mapping[str, Any], b: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two nested dicts."""
    out = []
    for k in sorted(set(a) | set(b)):
        if isinstance(a.get(k), dict) and isinstance(b.get(k), dict):
            out += _diff(a[k], b[k], f"{prefix}{k}.")
        elif a.get(k) != b.get(k):
            out.append(f"{prefix}{k}")
    return out


class CacheWriter:
    """Writes one cache folder shard by shard; see the module docstring for the guarantees."""

    def __init__(self, folder: Path, manifest: dict[str, Any]) -> None:
        self.folder = folder
        self.manifest = manifest

    @classmethod
    def open(cls, folder: str | Path, identity: Mapping[str, Any], vocab: Vocab) -> CacheWriter:
        """Start a cache in ``folder``, or continue the one there if it has the same ``identity``.

        ``identity`` is everything that determines the content (teacher, corpus, vocabulary,
        ``options`` of the extract); the writer adds the format version and derives the signals
        from ``identity["options"]``.
        """
        folder = Path(folder)
        ident = json.loads(json.dumps({**identity, "format": FORMAT_VERSION}))
        manifest = read_manifest(folder)
        if manifest is not None:
            diff = _diff(manifest.get("identity", {}), ident)
            if diff:
                raise UserError(
                    f"{folder}: holds a cache from a different run (differs in {', '.join(diff[:6])}); "
                    "pass another --out or delete that folder"
                )
            for stale in folder.glob(".*.tmp"):  # left by a killed writer
                stale.unlink()
            return cls(folder, manifest)
        folder.mkdir(parents=True, exist_ok=True)
        vocab.save(folder / VOCAB_TSV)
        signals = shard_signals(ident.get("options", {}))
        writer = cls(folder, {"identity": ident, "signals": signals, "shards": [], "complete": False})
        writer.save_manifest()
        return writer

    @property
    def complete(self) -> bool:
        """Whether every shard and the vocabulary tables are written."""
        return bool(self.manifest.get("complete"))

    @property
    def n_shards(self) -> int:
        """Shards written so far (a resumed run skips that many)."""
        return len(self.manifest["shards"])

    def save_manifest(self) -> None:
        """Replace manifest.json atomically."""
        write_json(self.folder / MANIFEST, self.manifest, sort_keys=True)

    def add_shard(
        self,
        arrays: Mapping[str, np.ndarray],
        attention: Mapping[str, np.ndarray] | None,
        stats: Mapping[str, int],
    ) -> None:
        """Write the next shard's arrays (and attention rows), then record it with its ``n_*`` stats."""
        stem = shard_name(self.n_shards)
        files = {f"{stem}.h5": write_h5(self.folder / f"{stem}.h5", arrays)}
        if attention is not None:
            name = f"{stem}.attn.parquet"
            files[name] = write_parquet(self.folder / name, attention)
        self.manifest["shards"].append({"name": stem, "files": files, **stats})
        self.save_manifest()

    def aux(self, name: str) -> dict[str, np.ndarray] | None:
        """An auxiliary HDF5 file written earlier by :meth:`add_aux` (e.g. the PCA), or None."""
        if name not in self.manifest.get("aux_files", {}):
            return None
        return read_h5(self.folder / name)

    def add_aux(self, name: str, arrays: Mapping[str, np.ndarray]) -> None:
        """Write an auxiliary HDF5 file that later shards depend on; record it at the next manifest write."""
        self.manifest.setdefault("aux_files", {})[name] = write_h5(self.folder / name, arrays)

    def finish(
        self, vocab_arrays: Mapping[str, np.ndarray], teacher_tokens: Mapping[str, np.ndarray]
    ) -> dict[str, Any]:
        """Write the per-vocabulary tables, the corpus totals and mark the cache complete."""
        shards = self.manifest["shards"]
        self.manifest["vocab_files"] = {
            VOCAB_H5: write_h5(self.folder / VOCAB_H5, vocab_arrays),
            TEACHER_TOKENS: write_parquet(self.folder / TEACHER_TOKENS, teacher_tokens),
        }
        keys = [k for k in shards[0] if k.startswith("n_")] if shards else []
        self.manifest["totals"] = {k: sum(s[k] for s in shards) for k in keys}
        self.manifest["complete"] = True
        self.save_manifest()
        return self.manifest
