"""Temporary names and folders, and the removal of those a dead process left.

A write's temporary is ``.<name>.<pid>.<random>.tmp`` beside its target; a successful write removes
the ones that dead processes left for the same target (the pid says whose a temp is, so a live
writer's is never touched). Work in TMPDIR goes through :func:`temp_folder`, whose refusals name
TMPDIR, not the output.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ctx2static.errors import OutputError
from ctx2static.fileio.oserrors import ENVIRONMENT_ERRORS


def temp_prefix(path: Path) -> str:
    """The start of this process's temporary names for ``path``: ``.<name>.<pid>.``."""
    return f".{path.name}.{os.getpid()}."


OLD_SUFFIX = "-old.tmp"
"""The suffix of :func:`atomic_dir`'s old folder: its temp's name with ``.tmp`` replaced, the longest
temporary name fileio makes for a target (``.<name>.<pid>.<8 random>-old.tmp``)."""
RANDOM_CHARS = 8  # the characters tempfile puts between prefix and suffix
PID_DIGITS = 7  # the most a Linux pid has (pid_max is at most 2**22)


TEMP_NAME = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)\.[^.]+\.tmp")


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
    m = TEMP_NAME.fullmatch(tmp.name)
    return m is not None and (name is None or m["name"] == name) and not _alive(int(m["pid"]))


PROBE_NAME = "write-probe"


def remove_stale(paths: Iterator[Path], name: str | None) -> list[Path]:
    """Remove those of ``paths`` that are temporaries of ``name`` left by dead processes; return them."""
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
    return remove_stale(path.parent.glob(f".{glob_escape(path.name)}.*.tmp"), path.name)


def remove_stale_temps_in(folder: str | os.PathLike) -> list[Path]:
    """Delete every temp in ``folder`` that a dead process left (for a folder one writer owns)."""
    return remove_stale(Path(folder).glob(".*.tmp"), None)


def glob_escape(name: str) -> str:
    """``name`` with glob metacharacters escaped."""
    return re.sub(r"([*?[])", r"[\1]", name)


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
        what = None if theirs else ENVIRONMENT_ERRORS.get(exc.errno or 0)
        if what is None:
            raise
        raise OutputError(
            where,
            f"{where}: cannot write the temporary files there (TMPDIR): {what.split(';')[0]}; free "
            "space there or set TMPDIR to a folder with room, e.g. TMPDIR=/path/with/space",
        ) from None
