"""The cache's HDF5 files: written reproducibly, opened only when they hold their own data.

HDF5 can make a file read another one: a dataset's raw data in external files (``external=``), a
virtual dataset mapped from other files, an external link (and a soft link, which can name one).
A cache's files never use them, and a crafted file could read any file the user can, its checksum
matching a crafted manifest, so :func:`open_h5` refuses them before any array is read: every
member of the file must be a dataset linked in it, with its data in it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import h5py
import numpy as np

from ctx2static.errors import InputError
from ctx2static.fileio.atomic import atomic_write
from ctx2static.fileio.digests import sha256_file
from ctx2static.memory import check_fits


def write_h5(path: Path, arrays: Mapping[str, np.ndarray]) -> str:
    """Write arrays to one HDF5 file atomically and reproducibly (no timestamps); return its sha256."""
    with atomic_write(path, "w+b") as fh, h5py.File(fh, "w", libver="v110") as f:
        for key, arr in arrays.items():
            f.create_dataset(key, data=arr, track_times=False)
    return sha256_file(path)


def _foreign(f: h5py.File) -> str | None:
    """The first member of ``f`` that reads or names something outside ``f`` (or is not a dataset)."""
    for key in f:
        link = f.get(key, getlink=True)
        if isinstance(link, h5py.ExternalLink | h5py.SoftLink):
            return f"'{key}' is an HDF5 {'external' if isinstance(link, h5py.ExternalLink) else 'soft'} link"
        item = f[key]
        if not isinstance(item, h5py.Dataset):
            return f"'{key}' is an HDF5 group"
        if item.external is not None:
            return f"'{key}' keeps its data in another file (HDF5 external storage)"
        if item.is_virtual:
            return f"'{key}' is an HDF5 virtual dataset (its data come from other files)"
    return None


@contextlib.contextmanager
def open_h5(path: Path, fix: str) -> Iterator[h5py.File]:
    """Open a cache's HDF5 file for reading once it holds only its own data (else one line with ``fix``)."""
    with h5py.File(path, "r") as f:
        problem = _foreign(f)
        if problem:
            raise InputError(path, f"{path}: {problem}, which a cache never holds; {fix}")
        # a chunked, compressed dataset may declare any shape in a few bytes: what reading it would
        # hold is checked against the memory left before any array is read
        declared = sum(f[key].size * f[key].dtype.itemsize for key in f)
        check_fits(declared, f"{path} (its arrays as their headers declare them)", fix)
        yield f


def read_h5(path: Path, fix: str) -> dict[str, np.ndarray]:
    """Every array of one of the cache's HDF5 files (:func:`open_h5`)."""
    with open_h5(path, fix) as f:
        return {k: f[k][()] for k in f}
