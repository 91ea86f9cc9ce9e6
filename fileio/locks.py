"""Folder locks: one process writes into a folder at a time.

:func:`folder_lock` keeps a second process from writing into a folder another one is writing; its
lock file is never followed through a link and only ever holds the holder's note.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ctx2static.errors import OutputError
from ctx2static.fileio.oserrors import user_errors_for
from ctx2static.fileio.outputs import kind_of

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
        raise OutputError(
            folder,
            f"{folder}: another ctx2static process is writing this {what} ({holder}); "
            "wait for it to end, or write elsewhere",
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
        else f"it is {kind_of(st.st_mode)}"
    )  # fmt: skip
    raise OutputError(
        path,
        f"{path}: not a ctx2static lock file ({why}); locks are never followed or overwritten: "
        "move it away, then re-run",
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
