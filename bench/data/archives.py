"""What the bench/data scripts share: package archives checked by sha256, and .xz files written.

The scripts rebuild bundled data from fixed package versions, so an archive whose digest differs
is refused rather than read (another version would give other files).
"""

from __future__ import annotations

import hashlib
import io
import lzma
import re
import tarfile
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


def deb_members(path: Path, wanted: re.Pattern[str]) -> dict[str, bytes]:
    """The files of the .deb ``path`` whose path matches ``wanted``, read from the ar archive's data.tar.*."""
    data = path.read_bytes()
    pos = 8  # "!<arch>\n"
    while pos < len(data):
        member, size = data[pos : pos + 16].decode().strip(), int(data[pos + 48 : pos + 58])
        body = data[pos + 60 : pos + 60 + size]
        pos += 60 + size + size % 2
        if member.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body)) as tar:
                return {
                    m.name.lstrip("./"): tar.extractfile(m).read()  # type: ignore[union-attr]
                    for m in tar.getmembers()
                    if m.isfile() and wanted.search(m.name)
                }
    raise SystemExit(f"{path}: no data.tar member; is it a Debian package?")
