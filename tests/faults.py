"""Fault injection helpers: damage cache files the way disks and users do, and reseal them.

``flip``/``truncate`` damage bytes (the checksums must catch it); ``poke`` writes a value into an
HDF5 dataset in place and ``reseal`` records the new checksum, as a writer that wrote bad data
would have (the array checks must catch that).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

import ctx2static
from ctx2static.fileio.digests import sha256_file


def flip(path: Path, offset: int | None = None) -> None:
    """XOR one byte of ``path`` (the middle one by default) with 0xFF."""
    size = path.stat().st_size
    offset = size // 2 if offset is None else offset
    with open(path, "r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([byte[0] ^ 0xFF]))


def truncate(path: Path, keep: float = 0.5) -> None:
    """Cut ``path`` to a fraction of its size."""
    os.truncate(path, int(path.stat().st_size * keep))


def dataset_offset(path: Path, key: str) -> int:
    """Byte offset of the middle of dataset ``key`` in an HDF5 file (contiguous storage)."""
    with h5py.File(path, "r") as f:
        ds = f[key].id
        return ds.get_offset() + ds.get_storage_size() // 2


def poke(path: Path, key: str, index: tuple, value: float) -> None:
    """Write ``value`` at ``index`` of dataset ``key`` in place."""
    with h5py.File(path, "r+") as f:
        f[key][index] = value


def reseal(folder: Path, name: str) -> None:
    """Record file ``name``'s current sha256 in the cache manifest (as if it had been written so)."""
    path = folder / "manifest.json"
    m = json.loads(path.read_text())
    digest = sha256_file(folder / name)
    tables = [s["files"] for s in m["shards"]] + [m.get("vocab_files", {}), m.get("aux_files", {})]
    for files in tables:
        if name in files:
            files[name] = digest
    if m.get("word_sums", {}).get("file") == name:
        m["word_sums"]["sha256"] = digest
    path.write_text(json.dumps(m))


def cli_subprocess(*args: object, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python cli.py ARGS`` in a fresh process (where the process is the point: exit codes, kills)."""
    return subprocess.run(cli_command(*args), env=cli_env(), capture_output=True, text=True, timeout=timeout)


def cli_command(*args: object) -> list[str]:
    """The command line of :func:`cli_subprocess`."""
    return [sys.executable, str(Path(ctx2static.__file__).parent / "cli.py"), *map(str, args)]


def default_signals() -> None:
    """A child's signals as a terminal's job has them: a launcher (``nohup``, a background job of a
    script) may have left SIGHUP, SIGINT or SIGQUIT ignored, and an ignored signal stays ignored."""
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def cli_env() -> dict[str, str]:
    """The environment of a CLI subprocess: this checkout's package, one thread everywhere."""
    return {
        **os.environ,
        "PYTHONPATH": str(Path(ctx2static.__file__).parent.parent),
        "NUMBA_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }


def arrays_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape and bytes."""
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
