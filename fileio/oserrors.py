"""An operation the environment refuses, as one line naming the path and what to do.

No permission, a read-only filesystem, a full disk or quota, a name too long, a mount point or busy
path where an output is renamed into place: a :class:`UserError`, never a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator

from ctx2static.errors import OutputError, UserError

MOUNT_POINT = (
    "it is a mount point or in use, and an output is put in place by a rename, which the system "
    "refuses there; write to a path inside it, or elsewhere"
)
"""Why an output cannot replace a mount point or a busy path (EBUSY, EXDEV at its rename)."""

ENVIRONMENT_ERRORS = {
    errno.EACCES: "permission denied; write somewhere you may or fix the folder's permissions",
    errno.EPERM: "not permitted (an immutable or protected path); write somewhere else or fix the path",
    errno.EROFS: "the filesystem is read-only; write to another folder",
    errno.ENOSPC: "no space left on the device; free some space or write elsewhere, then re-run",
    errno.EDQUOT: "the disk quota is exhausted; free some space or write elsewhere, then re-run",
    errno.ENAMETOOLONG: "a name in the path is longer than the filesystem allows (255 bytes, temporary "
    "names included); choose a shorter name",
    errno.EBUSY: MOUNT_POINT,
    errno.EXDEV: MOUNT_POINT,
}


def environment_error(exc: OSError, path: str | os.PathLike | None = None) -> UserError | None:
    """The one-line :class:`UserError` for an OSError the user must fix (permissions, read-only, full).

    It names ``path`` (else the error's file name); None for any other error (a programming error
    stays an exception).
    """
    what = ENVIRONMENT_ERRORS.get(exc.errno or 0)
    if what is None:
        return None
    return OutputError(
        path or exc.filename or "output", f"{path or exc.filename or 'output'}: cannot write: {what}"
    )


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
