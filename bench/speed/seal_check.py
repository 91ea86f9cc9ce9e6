"""What checking a teacher's seal costs at every extract start, now that nothing skips the hashing.

Makes sealed folders of the assembled teachers' sizes (random bytes: sha256 costs the same for any
bytes), then times ``check_sealed`` (every file hashed against ``SHA256SUMS``, the seal's own pin
checked) with the files in the page cache (an extract run again soon after the last) and with them
dropped from it first (``posix_fadvise(DONTNEED)``: a first run after a reboot reads them from disk).
The median of ``--repeats`` runs each.

    python bench/speed/seal_check.py [--repeats 5] [--out bench/results/seal_check.md]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ctx2static.fileio.digests import SEAL, check_sealed, seal_folder

sys.path.insert(0, str(Path(__file__).parent))
from machine import argv_line, cpu_name, write_keeping_reading

MB = 1_000_000
FOLDERS = {"mpnet": {"model.safetensors": 438 * MB}, "embeddinggemma": {"model.safetensors": 1_270 * MB}}
"""Each sealed teacher's bytes (its row's ``on_disk``), as one weights file beside small config files."""


def make(folder: Path, files: dict[str, int]) -> int:
    """A sealed folder of ``files`` (random bytes) and two small config files; its size in bytes."""
    folder.mkdir()
    for name, size in files.items():
        with open(folder / name, "wb") as fh:
            for start in range(0, size, 64 * MB):
                fh.write(os.urandom(min(64 * MB, size - start)))
    (folder / "config.json").write_text('{"hidden_size": 768}')
    (folder / "tokenizer.json").write_text('{"model": {}}')
    seal_folder(folder)
    return sum(p.stat().st_size for p in folder.iterdir())


def drop(folder: Path) -> None:
    """Drop the folder's files from the page cache (what a first read after a reboot finds)."""
    for p in folder.iterdir():
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def timed(folder: Path, pinned: str, cold: bool) -> float:
    if cold:
        drop(folder)
    t = time.perf_counter()
    check_sealed(folder, "FIX", pinned)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("bench/results/seal_check.md"))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, files in FOLDERS.items():
            folder = Path(tmp) / name
            size = make(folder, files)
            pinned = hashlib.sha256((folder / SEAL).read_bytes()).hexdigest()
            timed(folder, pinned, cold=False)  # warm the page cache
            warm = statistics.median(timed(folder, pinned, cold=False) for _ in range(args.repeats))
            cold = statistics.median(timed(folder, pinned, cold=True) for _ in range(args.repeats))
            rows.append(f"| {name} | {size / 1e9:.2f} | {warm:.2f} | {size / warm / 1e9:.2f} | {cold:.2f} |")
            print(rows[-1], flush=True)
    load = os.getloadavg()[0]
    text = "\n".join(
        [
            "# The seal check at every extract start",
            "",
            f"Command (repository root): `{argv_line(['python', *sys.argv])}`. Date: "
            f"{time.strftime('%Y-%m-%d')}. Machine: {cpu_name()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}; load average {load:.2f} at the end; median of {args.repeats}.",
            "",
            "| teacher folder | GB | in page cache, s | GB/s | read from disk, s |",
            "|---|---:|---:|---:|---:|",
            *rows,
        ]
    )
    write_keeping_reading(args.out, text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
