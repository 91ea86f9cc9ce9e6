"""Atomic writes: nothing is ever half-written where a good file was.

A file or folder is written under a temporary name in the same folder, fsynced and renamed over
the target. A folder replaces the old one by an exchange of the two names (or a rename when the
kernel has no exchange), with the signals that would stop it between held.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from ctx2static.errors import OutputError
from ctx2static.fileio.oserrors import user_errors_for
from ctx2static.fileio.outputs import check_replaceable, check_target
from ctx2static.fileio.temps import OLD_SUFFIX, RANDOM_CHARS, remove_stale_temps, temp_prefix
from ctx2static.interrupts import held

Renames = list[tuple[str | None, Path]]
"""Written temps and their targets, renamed together by :func:`atomic_files` (None: the target is
removed, as a sidecar the new output does not have)."""


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike, mode: str = "wb", encoding: str | None = None, group: Renames | None = None
) -> Iterator[IO]:
    """Open a temp file beside ``path``; on success fsync and rename it over ``path``.

    With ``group`` (from :func:`atomic_files`) the rename waits for the group's other files.
    """
    path = Path(path)
    check_target(path, folder=False)
    with user_errors_for(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".tmp", dir=path.parent)
        try:
            os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual mode
            with os.fdopen(fd, mode, encoding=encoding) as fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            if group is not None:
                group.append((tmp, path))
                return
            with held(f"the new {path} is in place, whole"):
                os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    remove_stale_temps(path)


@contextlib.contextmanager
def atomic_files() -> Iterator[Renames]:
    """Files that appear together or not at all (an error in any leaves none of them).

    Each ``atomic_write(..., group=g)`` inside is written and fsynced under a temp name; all are
    renamed once the block ends well, with SIGINT and SIGTERM held (:func:`~ctx2static.interrupts.held`)
    and each old file kept until the last rename is done, so an error at any rename puts every old
    file back: the output is the old one whole or the new one whole, sidecars included.
    """
    group: Renames = []
    try:
        yield group
    except BaseException:
        _discard(group)
        raise
    if not group:
        return
    with held(f"the new {group[0][1]} is in place, whole, with its sidecars"):
        _commit(group)
    for _, path in group:
        remove_stale_temps(path)


def _discard(group: Renames) -> None:
    for tmp, _ in group:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def _commit(group: Renames) -> None:
    """Rename each temp of ``group`` over its target (None: remove the target); on any error, undo all."""
    kept: list[tuple[Path, Path | None]] = []  # each target replaced, and its old file's temp name
    try:
        for tmp, path in group:
            old = _keep_old(path)
            try:
                with user_errors_for(path):
                    if tmp is None:
                        path.unlink(missing_ok=True)
                    else:
                        os.replace(tmp, path)
            except BaseException:
                if old is not None:
                    old.unlink()  # a second name of the file still at path (rename would do nothing)
                raise
            kept.append((path, old))
    except BaseException:
        for path, old in reversed(kept):
            if old is not None:
                os.replace(old, path)
            else:
                path.unlink(missing_ok=True)
        _discard(group)
        raise
    for _, old in kept:
        if old is not None:
            old.unlink(missing_ok=True)


def _keep_old(path: Path) -> Path | None:
    """A second name for the file at ``path`` (a temp of this process), so a failed group can restore it.

    A hard link costs nothing; a filesystem without them gets a copy. None: nothing is there.
    """
    if not path.is_file():
        return None
    old = path.with_name(f"{temp_prefix(path)}{secrets.token_hex(RANDOM_CHARS // 2)}{OLD_SUFFIX}")
    with user_errors_for(path):
        try:
            os.link(path, old)
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                raise
            shutil.copy2(path, old)
    return old


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike, may_hold: Collection[str] = ()) -> Iterator[Path]:
    """Yield a temp folder beside ``path``; on success it replaces ``path`` whole.

    Only a real folder is replaced (see :func:`check_target`): a file, or a link to a folder, in
    ``path``'s place is a one-line error before any work, never moved away or deleted. So is a
    folder holding anything the new one does not hold, save the names in ``may_hold`` (what an
    earlier output of the same kind may hold): ``--out`` naming a folder of other files must not
    delete them. Two processes saving to ``path`` at once both succeed, the later rename winning,
    as with a file; should the other keep winning the race, this one's folder is kept under a name
    a one-line error gives, never deleted.
    """
    path = Path(path)
    check_target(path, folder=True)
    with user_errors_for(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(path), suffix=".tmp", dir=path.parent))
        os.chmod(tmp, 0o777 & ~_umask())
        try:
            yield tmp
            for f in tmp.rglob("*"):
                if f.is_file():
                    with open(f, "rb") as fh:
                        os.fsync(fh.fileno())
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        for _ in range(_RACES):
            try:
                check_target(path, folder=True)  # what appeared there while the folder was written
                check_replaceable(path, {*os.listdir(tmp), *may_hold})
                with held(f"the new {path} is in place, whole"):
                    if _swap(tmp, path):
                        break
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        else:
            kept = path.with_name(f"{path.name}.kept-{tmp.name.removesuffix('.tmp').rsplit('.', 1)[1]}")
            os.rename(tmp, kept)
            raise OutputError(
                path,
                f"{path}: another process saved this folder at the same moment, {_RACES} times over; it "
                f"holds that one's output and this run's is kept as {kept}: rename the one you want to "
                f"{path.name}",
            )
    remove_stale_temps(path)


_RACES = 3
"""Tries :func:`atomic_dir` makes to rename its folder into place while another save does the same."""


def _swap(tmp: Path, path: Path) -> bool:
    """Put folder ``tmp`` in ``path``'s place; False when another process put a folder there meanwhile.

    Where the system can (Linux's ``renameat2`` exchange), the two trade places in one step, so no
    moment, even ``kill -9``, finds ``path`` empty. Else the old folder first moves to a temp name of
    this process and comes back should the new one fail to move in; either way a crash before the
    old one is deleted leaves a temp that the next write of ``path`` removes, never a name that
    blocks it.
    """
    if _exchange(tmp, path):
        shutil.rmtree(tmp, ignore_errors=True)  # the old folder, under the temp's name now
        return True
    moved = tmp.with_name(tmp.name.removesuffix(".tmp") + OLD_SUFFIX)
    old: Path | None = moved
    try:
        os.rename(path, moved)
    except FileNotFoundError:
        old = None
    try:
        os.replace(tmp, path)
    except BaseException as exc:
        raced = isinstance(exc, OSError) and exc.errno in (errno.ENOTEMPTY, errno.EEXIST)
        if old is not None:
            try:
                os.rename(old, path)  # the old folder goes back where it was
            except OSError:
                if not raced:
                    raise
                shutil.rmtree(old, ignore_errors=True)  # a newer save took its place
        if raced:
            return False
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return True


_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap the entries ``a`` and ``b`` in one step; False where the system or filesystem cannot.

    Also False when ``b`` is not there (nothing to swap with).
    """
    renameat2 = getattr(_libc(), "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOENT, errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))


@functools.cache
def _libc() -> Any:
    """The C library this process runs on (``renameat2`` is glibc's from 2.28)."""
    return ctypes.CDLL(None, use_errno=True)


def write_npy(fh: IO[bytes], array: np.ndarray) -> None:
    """Write ``array`` to ``fh`` in the .npy format through ``fh.write``.

    ``np.save`` writes through ``ndarray.tofile``, whose full-disk error carries no errno, so it
    could not become the one-line message of :func:`user_errors_for`.
    """
    array = np.ascontiguousarray(array)
    np.lib.format.write_array_header_1_0(fh, np.lib.format.header_data_from_array_1_0(array))
    fh.write(array.data.cast("B"))


def write_json(path: str | os.PathLike, data: Any, indent: int | None = 1, sort_keys: bool = False) -> None:
    """Write ``data`` as JSON (one trailing newline), atomically."""
    with atomic_write(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=indent, sort_keys=sort_keys)
        fh.write("\n")
