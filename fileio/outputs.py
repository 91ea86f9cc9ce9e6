"""The checks an output passes before any work, so a run fails in its first second, not its last.

What is there already is never replaced unless it is what the write makes: a file output only
replaces a regular file, a folder output only a real folder; a symbolic link, a device, a named
pipe or a socket in the output's place is a one-line :class:`UserError` (replacing a link would
lose it, writing through it would change a file the user did not name). :func:`check_writable`
asks, with a probe that bears the longest temporary name the write will make, whether the write can
happen; it also refuses an output that is, or holds, one of the command's inputs;
:func:`refuse_same_outputs` refuses two outputs of one command that are one file, and
:func:`refuse_package` an output among the package's own files (in a clone: anywhere but ``runs/``).
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ctx2static.errors import OutputError
from ctx2static.fileio.oserrors import MOUNT_POINT, user_errors_for
from ctx2static.fileio.temps import (
    OLD_SUFFIX,
    PID_DIGITS,
    PROBE_NAME,
    RANDOM_CHARS,
    remove_stale,
    temp_prefix,
)
from ctx2static.resources import PACKAGE_DIR

_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
    stat.S_IFREG: "a file",
}


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words: "a symbolic link", "a folder", "a file", ..."""
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
        raise OutputError(
            path,
            f"{path}: is a symbolic link (to {os.readlink(path)}); an output never replaces a link nor "
            "writes through it: name the path it points to, or remove the link",
        )
    want = {True: "a folder", False: "a file", None: "a file or a folder"}[folder]
    raise OutputError(
        path, f"{path}: is {kind_of(mode)}, not {want}; remove it or choose another output path"
    )


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
        raise OutputError(
            path,
            f"{path}: holds {foreign[0]}{more}, which this output does not write; it replaces the folder "
            "whole, so move them away or choose another output path",
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
        if not inside and os.path.ismount(path):
            raise OutputError(path, f"{path}: cannot write: {MOUNT_POINT}")
        for output in (path, *written):
            refuse_package(output)
            refuse_inputs(output, inputs)
        if not where.is_dir():
            kind = kind_of(where.stat().st_mode)
            raise OutputError(path, f"{path}: {where} is {kind}, not a folder; choose another output path")
        if inside:
            fd, probe = tempfile.mkstemp(prefix=f".{PROBE_NAME}.{os.getpid()}.", suffix=".tmp", dir=where)
        else:
            fd, probe = tempfile.mkstemp(prefix=temp_prefix(longest), suffix=OLD_SUFFIX, dir=where)
        try:
            os.write(fd, b"\0" * 4096)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
        remove_stale(where.glob(f".{PROBE_NAME}.*.tmp"), PROBE_NAME)  # probes of runs killed mid-probe


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
            raise OutputError(
                _shown(str(path)),
                f"{_shown(str(path))}: the name {_shown(part)} is {size} bytes, over the {limit} a name "
                "may hold on this filesystem; choose a shorter name",
            )
    longest = max((path, *beside), key=lambda p: len(os.fsencode(p.name)))
    name = f"{temp_prefix(longest)}{'X' * RANDOM_CHARS}{OLD_SUFFIX}"
    size = len(os.fsencode(name)) - len(str(os.getpid())) + PID_DIGITS  # so a later run's pid fits too
    if temp and size > limit:
        raise OutputError(
            _shown(str(path)),
            f"{_shown(str(path))}: the name is too long to write safely: the temporary name of "
            f"{_shown(longest.name)} (.NAME.PID.XXXXXXXX{OLD_SUFFIX}) is {size} bytes, over the {limit} "
            f"a name may hold on this filesystem; shorten the name by {size - limit} bytes",
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
            raise OutputError(
                path, f"{path}: is the input {given}; an output never replaces an input: write it elsewhere"
            )
        if real.startswith(out.rstrip(os.sep) + os.sep):
            raise OutputError(
                path,
                f"{path}: holds the input {given}; an output never replaces an input: write it elsewhere",
            )
        if os.path.isdir(real) and out.startswith(real.rstrip(os.sep) + os.sep):
            # a file written into a cache or vectors folder replaces or joins what the folder's
            # manifest checks; one written into a corpus folder is read as corpus next time
            raise OutputError(
                path,
                f"{path}: is inside the input folder {given}; an output never writes into an input: "
                "write it elsewhere",
            )


OUTPUTS_DIR = "runs"
"""The one folder inside the package (a clone) that outputs may go under: the project's studies and yours."""

REPORTS_DIR = ("bench", "results")
"""Where the project's own bench scripts (``python bench/...``) write their reports in a clone."""


def refuse_package(path: str | os.PathLike) -> None:
    """A one-line error when output ``path`` would land inside the package folder but under ``runs/``.

    In a clone the package folder is the clone: ``--out cache`` would fill the ``ctx2static.cache``
    package with shards, ``-o docs/x.txt`` or ``-o .git/x`` would change the repository's own
    files. Under ``runs/`` (where the project's studies go) anything may be written; under
    :data:`REPORTS_DIR` only by a bench script of the clone, whose reports live there.
    """
    real = Path(os.path.realpath(path))
    try:
        parts = real.relative_to(PACKAGE_DIR).parts
    except ValueError:
        return
    if len(parts) > 1 and parts[0] == OUTPUTS_DIR:
        return
    if len(parts) > len(REPORTS_DIR) and parts[: len(REPORTS_DIR)] == REPORTS_DIR and _bench_script():
        return
    raise OutputError(
        path,
        f"{path}: is inside the ctx2static package ({PACKAGE_DIR}), among its own files; write "
        f"outputs in a folder of yours (or under its {OUTPUTS_DIR}/): run the command from there, or give "
        "an output path outside it",
    )


def _bench_script() -> bool:
    """Whether this process runs a script of the package's ``bench/`` (a maintainer's report writer)."""
    script = sys.argv[0] if sys.argv and sys.argv[0] else ""
    return bool(script) and Path(os.path.realpath(script)).is_relative_to(PACKAGE_DIR / REPORTS_DIR[0])


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
                raise OutputError(
                    path,
                    f"{path}: given to both {other} and {option}; one would overwrite the other: "
                    "give each its own path",
                )
        seen.append((option, path))
