"""What the bench/data scripts share: package archives checked by sha256, and .xz files written.

The scripts rebuild bundled data from fixed package versions, so an archive whose digest differs
is refused rather than read (another version would give other files).
"""

from __future__ import annotations

import hashlib
import lzma
from collections.abc import Mapping, Sequence
from pathlib import Path


def checked(folder: Path, name: str, digests: Mapping[str, str]) -> Path:
    """``folder/name``, after checking it is there with the sha256 ``digests`` names."""
    path = folder / name
    if not path.is_file():
        raise SystemExit(f"{path}: missing; download it as the module docstring says")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != digests[name]:
        raise SystemExit(f"{path}: sha256 {digest} is not the expected {digests[name]}")
    return path


def write_xz(path: Path, lines: Sequence[str]) -> None:
    """``lines`` as one UTF-8 text file, xz at the strongest preset (bundled files stay small)."""
    data = ("\n".join(lines) + "\n").encode("utf-8")
    path.write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    print(f"{path}: {len(lines):,} lines, {path.stat().st_size:,} bytes")
