"""Reading a teacher cache (numpy, h5py and pyarrow only: no torch, no teacher).

Nothing read is trusted: every file is checked against the sha256 its manifest records the first
time a process reads it (then remembered, in memory only, while its size, times and inode stay),
and every array against :mod:`ctx2static.cache.validate` before a student sees it. A damaged file
is a one-line error naming it and the fix (the extract that made the cache rebuilds it).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from ctx2static.cache.hdf5 import open_h5, read_h5
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
    shard_files,
    shard_name,
)
from ctx2static.cache.validate import manifest_problem, nonfinite_array, shard_problem
from ctx2static.errors import InputError
from ctx2static.fileio.digests import sha256_file
from ctx2static.fileio.reading import read_json
from ctx2static.memory import check_fits
from ctx2static.text.vocab import Vocab

REBUILD = "re-run the extract (or the study) that made this cache"

TOKEN_ROW_BYTES = 64
"""A teacher token row read into numpy beyond its parquet bytes: its string as a Python object, ids."""
# (real path, sha256, size, mtime, ctime, inode, device) checked by this process: ctime cannot be set
# back from user space, so a file rewritten with its size and mtime restored is hashed again
_VERIFIED: set[tuple[str, str, int, int, int, int, int]] = set()


def not_own_file(path: Path) -> str | None:
    """What keeps ``path`` from being one of the cache's own files ("missing", a link...); None: nothing.

    A cache's files are regular files in its folder: a symbolic link may point anywhere (and the
    writer replaces it, not what it points to), and a FIFO or device would block or never end a read.
    """
    try:
        st = path.lstat()
    except (FileNotFoundError, NotADirectoryError):  # (the cache folder itself may be a file)
        return "missing"
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link, not a file of the cache"
    return None if stat.S_ISREG(st.st_mode) else "not a regular file"


def verify_file(path: Path, digest: str, again: bool = False) -> str | None:
    """None when ``path`` holds bytes of sha256 ``digest``, else what is wrong ("missing", "damaged ...").

    A file is hashed once per process while its size, times and inode stay the same (``again``: hash it
    anyway); it must be one of the cache's own (:func:`not_own_file`).
    """
    problem = not_own_file(path)
    if problem:
        return problem
    st = path.stat()
    key = (os.path.realpath(path), digest, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    if key in _VERIFIED and not again:
        return None
    if sha256_file(path) != digest:
        return "damaged (checksum mismatch)"
    _VERIFIED.add(key)
    return None


def read_manifest(folder: Path) -> dict | None:
    """The manifest of a cache folder, or None when there is none yet; a damaged one is a one-line error."""
    p = folder / MANIFEST
    fix = "delete the cache folder and extract again"
    problem = not_own_file(p)
    if problem == "missing":
        return None
    if problem:
        raise InputError(p, f"{p}: {problem}; {fix}")
    manifest = read_json(p, fix=fix)
    problem = manifest_problem(manifest)
    if problem:
        raise InputError(p, f"{p}: {problem} (damaged); {fix}")
    return manifest


def check_format(folder: Path, manifest: Mapping[str, Any]) -> None:
    """Refuse, in one line, a cache of another format: no reader or writer converts one."""
    version = manifest.get("identity", {}).get("format")
    if version != FORMAT_VERSION:
        raise InputError(
            folder,
            f"{folder}: cache format {version} (this ctx2static reads format {FORMAT_VERSION}); "
            "re-run extract into a new folder",
        )


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
    _token_count: int | None = field(default=None, init=False, repr=False)

    @classmethod
    def open(cls, folder: str | os.PathLike) -> Cache:
        """Open a cache folder written by ``extract``."""
        folder = Path(folder)
        manifest = read_manifest(folder)
        if manifest is None:
            raise InputError(
                folder, f"{folder}: no {MANIFEST}; run 'ctx2static extract' to build a cache there"
            )
        check_format(folder, manifest)
        problem = not_own_file(folder / VOCAB_TSV)
        if problem:
            raise InputError(folder / VOCAB_TSV, f"{folder / VOCAB_TSV}: {problem}; {REBUILD}")
        vocab = Vocab.load(folder / VOCAB_TSV)
        recorded = manifest.get("vocab_digest") or manifest["identity"].get("vocab", {}).get("sha256_16")
        if recorded is not None and vocab.digest() != recorded:
            raise InputError(
                folder / VOCAB_TSV,
                f"{folder / VOCAB_TSV}: damaged (not the vocabulary of the manifest); {REBUILD}",
            )
        return cls(folder, manifest, vocab)

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

    @property
    def tables_only(self) -> bool:
        """Extracted with ``--tables-only``: the per-word tables, no pass over the sentences (no shard)."""
        return bool(self.manifest["identity"].get("options", {}).get("tables_only"))

    def totals(self, key: str) -> int:
        """A corpus total recorded at the end of extract (``n_words``, ``n_occurrences``...), 0 before."""
        return int(self.manifest.get("totals", {}).get(key, 0))

    def shard(self, i: int, keys: list[str] | None = None) -> Shard:
        """Load shard ``i`` (all arrays, or only ``keys``; the index arrays always come along).

        Asking for a signal the cache does not hold is a one-line error naming the extract flag; a
        damaged file or an array out of range is a one-line error naming the file and the fix.
        """
        for key in keys or ():
            if key not in self.signals:
                raise InputError(
                    self.folder,
                    f"{self.folder}: the cache has no '{key}'; extract again with {SIGNALS[key].setting()}",
                )
        record = self.manifest["shards"][i]
        fix = f"{REBUILD} to rebuild shard {i}"
        refit = f"delete its files ({shard_name(i)}.*) and {fix}"  # checksums match: a rerun keeps them
        h5, parquet = shard_files(i)
        path = self._checked(h5, fix)
        try:
            with open_h5(path, refit) as f:
                names = list(f.keys()) if keys is None else sorted({*keys, *INDEX_ARRAYS} & set(f.keys()))
                arrays = {k: f[k][()] for k in names}
            attn = None
            if parquet in record["files"] and (keys is None or "attention" in keys):
                t = pq.read_table(self._checked(parquet, fix))
                attn = {c: t.column(c).to_numpy() for c in ATTN_COLUMNS if c in t.column_names}
        except (OSError, KeyError, ValueError) as exc:  # what h5py and pyarrow raise for a bad file
            raise InputError(path, f"{path}: cannot be read ({exc}); {fix}") from None
        problem = shard_problem(arrays, attn, record, len(self.vocab), self._n_tokens(keys))
        if problem:  # written so by extract (its checksum matches): the rerun must not trust it
            raise InputError(path, f"{path}: {problem}; {refit}")
        return Shard(i, arrays, attn)

    def _n_tokens(self, keys: list[str] | None) -> int | None:
        """The teacher's token count, when the substitutes are read and the token table is written."""
        if "topk_ids" not in (keys if keys is not None else self.signals) or not self.complete:
            return None
        if self._token_count is None:
            self._token_count = len(self.teacher_tokens()["id"])
        return self._token_count

    def _checked(self, name: str, fix: str) -> Path:
        """Path of a checksummed file of this cache after verifying it (once per process)."""
        path = self.folder / name
        running = self.manifest.get("word_sums") or {}
        digest = self.files().get(name) or (running.get("sha256") if running.get("file") == name else None)
        if digest is None:
            raise InputError(path, f"{path}: the manifest records no checksum for it; {fix}")
        problem = verify_file(path, digest)
        if problem:
            raise InputError(path, f"{path}: {problem}; {fix}")
        return path

    def verify_for(self, keys: list[str] | None) -> int:
        """Check every file a run will open, before it starts; return their bytes.

        ``keys``: the shard signals it reads (the index arrays come along; "attention" adds the
        attention files), or None for a run that reads the per-word tables only. One line for the
        first damaged file, so a student fails before training, not after three shards; files are
        hashed once per process, so the reads that follow do not hash them again.
        """
        tables = (*self.manifest.get("aux_files", {}), *self.manifest.get("vocab_files", {}))
        checked = [(name, f"{REBUILD} to rebuild it") for name in tables]
        attention = keys is not None and "attention" in keys
        for i, record in enumerate(self.manifest["shards"] if keys is not None else ()):
            wanted = [n for n in record["files"] if n.endswith(".h5") or attention]
            checked += [(name, f"{REBUILD} to rebuild shard {i}") for name in wanted]
        if not self.complete and self.manifest.get("word_sums"):
            checked.append((self.manifest["word_sums"]["file"], f"{REBUILD} to recompute the per-word sums"))
        return sum(self._checked(name, why).stat().st_size for name, why in checked)

    def shards(self, keys: list[str] | None = None) -> Iterator[Shard]:
        """Iterate the complete shards in corpus order."""
        for i in range(self.n_shards):
            yield self.shard(i, keys)

    def _final_file(self, name: str) -> Path:
        """A file extract writes after the last shard, verified: one-line error while it is missing."""
        if name not in self.manifest.get("vocab_files", {}):
            raise InputError(
                self.folder,
                f"{self.folder}: no {name} yet (extract writes it after the last shard); "
                "re-run the same extract command to finish the cache",
            )
        return self._checked(name, f"{REBUILD} to rebuild it")

    def vocab_arrays(self) -> dict[str, np.ndarray]:
        """Per-vocabulary-word tables: ``token_emb`` (input embeddings), ``word_emb`` (the word table), ..."""
        return self._vocab_h5(None)

    def _vocab_h5(self, keys: list[str] | None) -> dict[str, np.ndarray]:
        """Arrays of vocab.h5 (all, or ``keys``), verified, one row per vocabulary word, finite."""
        path = self._final_file(VOCAB_H5)
        with open_h5(path, f"delete it and {REBUILD}") as f:
            arrays = {k: f[k][()] for k in (keys or list(f))}
        rows = {k: a.shape[0] if a.ndim else -1 for k, a in arrays.items() if k != "teacher_token_emb"}
        wrong = [k for k, n in rows.items() if n != len(self.vocab)]
        where = nonfinite_array(arrays)
        if wrong or where:
            what = f"{wrong[0]} with {rows[wrong[0]]} rows, not one a word" if wrong else f"NaN/inf ({where})"
            raise InputError(path, f"{path}: holds {what}; {REBUILD} to rebuild it")
        return arrays

    def word_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Each word's contextual vectors summed over the corpus (float64 [V, d]) and their counts.

        From ``vocab.h5`` once the cache is complete, else from the running sums of the shards
        committed so far (a partial cache trains on what is there).
        """
        if self.complete:
            tables = self._vocab_h5(["occ_sum", "occ_count"])
            return tables["occ_sum"].astype(np.float64), tables["occ_count"]
        running = self.manifest.get("word_sums")
        if running is None:
            raise InputError(
                self.folder, f"{self.folder}: no shard is complete yet; re-run the same extract command"
            )
        path = self._checked(running["file"], f"{REBUILD} to recompute the per-word sums")
        with open_h5(path, f"delete it and {REBUILD}") as f:
            sums, counts = f["sum"][()], f["count"][()]
        where = nonfinite_array({"sum": sums})
        if len(sums) != len(self.vocab) or len(counts) != len(self.vocab) or where:
            raise InputError(
                path, f"{path}: wrong shape or NaN ({where}); {REBUILD} to recompute the per-word sums"
            )
        return sums, counts

    def pca(self) -> dict[str, np.ndarray] | None:
        """``mean``, ``components`` and ``explained_variance_ratio`` when vectors were PCA-reduced."""
        if PCA_H5 not in self.manifest.get("aux_files", {}):
            return None
        return read_h5(self._checked(PCA_H5, f"{REBUILD} to rebuild it"), f"delete it and {REBUILD}")

    def teacher_tokenizer(self) -> str:
        """The teacher's tokenizer as ``tokenizers`` JSON (load with ``Tokenizer.from_str``)."""
        return self._final_file(TEACHER_TOKENIZER).read_text(encoding="utf-8")

    def teacher_tokens(self) -> dict[str, np.ndarray]:
        """Teacher token table: ``id``, ``token`` (string) and ``word`` (static word id or -1).

        The rows its metadata declares are checked first, against the teacher's token embeddings in
        vocab.h5 and the memory left: a parquet file of 1.6 MB may declare 170M rows in one row group,
        which reading would try to hold (5 GB and a traceback, issue 56).
        """
        path = self._final_file(TEACHER_TOKENS)
        try:
            meta = pq.ParquetFile(path).metadata
        except (OSError, ValueError) as exc:  # pyarrow's errors for a file that is not parquet
            raise InputError(path, f"{path}: cannot be read ({exc}); {REBUILD} to rebuild it") from None
        with open_h5(self._final_file(VOCAB_H5), f"delete it and {REBUILD}") as f:
            n_tokens = f["teacher_token_emb"].shape[0] if "teacher_token_emb" in f else None
        if n_tokens is not None and meta.num_rows != n_tokens:
            raise InputError(
                path,
                f"{path}: declares {meta.num_rows:,} rows, not one for each of the teacher's {n_tokens:,} "
                f"tokens; {REBUILD} to rebuild it",
            )
        declared = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        check_fits(
            declared + meta.num_rows * TOKEN_ROW_BYTES,
            f"{path} ({meta.num_rows:,} rows as its metadata declares)",
            f"the file is damaged or not this cache's; {REBUILD} to rebuild it",
        )
        t = pq.read_table(path)
        tokens = {c: t.column(c).to_numpy(zero_copy_only=False) for c in t.column_names}
        word = tokens.get("word")
        if word is None or (len(word) and (word.min() < -1 or word.max() >= len(self.vocab))):
            raise InputError(
                self.folder / TEACHER_TOKENS,
                f"{self.folder / TEACHER_TOKENS}: word ids out of range; {REBUILD} to rebuild it",
            )
        return tokens

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
            problem = verify_file(self.folder / name, digest, again=True)
            if problem:
                problems.append(f"{name}: {problem.removeprefix('damaged (').rstrip(')')}")
        return problems
