"""Writing a teacher cache: identity check, resume, atomic shards, the manifest after each commit.

A shard is written in two steps: its files (:func:`write_shard_files`, atomic, by whichever
process computed it: the extract process, or a worker of a distributed engine), then its record
(:meth:`CacheWriter.record_shard`, by the one process that owns the manifest). Records are
*committed* in shard order only: a shard that finishes early waits until every earlier one is in,
so the per-word sums (added in shard order) and the manifest never depend on which worker was
faster. A commit writes the running per-word sums to a new file, then the manifest that names it,
then deletes the previous sums file, so a process killed at any point leaves a manifest that
agrees with the files it names; a rerun continues after the last committed shard and writes the
same bytes as one uninterrupted run. A different identity in the folder is refused.

One process writes a cache folder at a time (a lock file; a second writer gets a one-line error
naming the first). Reopening a cache re-verifies what is committed: damaged or missing shard files
are listed in :attr:`CacheWriter.damaged` for the caller to recompute (:meth:`rebuilt_shard`;
their per-word sums are already committed); a damaged vocab.tsv is rewritten; damaged teacher token
files are rewritten by the next :meth:`finish`; a damaged running-sums file, vocab.h5 (the only
copy of the sums once complete) or PCA restarts the cache from shard 0, since the sums can only be
recomputed by the teacher. Shards holding NaN or infinity are refused when written.

The running sums are a dense float64 table of the whole vocabulary (V x d: 6 GB for a million
words of a 768-d teacher), rewritten and hashed by each checkpoint. Small ones (<= 64 MiB) are
checkpointed at every commit; larger ones at most once per ten times the last checkpoint's
duration, so writing them costs at most a tenth of the run however fast shards arrive; shards
committed since the last checkpoint are not in the manifest, and a killed run computes them again.
"""

from __future__ import annotations

import json
import logging
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from numba import njit

from ctx2static.cache.hdf5 import open_h5, read_h5, write_h5
from ctx2static.cache.layout import (
    FORMAT_VERSION,
    MANIFEST,
    TEACHER_TOKENIZER,
    TEACHER_TOKENS,
    VOCAB_H5,
    VOCAB_TSV,
    running_sums_name,
    shard_files,
    shard_name,
    shard_signals,
)
from ctx2static.cache.reader import check_format, not_own_file, read_manifest, verify_file
from ctx2static.cache.validate import nonfinite_array
from ctx2static.errors import InputError, UserError, spell
from ctx2static.fileio.atomic import atomic_write, write_json
from ctx2static.fileio.digests import sha256_file
from ctx2static.fileio.locks import acquire_lock, release_lock
from ctx2static.fileio.temps import remove_stale_temps_in
from ctx2static.text.vocab import Vocab

log = logging.getLogger(__name__)
SMALL_SUMS = 64 << 20  # running sums up to this size are checkpointed at every commit
CHECKPOINT_RATIO = 10  # larger ones: at most once per this many times the last checkpoint's duration
RESTART = "delete it and re-run extract (it starts again from shard 0)"


def write_parquet(path: Path, columns: Mapping[str, np.ndarray]) -> str:
    """Write columns to one Parquet file atomically; return its sha256."""
    table = pa.table({k: pa.array(v) for k, v in columns.items()})
    with atomic_write(path, "wb") as fh:
        pq.write_table(table, fh, compression="zstd")
    return sha256_file(path)


def write_shard_files(
    folder: Path, index: int, arrays: Mapping[str, np.ndarray], attention: Mapping[str, np.ndarray] | None
) -> dict[str, str]:
    """Write shard ``index``'s HDF5 arrays (and attention rows) atomically; return file name -> sha256.

    Arrays holding NaN or infinity are refused (one line: the teacher's output is not usable).
    """
    weights = {} if attention is None else {"attention weight": attention["weight"]}
    where = nonfinite_array({**arrays, **weights})
    if where is not None:
        raise InputError(
            folder,
            f"{folder}: shard {index}: the teacher's output holds NaN or infinity ({where}); it overflowed "
            f"float16 or the forward is unstable: try {spell('precision', 'float32')}, "
            f"{spell('float32_means', True)} or another {spell('layer')}",
        )
    h5, parquet = shard_files(index)
    files = {h5: write_h5(folder / h5, arrays)}
    if attention is not None:
        files[parquet] = write_parquet(folder / parquet, attention)
    return files


@njit(cache=True, nogil=True)
def _add_rows(sums: np.ndarray, rows: np.ndarray, vectors: np.ndarray) -> None:
    """``sums[rows[i]] += vectors[i]`` in float64, row after row: ``np.add.at``'s order and bits."""
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(vectors.shape[1]):
            sums[r, j] += vectors[i, j]


@dataclass
class WordSums:
    """One shard's per-word sums of the teacher's contextual vectors: only the words it holds.

    ``ids`` (int64 [u]) are static word ids, ``sums`` (float64 [u, d]) the sums of their
    occurrence vectors, ``counts`` (int64 [u]) how many occurrences each sum holds.
    """

    ids: np.ndarray
    sums: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, word_ids: np.ndarray, vectors: np.ndarray) -> WordSums:
        """Sum the rows of ``vectors`` (one per occurrence) by their word in ``word_ids``, in order.

        Each row is widened to float64 as it is added, in occurrence order: the sums are bit for bit
        those of one float64 copy of all the rows, which is never made (a shard's rows in float64
        are twice its float32 vectors: 0.9 GB for 8,192 Brown sentences of a 768-d teacher). A
        compiled loop: ``np.add.at`` took a third of a GPU extract (measured: Results page, gpu).
        """
        ids, inverse, counts = np.unique(word_ids, return_inverse=True, return_counts=True)
        sums = np.zeros((len(ids), vectors.shape[1]), dtype=np.float64)
        _add_rows(sums, inverse.reshape(-1).astype(np.int64), np.ascontiguousarray(vectors))
        return cls(ids.astype(np.int64), sums, counts.astype(np.int64))


_ABSENT = object()


def _diff(stored: Any, current: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between a stored and a current identity (nested dicts, lists)."""
    if isinstance(stored, dict) and isinstance(current, dict):
        out = []
        for k in sorted(set(stored) | set(current)):
            out += _diff(stored.get(k, _ABSENT), current.get(k, _ABSENT), f"{prefix}{k}.")
        return out
    if isinstance(stored, list) and isinstance(current, list) and len(stored) == len(current):
        pairs = enumerate(zip(stored, current, strict=True))
        return [d for i, (s, c) in pairs for d in _diff(s, c, f"{prefix}{i}.")]
    return [] if stored == current else [prefix.rstrip(".")]


def _damaged(folder: Path, files: Mapping[str, str]) -> bool:
    """Whether any of ``files`` (name -> sha256) is missing or damaged."""
    return any(verify_file(folder / name, digest) for name, digest in files.items())


def _cache_file_names(manifest: Mapping[str, Any]) -> set[str]:
    """Every file name the manifest records, and vocab.tsv (names already checked to be the cache's own)."""
    names = {VOCAB_TSV, *manifest.get("aux_files", {}), *manifest.get("vocab_files", {})}
    names.update(name for record in manifest.get("shards", []) for name in record.get("files", {}))
    if manifest.get("word_sums"):
        names.add(manifest["word_sums"]["file"])
    return names


def _drop_links(folder: Path, manifest: Mapping[str, Any]) -> None:
    """Remove a symbolic link found in place of a cache file; its target is left as it is.

    Such a link is never the cache's, and outputs are never written through links, so the file it
    stands for could not be rewritten while it is there.
    """
    for name in sorted(_cache_file_names(manifest)):
        path = folder / name
        if path.is_symlink():
            log.warning("%s: a symbolic link in place of a cache file; removed (not its target)", path)
            path.unlink()


def _lost_sums(folder: Path, manifest: Mapping[str, Any]) -> str | None:
    """What damaged file lost the committed per-word sums (or the PCA the shards depend on), if any."""
    named = dict(manifest.get("aux_files", {}))
    if manifest.get("complete"):
        named[VOCAB_H5] = manifest.get("vocab_files", {}).get(VOCAB_H5, "")
    elif manifest.get("word_sums"):
        named[manifest["word_sums"]["file"]] = manifest["word_sums"]["sha256"]
    for name, digest in named.items():
        problem = verify_file(folder / name, digest)
        if problem:
            return f"{folder / name}: {problem}"
    return None


class CacheWriter:
    """Writes one cache folder shard by shard; see the module docstring for the guarantees."""

    def __init__(self, folder: Path, manifest: dict[str, Any], n_words: int) -> None:
        self.folder = folder
        self.manifest = manifest
        self.n_words = n_words
        self.damaged: list[int] = []  # committed shards whose files must be written again
        self._pending: dict[int, tuple[dict[str, Any], WordSums]] = {}
        self._unsaved: list[dict[str, Any]] = []  # committed since the last checkpoint, not in the manifest
        self._next_checkpoint = 0.0  # the monotonic time after which a commit checkpoints again
        self._sums: np.ndarray | None = None  # float64 [V, d], committed shards only
        self._counts = np.zeros(n_words, dtype=np.int64)
        self._lock: str | None = None
        running = manifest.get("word_sums")
        if running is not None:
            stored = read_h5(folder / running["file"], RESTART)
            self._sums, self._counts = stored["sum"], stored["count"]
        elif manifest.get("complete"):  # kept for a finish() that rewrites damaged teacher token files
            with open_h5(folder / VOCAB_H5, RESTART) as f:
                self._sums, self._counts = f["occ_sum"][()].astype(np.float64), f["occ_count"][()]

    @classmethod
    def open(cls, folder: str | Path, identity: Mapping[str, Any], vocab: Vocab) -> CacheWriter:
        """Start a cache in ``folder``, or continue the one there if it has the same ``identity``.

        ``identity`` is everything that determines the content (teacher, corpus, vocabulary,
        ``options`` of the extract); the writer adds the format version and derives the signals
        from ``identity["options"]``. A cache of another format is refused in one line
        (:func:`~ctx2static.cache.reader.check_format`). The folder stays locked until
        :meth:`finish` or :meth:`close`.
        """
        folder = Path(folder)
        ident = json.loads(json.dumps({**identity, "format": FORMAT_VERSION}))
        lock = acquire_lock(folder, "cache")
        try:
            writer = cls._open_locked(folder, ident, vocab)
        except BaseException:
            release_lock(lock)
            raise
        writer._lock = lock
        weakref.finalize(writer, release_lock, lock)
        return writer

    @classmethod
    def _open_locked(cls, folder: Path, ident: dict[str, Any], vocab: Vocab) -> CacheWriter:
        manifest = read_manifest(folder)
        if manifest is not None:
            check_format(folder, manifest)
            diff = _diff(manifest.get("identity", {}), ident)
            if diff:
                # the keys come from the folder's manifest: a damaged one must not break the line
                keys = ", ".join("".join(c if c.isprintable() else "?" for c in k) for k in diff[:6])
                raise InputError(
                    folder,
                    f"{folder}: holds a cache from a different run (differs in {keys}); "
                    f"pass another {spell('out')} or delete that folder",
                )
            remove_stale_temps_in(folder)  # left by a killed writer (the lock says none is alive)
            return cls._reopen(folder, manifest, vocab)
        vocab.save(folder / VOCAB_TSV)
        signals = shard_signals(ident.get("options", {}))
        manifest = {
            "identity": ident,
            "signals": signals,
            "shards": [],
            "complete": False,
            "vocab_digest": vocab.digest(),
        }
        writer = cls(folder, manifest, len(vocab))
        writer.save_manifest()
        return writer

    @classmethod
    def _reopen(cls, folder: Path, manifest: dict[str, Any], vocab: Vocab) -> CacheWriter:
        """Continue a cache after verifying what it committed (module docstring: what is repaired how)."""
        _drop_links(folder, manifest)
        try:
            own = not_own_file(folder / VOCAB_TSV) is None
            intact = own and Vocab.load(folder / VOCAB_TSV).digest() == vocab.digest()
        except UserError:
            intact = False
        if not intact:
            log.warning("%s: damaged; rewritten from the vocabulary", folder / VOCAB_TSV)
            vocab.save(folder / VOCAB_TSV)
        lost = _lost_sums(folder, manifest)
        if lost:
            log.warning(
                "%s; it holds the per-word sums of %d shards, which only the teacher can recompute: "
                "extract starts again from shard 0",
                lost,
                len(manifest["shards"]),
            )
            for key in ("word_sums", "vocab_files", "totals", "aux_files"):
                manifest.pop(key, None)
            manifest.update(shards=[], complete=False)
        writer = cls(folder, manifest, len(vocab))
        if manifest.get("complete") and _damaged(folder, manifest.get("vocab_files", {})):
            log.warning("%s: teacher token files damaged or missing; extract writes them again", folder)
            manifest["complete"] = False  # finish() writes the tables again
        writer.damaged = [r["index"] for r in manifest["shards"] if _damaged(folder, r["files"])]
        if writer.damaged:
            damaged = ", ".join(map(str, writer.damaged))
            log.warning("%s: shard(s) %s damaged or missing; extract rebuilds them", folder, damaged)
        writer._remove_unnamed_sums()
        return writer

    @property
    def complete(self) -> bool:
        """Whether every shard and the vocabulary tables are written."""
        return bool(self.manifest.get("complete"))

    @property
    def n_shards(self) -> int:
        """Shards committed so far (a resumed run starts after the checkpointed ones)."""
        return len(self.manifest["shards"]) + len(self._unsaved)

    def save_manifest(self) -> None:
        """Replace manifest.json atomically."""
        write_json(self.folder / MANIFEST, self.manifest, sort_keys=True)

    def add_shard(
        self,
        arrays: Mapping[str, np.ndarray],
        attention: Mapping[str, np.ndarray] | None,
        stats: Mapping[str, int],
        sums: WordSums,
    ) -> None:
        """Write and record the next shard in order (the single-process engine)."""
        index = self.n_shards + len(self._pending)
        self.record_shard(index, write_shard_files(self.folder, index, arrays, attention), stats, sums)

    def record_shard(
        self, index: int, files: Mapping[str, str], stats: Mapping[str, int], sums: WordSums
    ) -> None:
        """Record shard ``index`` (its files already written); commit every shard now in order."""
        if index < self.n_shards or index in self._pending:
            raise ValueError(f"shard {index} is recorded twice")
        record = {"index": index, "name": shard_name(index), "files": dict(files), **stats}
        self._pending[index] = (record, sums)
        if self.n_shards in self._pending:
            self._commit()

    def _commit(self) -> None:
        """Add the contiguous pending shards' sums in order; checkpoint them (module docstring: when)."""
        while self.n_shards in self._pending:
            record, sums = self._pending.pop(self.n_shards)
            if self._sums is None:
                self._sums = np.zeros((self.n_words, sums.sums.shape[1]), dtype=np.float64)
            self._sums[sums.ids] += sums.sums
            self._counts[sums.ids] += sums.counts
            self._unsaved.append(record)
        if self._sums is not None and (
            self._sums.nbytes <= SMALL_SUMS or time.monotonic() >= self._next_checkpoint
        ):
            self._checkpoint()

    def _checkpoint(self) -> None:
        """Write the running sums to a new file, then the manifest naming it and the committed shards."""
        start = time.monotonic()
        self.manifest["shards"] += self._unsaved
        self._unsaved = []
        old = self.manifest.get("word_sums")
        assert self._sums is not None, "checkpointed after a shard's sums were added"
        name = running_sums_name(self.n_shards)
        digest = write_h5(self.folder / name, {"sum": self._sums, "count": self._counts})
        self.manifest["word_sums"] = {"file": name, "sha256": digest}
        self.save_manifest()
        if old is not None and old["file"] != name:
            (self.folder / old["file"]).unlink(missing_ok=True)
        end = time.monotonic()
        self._next_checkpoint = end + CHECKPOINT_RATIO * (end - start)

    def rebuilt_shard(self, index: int, files: Mapping[str, str]) -> None:
        """Record damaged shard ``index``'s files written again (its per-word sums stay committed)."""
        record = self.manifest["shards"][index]
        if dict(files) != record["files"]:
            log.warning(
                "shard %d: rebuilt with other bytes than its first build (this teacher run is not "
                "bit-reproducible: other threads or device); the per-word sums stay those of the first",
                index,
            )
            record["files"] = dict(files)
            self.save_manifest()
        self.damaged.remove(index)

    def close(self) -> None:
        """Release the folder's lock without finishing (a later open continues the cache)."""
        if self._lock is not None:
            release_lock(self._lock)
            self._lock = None

    def _remove_unnamed_sums(self) -> None:
        """Delete running-sum files the manifest does not name (a killed commit's leftovers)."""
        named = (self.manifest.get("word_sums") or {}).get("file")  # null: none yet, as validation reads it
        for path in self.folder.glob(running_sums_name(None)):
            if path.name != named:
                path.unlink()

    def aux(self, name: str) -> dict[str, np.ndarray] | None:
        """An auxiliary HDF5 file written earlier by :meth:`add_aux` (e.g. the PCA), or None."""
        if name not in self.manifest.get("aux_files", {}):
            return None
        return read_h5(self.folder / name, RESTART)

    def add_aux(self, name: str, arrays: Mapping[str, np.ndarray]) -> None:
        """Write an auxiliary HDF5 file that later shards depend on; record it at the next commit."""
        self.manifest.setdefault("aux_files", {})[name] = write_h5(self.folder / name, arrays)

    def finish(
        self,
        vocab_arrays: Mapping[str, np.ndarray],
        teacher_tokens: Mapping[str, np.ndarray],
        tokenizer_json: str | None = None,
    ) -> dict[str, Any]:
        """Write the per-vocabulary tables (with the per-word sums), the totals; mark the cache complete.

        ``tokenizer_json`` is the teacher's tokenizer (``tokenizers`` JSON), kept so that any string
        can later be split into the teacher's subwords without the teacher.
        """
        if self._pending:
            raise ValueError(f"shards {sorted(self._pending)} wait for an earlier shard that never came")
        self.manifest["shards"] += self._unsaved
        self._unsaved = []
        shards = self.manifest["shards"]
        sums = self._sums if self._sums is not None else np.zeros((self.n_words, 0))
        tables = {**vocab_arrays, "occ_sum": sums.astype(np.float32), "occ_count": self._counts}
        self.manifest["vocab_files"] = {
            VOCAB_H5: write_h5(self.folder / VOCAB_H5, tables),
            TEACHER_TOKENS: write_parquet(self.folder / TEACHER_TOKENS, teacher_tokens),
        }
        if tokenizer_json is not None:
            with atomic_write(self.folder / TEACHER_TOKENIZER, "w", encoding="utf-8") as fh:
                fh.write(tokenizer_json)
            self.manifest["vocab_files"][TEACHER_TOKENIZER] = sha256_file(self.folder / TEACHER_TOKENIZER)
        keys = [k for k in shards[0] if k.startswith("n_")] if shards else []
        self.manifest["totals"] = {k: sum(s[k] for s in shards) for k in keys}
        self.manifest["complete"] = True
        running = self.manifest.pop("word_sums", None)
        self.save_manifest()
        if running is not None:
            (self.folder / running["file"]).unlink(missing_ok=True)
        self.close()
        return self.manifest
