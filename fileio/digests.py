"""Checksums: a file's sha256 against what a manifest says, and sealed folders.

A sealed folder holds a ``SHA256SUMS`` of every file in it and its subfolders, every file hashed
against it each time the folder is used.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

from ctx2static.errors import InputError, UserError
from ctx2static.fileio.atomic import atomic_write
from ctx2static.fileio.locks import LOCK_NAME
from ctx2static.fileio.oserrors import user_errors_for
from ctx2static.fileio.outputs import kind_of
from ctx2static.fileio.temps import TEMP_NAME


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_sha256(path: str | os.PathLike, expected: str, fix: str) -> None:
    """A one-line error naming ``fix`` when ``path``'s bytes are not the ones whose sha256 is ``expected``.

    For files that come from elsewhere (a teacher's package parts), checked before they are used.
    """
    if sha256_file(path) != expected:
        raise InputError(
            path,
            f"{path}: its sha256 is not the one pinned for it (damaged, or not the release ctx2static "
            f"was made for); {fix}",
        )


SEAL = "SHA256SUMS"
"""The file listing the sha256 of every file of a folder made once and read many times (an assembled
teacher, an exported graph); ``sha256sum -c SHA256SUMS`` checks it by hand."""
_SEAL_LINE = re.compile(r"(?P<digest>[0-9a-f]{64})  (?P<name>[^\0\n]+)")
_OWN = (SEAL, LOCK_NAME)


def _entries(folder: Path) -> list[str]:
    """Every entry under ``folder`` but its real subfolders, as sorted relative POSIX paths.

    A link (to a file or a folder) is an entry, never followed: :func:`check_sealed` refuses it.
    The seal's own files and a writer's temps at the top are left out.
    """
    found = []
    for root, dirs, files in os.walk(folder):
        here = Path(root).relative_to(folder)
        links = [d for d in dirs if os.path.islink(os.path.join(root, d))]
        dirs[:] = [d for d in dirs if d not in links]
        found += [(here / n).as_posix() for n in [*files, *links]]
    return sorted(n for n in found if not (n in _OWN or TEMP_NAME.fullmatch(n)))


def _safe_name(name: str) -> bool:
    """A SHA256SUMS name that stays inside the folder: relative, no ``..``, ``.`` or empty parts."""
    parts = name.split("/")
    return all(p not in ("", ".", "..") for p in parts)


def seal_folder(folder: str | os.PathLike) -> None:
    """Write ``folder/SHA256SUMS``: the sha256 of each file under it, for :func:`check_sealed` at every load.

    Called on the new folder before it is renamed into place, so what is sealed is what was made.
    """
    folder = Path(folder)
    names = _entries(folder)
    for name in names:
        if not (folder / name).is_file() or (folder / name).is_symlink():
            raise ValueError(f"{folder / name}: a sealed folder holds only files and folders")
    with atomic_write(folder / SEAL, "w", encoding="utf-8") as fh:
        fh.writelines(f"{sha256_file(folder / name)}  {name}\n" for name in names)


def folder_sha256(folder: str | os.PathLike) -> str:
    """One sha256 for every file under ``folder``: of its SHA256SUMS-style listing (digest, path), sorted.

    For a folder that cannot be sealed (a package's, in site-packages): its one digest is pinned.
    """
    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    listing = "".join(f"{sha256_file(p)}  {p.relative_to(folder).as_posix()}\n" for p in files)
    return hashlib.sha256(listing.encode()).hexdigest()


def check_sealed(folder: str | os.PathLike, fix: str, pinned: str = "") -> None:
    """One line naming ``fix`` unless ``folder`` holds just the files its SHA256SUMS lists, unchanged.

    ``pinned``: the sha256 the SHA256SUMS itself must have, for a folder that is the same bytes on
    every machine (a teacher only unpacked): whoever can change a file can rewrite SHA256SUMS to
    match, but not the pin, which ships with the code.

    Every file is hashed at every use, nothing remembered in between: a record of what was checked
    (sizes, times, inodes) would sit where the files do, so whoever can change a file can rewrite it
    to match. The cost, measured (``bench/speed/seal_check.py``): about 1.5 GB/s on one core, so
    0.9 s for EmbeddingGemma's 1.3 GB with the files in the page cache, paid once per extract start.
    """
    folder = Path(folder)
    try:
        text = (folder / SEAL).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise InputError(
            folder, f"{folder}: holds no readable {SEAL} (made by an older ctx2static, or damaged); {fix}"
        ) from None
    if pinned and hashlib.sha256(text.encode()).hexdigest() != pinned:
        raise InputError(
            folder, f"{folder}/{SEAL}: not the one pinned for this folder (changed since it was made); {fix}"
        )
    listed = [_SEAL_LINE.fullmatch(line) for line in text.splitlines()]
    if not listed or None in listed or not all(m is not None and _safe_name(m["name"]) for m in listed):
        raise UserError(f"{folder}/{SEAL}: not a list of sha256 digests and file names; {fix}")
    digests = {m["name"]: m["digest"] for m in listed if m is not None}
    with user_errors_for(folder):
        present = set(_entries(folder))
    if present != set(digests):
        odd = sorted(present ^ set(digests))[0]
        what = "is missing" if odd in digests else "was not there when it was made"
        raise InputError(folder, f"{folder}: {odd} {what}; {fix}")
    names = sorted(digests)
    for name in names:
        mode = os.lstat(folder / name).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(folder, f"{folder}: {name} is {kind_of(mode)}, not a file; {fix}")
    for name in names:
        if sha256_file(folder / name) != digests[name]:
            raise InputError(
                folder,
                f"{folder}: {name} does not match the sha256 written when it was made (changed or damaged "
                f"since); {fix}",
            )
