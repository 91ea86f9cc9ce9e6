"""SIGTERM handled as Ctrl-C: one way out of a run, whichever of the two stopped it.

Schedulers, ``timeout`` and ``kill`` send SIGTERM, whose default action ends the process at once:
no ``finally`` runs, so temporary folders (an encoded corpus, 4 bytes a token; ``distill``'s
cache) stay behind and nothing says what was kept. Inside :func:`sigterm_as_interrupt` SIGTERM
raises :class:`Terminated`, a ``KeyboardInterrupt``, so every cleanup written for Ctrl-C runs
for it too, and the command line says what was kept (exit 143, as a process killed by SIGTERM).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived; raised where Ctrl-C's ``KeyboardInterrupt`` would be."""


def _raise(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process (a stuck cleanup)
    raise Terminated


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated`; the previous handling comes back after.

    Only in the main thread (where Python runs signal handlers) and only while SIGTERM has its
    default action: a program's own handler is kept, and nested blocks are the outer one's.
    """
    mine = threading.current_thread() is threading.main_thread()
    if not mine or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
