"""Files in and out, one way each: atomic writes, JSON, checksums, compressed text, checked lines, locks.

Writes go to a temp name in the same folder (``.<name>.<pid>.<random>.tmp``), are fsynced and
renamed over the target, so no run ever leaves a half-written file where a good one was; a
successful write removes the temps that dead processes left for the same target (the pid says
whose a temp is, so a live writer's is never touched). A write that fails for the environment's
sake (no permission, read-only filesystem, disk or quota full, a name too long) is a one-line
:class:`UserError` naming the path and what to do; :func:`check_writable` asks the same question
before any work, with a probe that bears the longest temporary name the write will make. Work in
TMPDIR goes through :func:`temp_folder`, whose refusals name TMPDIR, not the output.

What is there already is never replaced unless it is what the write makes: a file output only
replaces a regular file, a folder output only a real folder; a symbolic link, a device, a named
pipe or a socket in the output's place is a one-line :class:`UserError` (replacing a link would
lose it, writing through it would change a file the user did not name). :func:`check_writable`
also refuses an output that is, or holds, one of the command's inputs, and
:func:`refuse_same_outputs` two outputs of one command that are one file, and
:func:`refuse_package` an output among the package's own files.
:func:`folder_lock` keeps a second process from writing into a folder another one is writing; its
lock file is never followed through a link and only ever holds the holder's note.
Reads of text check every line (a NUL byte or bad UTF-8 is a one-line :class:`UserError` naming
the file and line).
"""

from __future__ import annotations

import bz2
import contextlib
import ctypes
import errno
import fcntl
import functools
import gzip
import hashlib
import json
import lzma
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
import time
import zlib
from collections.abc import Collection, Generator, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO

import numpy as np

from ctx2static.errors import UserError
from ctx2static.interrupts import held
from ctx2static.resources import DATA_DIR, PACKAGE_DIR

_OPENERS = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}
COMPRESSED = tuple(_OPENERS)


_ENVIRONMENT = {
    errno.EACCES: "permission denied; write somewhere you may or fix the folder's permissions",
    errno.EPERM: "not permitted (an immutable or protected path); write somewhere else or fix the path",
    errno.EROFS: "the filesystem is read-only; write to another folder",
    errno.ENOSPC: "no space left on the device; free some space or write elsewhere, then re-run",
    errno.EDQUOT: "the disk quota is exhausted; free some space or write elsewhere, then re-run",
    errno.ENAMETOOLONG: "a name in the path is longer than the filesystem allows (255 bytes, temporary "
    "names included); choose a shorter name",
}


def environment_error(exc: OSError, path: str | os.PathLike | None = None) -> UserError | None:
    """The one-line :class:`UserError` for an OSError the user must fix (permissions, read-only, full).

    It names ``path`` (else the error's file name); None for any other error (a programming error
    stays an exception).
    """
    what = _ENVIRONMENT.get(exc.errno or 0)
    if what is None:
        return None
    return UserError(f"{path or exc.filename or 'output'}: cannot write: {what}")


@contextlib.contextmanager
def user_errors_for(path: str | os.PathLike) -> Iterator[None]:
    """Turn permission, read-only and disk-full OSErrors raised inside into one line naming ``path``."""
    try:
        yield
    except OSError as exc:
        mapped = environment_error(exc, path)
        if mapped is None:
            raise
        raise mapped from None


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.{os.getpid()}."


_OLD = "-old.tmp"
"""The suffix of :func:`atomic_dir`'s old folder: its temp's name with ``.tmp`` replaced, the longest
temporary name fileio makes for a target (``.<name>.<pid>.<8 random>-old.tmp``)."""
_RANDOM = 8  # the characters tempfile puts between prefix and suffix
_PID_DIGITS = 7  # the most a Linux pid has (pid_max is at most 2**22)


_TEMP = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)\.[^.]+\.tmp")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this process's temps outside an open write: left by a dead namesake
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def _stale(tmp: Path, name: str | None) -> bool:
    """Whether ``tmp`` is a temp of target ``name`` (None: of any target) left by a dead process."""
    m = _TEMP.fullmatch(tmp.name)
    return m is not None and (name is None or m["name"] == name) and not _alive(int(m["pid"]))


_PROBE = "write-probe"


def _remove(paths: Iterator[Path], name: str | None) -> list[Path]:
    removed = []
    with contextlib.suppress(OSError):
        for tmp in paths:
            if _stale(tmp, name):
                if tmp.is_dir() and not tmp.is_symlink():
                    shutil.rmtree(tmp, ignore_errors=True)
                else:
                    tmp.unlink(missing_ok=True)
                removed.append(tmp)
    return removed


def remove_stale_temps(path: str | os.PathLike) -> list[Path]:
    """Delete the temps of ``path`` (a file or folder target) that dead processes left; return them.

    Temps of live processes (another writer of the same target) are kept.
    """
    path = Path(path)
    return _remove(path.parent.glob(f".{glob_escape(path.name)}.*.tmp"), path.name)


def remove_stale_temps_in(folder: str | os.PathLike) -> list[Path]:
    """Delete every temp in ``folder`` that a dead process left (for a folder one writer owns)."""
    return _remove(Path(folder).glob(".*.tmp"), None)


def glob_escape(name: str) -> str:
    """``name`` with glob metacharacters escaped."""
    return re.sub(r"([*?[])", r"[\1]", name)


_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
    stat.S_IFREG: "a file",
}


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a file")


def check_target(path: str | os.PathLike, folder: bool | None = None) -> None:
    """Refuse, in one line, to replace anything at ``path`` but what the output itself is.

    ``folder``: True for a folder output (only a real folder may be replaced), False for a file
    (only a regular file), None when either may come. A symbolic link is refused, not replaced
    (the user's link would be lost) nor written through (the file it names was not named here).
    """
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there (the latter: a file in a parent's place)
        return
    kinds = {True: (stat.S_IFDIR,), False: (stat.S_IFREG,), None: (stat.S_IFDIR, stat.S_IFREG)}[folder]
    if stat.S_IFMT(mode) in kinds:
        return
    if stat.S_ISLNK(mode):
        raise UserError(
            f"{path}: is a symbolic link (to {os.readlink(path)}); an output never replaces a link nor "
            "writes through it: name the path it points to, or remove the link"
        )
    want = {True: "a folder", False: "a file", None: "a file or a folder"}[folder]
    raise UserError(f"{path}: is {_kind(mode)}, not {want}; remove it or choose another output path")


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
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent)
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
    old = path.with_name(f"{_temp_prefix(path)}{secrets.token_hex(_RANDOM // 2)}{_OLD}")
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
        tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent))
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
            raise UserError(
                f"{path}: another process saved this folder at the same moment, {_RACES} times over; it "
                f"holds that one's output and this run's is kept as {kept}: rename the one you want to "
                f"{path.name}"
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
    moved = tmp.with_name(tmp.name.removesuffix(".tmp") + _OLD)
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


def check_replaceable(path: Path, names: set[str]) -> None:
    """A one-line error when folder ``path`` holds an entry not in ``names`` (it would be lost).

    :func:`atomic_dir` asks it before its rename; a command asks it before its work too, so that
    ``--out`` naming a folder of other files is refused before the training, not after it.
    """
    try:
        foreign = sorted(set(os.listdir(path)) - names)
    except FileNotFoundError:
        return
    if foreign:
        more = f" and {len(foreign) - 1} more" * (len(foreign) > 1)
        raise UserError(
            f"{path}: holds {foreign[0]}{more}, which this output does not write; it replaces the folder "
            "whole, so move them away or choose another output path"
        )


def check_writable(
    path: str | os.PathLike,
    inside: bool = False,
    inputs: Iterable[str | os.PathLike | None] = (),
    folder: bool | None = None,
    beside: Iterable[str | os.PathLike] = (),
) -> None:
    """Fail now, in one line, when ``path`` cannot or must not be written: before the work, not after it.

    Writes and deletes a small probe file where the output will go: beside ``path`` (a file, or a
    folder replaced whole), or in it with ``inside`` (a cache or study folder written file by
    file, which may be a link to a folder); a folder not made yet is probed at its nearest
    existing parent. Beside ``path`` the probe has the longest temporary name the write will make
    (for ``path`` or any of ``beside``, the files written next to it), so a name too long for the
    filesystem fails here, not once the work is done. What is in ``path``'s place must be
    replaceable by the output (``folder``: see :func:`check_target`), and neither ``path`` nor
    ``beside`` may be, nor hold, any of ``inputs`` (the command's input files and folders, every
    file of each; None and paths that do not exist are skipped).
    """
    path = Path(path)
    written = [Path(b) for b in beside]
    inputs = list(inputs)
    with user_errors_for(path):
        where = path if inside else path.parent
        while not os.path.exists(where) and where != where.parent:
            where = where.parent
        longest = _check_names(path, written, where, temp=not inside)
        if not inside or (path.is_symlink() and not path.is_dir()):
            check_target(path, folder=True if inside else folder)
        for output in (path, *written):
            refuse_package(output)
            refuse_inputs(output, inputs)
        if not where.is_dir():
            kind = _kind(where.stat().st_mode)
            raise UserError(f"{path}: {where} is {kind}, not a folder; choose another output path")
        if inside:
            fd, probe = tempfile.mkstemp(prefix=f".{_PROBE}.{os.getpid()}.", suffix=".tmp", dir=where)
        else:
            fd, probe = tempfile.mkstemp(prefix=_temp_prefix(longest), suffix=_OLD, dir=where)
        try:
            os.write(fd, b"\0" * 4096)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
        _remove(where.glob(f".{_PROBE}.*.tmp"), _PROBE)  # probes of runs killed mid-probe


def _check_names(path: Path, beside: list[Path], where: Path, temp: bool) -> Path:
    """The one of ``path`` and ``beside`` with the longest name, once every name fits the filesystem.

    Each part of ``path``, and with ``temp`` the longest temporary name a write beside it makes, must fit the
    filesystem's limit on a name (``NAME_MAX``, 255 bytes on most): else a one-line error saying
    by how much to shorten it.
    """
    try:
        limit = os.pathconf(where if where.is_dir() else where.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > limit:
            raise UserError(
                f"{_shown(str(path))}: the name {_shown(part)} is {size} bytes, over the {limit} a name "
                "may hold on this filesystem; choose a shorter name"
            )
    longest = max((path, *beside), key=lambda p: len(os.fsencode(p.name)))
    name = f"{_temp_prefix(longest)}{'X' * _RANDOM}{_OLD}"
    size = len(os.fsencode(name)) - len(str(os.getpid())) + _PID_DIGITS  # so a later run's pid fits too
    if temp and size > limit:
        raise UserError(
            f"{_shown(str(path))}: the name is too long to write safely: the temporary name of "
            f"{_shown(longest.name)} (.NAME.PID.XXXXXXXX{_OLD}) is {size} bytes, over the {limit} a name "
            f"may hold on this filesystem; shorten the name by {size - limit} bytes"
        )
    return longest


def check_names(path: str | os.PathLike) -> None:
    """A one-line error when a part of ``path``, or the temporary name of a write to it, is too long.

    For outputs known before their folder is (a study's names): the limit is that of the current
    folder's filesystem; :func:`check_writable` asks the output's own folder later.
    """
    _check_names(Path(path), [], Path.cwd(), temp=True)


def _shown(name: str) -> str:
    """``name``, its middle left out when long (a message stays one readable line)."""
    return name if len(name) <= 60 else f"{name[:20]}...{name[-36:]}"  # the end: suffix, temp, sidecar


def refuse_inputs(path: str | os.PathLike, inputs: Iterable[str | os.PathLike | None]) -> None:
    """A one-line error when output ``path`` is one of ``inputs``, a folder holding one, or inside one.

    Compared as resolved paths (through links and ``..``) and by inode (a hard link), so no
    spelling of an input gets it overwritten by the output.
    """
    path = Path(path)
    out = os.path.realpath(path)
    for given in inputs:
        if given is None or not os.path.exists(given):
            continue
        real = os.path.realpath(given)
        if real == out or (path.exists() and os.path.samefile(path, given)):
            raise UserError(
                f"{path}: is the input {given}; an output never replaces an input: write it elsewhere"
            )
        if real.startswith(out.rstrip(os.sep) + os.sep):
            raise UserError(
                f"{path}: holds the input {given}; an output never replaces an input: write it elsewhere"
            )
        if os.path.isdir(real) and out.startswith(real.rstrip(os.sep) + os.sep):
            # a file written into a cache or vectors folder replaces or joins what the folder's
            # manifest checks; one written into a corpus folder is read as corpus next time
            raise UserError(
                f"{path}: is inside the input folder {given}; an output never writes into an input: "
                "write it elsewhere"
            )


def refuse_package(path: str | os.PathLike) -> None:
    """A one-line error when output ``path`` would land among the package's own files.

    That is the installed package folder itself (in a clone, the clone), an entry directly in it,
    or anything in a folder it ships (a subpackage, ``data/``): ``--out cache`` run in a clone
    would otherwise fill the ``ctx2static.cache`` package with shards. A folder of one's own
    inside a clone (``runs/``, where the project's own studies go) is not the package's.
    """
    real = Path(os.path.realpath(path))
    try:
        parts = real.relative_to(PACKAGE_DIR).parts
    except ValueError:
        return
    if len(parts) <= 1 or parts[0] == DATA_DIR.name or (PACKAGE_DIR / parts[0] / "__init__.py").is_file():
        raise UserError(
            f"{path}: is inside the ctx2static package ({PACKAGE_DIR}), among its own files; write "
            "outputs in a folder of yours: run the command from there, or give an output path outside it"
        )


def refuse_same_outputs(outputs: Iterable[tuple[str, str | os.PathLike | None]]) -> None:
    """A one-line error when two of a command's ``(option, path)`` outputs are one file (one would be lost).

    Compared as :func:`refuse_inputs` compares: resolved paths, and by inode where both exist.
    """
    seen: list[tuple[str, str | os.PathLike]] = []
    for option, path in outputs:
        if path is None:
            continue
        for other, earlier in seen:
            same = os.path.realpath(path) == os.path.realpath(earlier) or (
                os.path.exists(path) and os.path.exists(earlier) and os.path.samefile(path, earlier)
            )
            if same:
                raise UserError(
                    f"{path}: given to both {other} and {option}; one would overwrite the other: "
                    "give each its own path"
                )
        seen.append((option, path))


@contextlib.contextmanager
def temp_folder(prefix: str) -> Iterator[Path]:
    """A temporary folder in TMPDIR, deleted at the end.

    A full disk, a quota or a permission refused inside it is a one-line error naming the
    temporary folder and TMPDIR, the fix, not the command's output.
    """
    where = tempfile.gettempdir()
    try:
        with tempfile.TemporaryDirectory(prefix=prefix, dir=where) as tmp:
            yield Path(tmp)
    except OSError as exc:
        theirs = exc.filename is not None and not os.path.realpath(exc.filename).startswith(
            os.path.realpath(where).rstrip(os.sep) + os.sep
        )
        what = None if theirs else _ENVIRONMENT.get(exc.errno or 0)
        if what is None:
            raise
        raise UserError(
            f"{where}: cannot write the temporary files there (TMPDIR): {what.split(';')[0]}; free "
            "space there or set TMPDIR to a folder with room, e.g. TMPDIR=/path/with/space"
        ) from None


_HELD: dict[str, list[Any]] = {}  # lock file -> [file descriptor, count] (re-entrant within a process)
LOCK_NAME = ".lock"


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike, what: str) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (``flock`` on ``folder/.lock``) while writing into it.

    Another process holding it is a one-line error naming its pid, command and start time; the
    lock is re-entrant within one process and released when the block ends or the process dies
    (even by kill -9). ``what`` names the folder in messages ("cache", "study").
    """
    token = acquire_lock(folder, what)
    try:
        yield
    finally:
        release_lock(token)


def acquire_lock(folder: str | os.PathLike, what: str) -> str:
    """Take the lock of :func:`folder_lock` (a token for :func:`release_lock`); see there."""
    folder = Path(folder)
    with user_errors_for(folder):
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / LOCK_NAME
        key = os.path.join(os.path.realpath(folder), LOCK_NAME)  # the lock itself is never followed
        if key in _HELD:
            _HELD[key][1] += 1
            return key
        fd = _open_lock(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, _NOTE_MAX, 0).decode("utf-8", "replace").strip() or "another process"
        os.close(fd)
        raise UserError(
            f"{folder}: another ctx2static process is writing this {what} ({holder}); "
            "wait for it to end, or write elsewhere"
        ) from None
    except OSError:  # a filesystem without locks (some network mounts): go on unlocked
        pass
    argv = " ".join(sys.argv[:3]).replace("\n", " ")[:200]
    note = f"pid {os.getpid()}: {argv}, since {time.strftime('%Y-%m-%d %H:%M:%S')}"
    os.ftruncate(fd, 0)
    os.pwrite(fd, note.encode(), 0)
    _HELD[key] = [fd, 1]
    return key


_NOTE_MAX = 4096
_NOTE = re.compile(rb"(pid \d+: [^\n]*)?")
"""What a lock file holds: nothing, or its holder's note (one line); anything else is not ours."""


def _open_lock(path: Path) -> int:
    """Open (or create) lock file ``path``, refusing any file that is not a ctx2static lock.

    The lock is written (the holder's note) and emptied, so it must be a file this tool made: a
    regular file with one name (not a link, symbolic or hard, to some other file) holding nothing
    but a note. Anything else is a one-line error, and the file is left as it is.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    fd = None
    if st is None or stat.S_ISREG(st.st_mode):  # a device or a pipe is never opened: that can act on it
        try:
            fd = os.open(path, flags, 0o666)
            st = os.fstat(fd)
        except OSError as exc:
            if exc.errno != errno.ELOOP:  # ELOOP: a link was put in its place since
                raise
            st = os.lstat(path)
    if fd is not None:
        if st.st_nlink == 1 and _NOTE.fullmatch(os.pread(fd, _NOTE_MAX + 1, 0)):
            return fd
        os.close(fd)
    why = (
        f"it has {st.st_nlink} names (hard links)" if stat.S_ISREG(st.st_mode) and st.st_nlink > 1
        else "it holds something other than a lock note" if stat.S_ISREG(st.st_mode)
        else f"it is {_kind(st.st_mode)}"
    )  # fmt: skip
    raise UserError(
        f"{path}: not a ctx2static lock file ({why}); locks are never followed or overwritten: "
        "move it away, then re-run"
    )


def release_lock(token: str) -> None:
    """Release one hold of a lock taken by :func:`acquire_lock` (the last one unlocks it)."""
    held = _HELD.get(token)
    if held is None:
        return
    held[1] -= 1
    if held[1] == 0:
        del _HELD[token]
        with contextlib.suppress(OSError):
            os.ftruncate(held[0], 0)  # the holder's note goes with the lock
        os.close(held[0])


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


def read_json(path: str | os.PathLike, fix: str = "delete it and run again") -> Any:
    """Parse a JSON file; a file that is not JSON is a one-line error naming ``fix``."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):  # nesting deeper than Python's stack
        raise UserError(f"{path}: not valid JSON; {fix}") from None


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
        raise UserError(
            f"{path}: its sha256 is not the one pinned for it (damaged, or not the release ctx2static "
            f"was made for); {fix}"
        )


SEAL = "SHA256SUMS"
"""The file listing the sha256 of every file of a folder made once and read many times (an assembled
teacher, an exported graph); ``sha256sum -c SHA256SUMS`` checks it by hand."""
_STAMP = ".SHA256SUMS.verified"
_SEAL_LINE = re.compile(r"(?P<digest>[0-9a-f]{64})  (?P<name>[^/\0\n]+)")


def seal_folder(folder: str | os.PathLike) -> None:
    """Write ``folder/SHA256SUMS``: the sha256 of each file in it, for :func:`check_sealed` at every load.

    Called on the new folder before it is renamed into place, so what is sealed is what was made.
    """
    folder = Path(folder)
    names = sorted(p.name for p in folder.iterdir() if p.name not in (SEAL, _STAMP))
    for name in names:
        if not (folder / name).is_file() or (folder / name).is_symlink():
            raise ValueError(f"{folder / name}: a sealed folder holds only files")
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


def _stats(folder: Path, names: Iterable[str]) -> list[list[int]]:
    """What changes when a file is written, replaced or touched: size, mtime, ctime, inode, device."""
    out = []
    for name in names:
        st = os.lstat(folder / name)
        out.append([st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev])
    return out


def check_sealed(folder: str | os.PathLike, fix: str) -> None:
    """One line naming ``fix`` unless ``folder`` holds just the files its SHA256SUMS lists, unchanged.

    Every file is hashed once; then a stamp beside SHA256SUMS records each file's size, mtime,
    ctime and inode, and while they all stay the same a load skips the hashing (0.3 s for a
    547 MB teacher at 2 GB/s, paid at every load otherwise). ctime cannot be set back from user
    space, so a file changed in any way since (even with its mtime restored) is hashed again and
    refused. A stamp that cannot be written (a read-only cache) only means hashing at each load.
    """
    folder = Path(folder)
    try:
        text = (folder / SEAL).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise UserError(
            f"{folder}: holds no readable {SEAL} (made by an older ctx2static, or damaged); {fix}"
        ) from None
    listed = [_SEAL_LINE.fullmatch(line) for line in text.splitlines()]
    if not listed or None in listed:
        raise UserError(f"{folder}/{SEAL}: not a list of sha256 digests and file names; {fix}")
    digests = {m["name"]: m["digest"] for m in listed if m is not None}
    with user_errors_for(folder):
        present = {p.name for p in folder.iterdir()} - {SEAL, _STAMP, LOCK_NAME}
    present = {n for n in present if not _TEMP.fullmatch(n)}
    if present != set(digests):
        odd = sorted(present ^ set(digests))[0]
        what = "is missing" if odd in digests else "was not there when it was made"
        raise UserError(f"{folder}: {odd} {what}; {fix}")
    names = sorted(digests)
    for name in names:
        mode = os.lstat(folder / name).st_mode
        if not stat.S_ISREG(mode):
            raise UserError(f"{folder}: {name} is {_kind(mode)}, not a file; {fix}")
    stamp = {"seal": hashlib.sha256(text.encode()).hexdigest(), "stats": _stats(folder, names)}
    with contextlib.suppress(OSError, ValueError):
        if json.loads((folder / _STAMP).read_text(encoding="utf-8")) == stamp:
            return
    for name in names:
        if sha256_file(folder / name) != digests[name]:
            raise UserError(
                f"{folder}: {name} does not match the sha256 written when it was made (changed or damaged "
                f"since); {fix}"
            )
    if _stats(folder, names) == stamp["stats"]:  # not changed while it was hashed
        with contextlib.suppress(OSError, UserError):
            write_json(folder / _STAMP, stamp)


def open_compressed(path: str | os.PathLike) -> BinaryIO:
    """Open a file for reading bytes, decompressing by suffix (.gz, .xz, .bz2, in any case)."""
    path = Path(path)
    opener = _OPENERS.get(path.suffix.lower(), open)  # "x.GZ" is as gzipped as "x.gz"
    return opener(path, "rb")  # type: ignore[operator]


_BOM = b"\xef\xbb\xbf"


def read_lines(
    path: str | os.PathLike, expect: str, limit: int | None = None
) -> Generator[tuple[int, str], None, None]:
    """Yield ``(line number, line)`` of a plain or compressed UTF-8 file, without line ends.

    ``expect`` describes the format for the error messages (e.g. "UTF-8 text, one sentence a
    line"): a NUL byte, bad UTF-8, a missing file or a damaged archive is a one-line error naming
    the line. A UTF-8 byte order mark opening the file is dropped. With
    ``limit`` no line costs more than ``limit`` bytes of memory: a longer one comes in pieces (each
    with the line's number), cut after a space or tab where there is one, else between characters.
    """
    require_file(path, expect)
    n = 0
    try:
        with open_compressed(path) as fh:
            for n, raw in _numbered(fh, limit, strip=_BOM):
                if b"\x00" in raw:
                    raise UserError(
                        f"{path}: line {n} holds a NUL byte, so this looks like a binary file; pass {expect}"
                    )
                try:
                    yield n, raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as exc:
                    raise UserError(
                        f"{path}: line {n} is not valid UTF-8 ({exc.reason}); "
                        "convert the file first, e.g. iconv -f latin1 -t utf-8"
                    ) from None
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        raise UserError(
            f"{path}: cannot decompress or read it near line {n + 1} ({exc}); check the file is complete"
        ) from None


def require_file(path: str | os.PathLike, expect: str) -> None:
    """A one-line error naming ``expect`` unless ``path`` is a regular file (a link to one is).

    A named pipe or a device is named as what it is, not as missing: it may never end (``/dev/zero``)
    or be read once only, where an input is read more than once.
    """
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise UserError(f"{path}: no such file; pass {expect}") from None
    if not stat.S_ISREG(mode):
        raise UserError(
            f"{path}: is {_kind(mode)}, not a file (a pipe or a device may never end, and an input is read "
            f"more than once); pass {expect}"
        )


def _numbered(fh: BinaryIO, limit: int | None, strip: bytes = b"") -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of ``fh``; with ``limit``, lines longer than it in pieces (see read_lines).

    ``strip``: bytes dropped where they open the file (a byte order mark, which Windows tools write).
    """
    if strip and fh.peek(len(strip))[: len(strip)] == strip:  # type: ignore[attr-defined]
        fh.read(len(strip))
    if limit is None:
        yield from enumerate(fh, 1)
        return
    n, carry = 1, b""
    while True:
        raw = carry + fh.readline(limit - len(carry))
        if len(raw) < limit or raw.endswith(b"\n"):  # the line's end (or the file's)
            if raw:
                yield n, raw
            if not raw.endswith(b"\n"):
                return
            n, carry = n + 1, b""
            continue
        cut = max(raw.rfind(b" ", limit // 2), raw.rfind(b"\t", limit // 2)) + 1
        if cut <= 0:  # no blank in the second half: cut before the last character's first byte
            cut = len(raw) - 1
            while cut > len(raw) - 4 and raw[cut] & 0xC0 == 0x80:
                cut -= 1
        yield n, raw[:cut]
        carry = raw[cut:]
