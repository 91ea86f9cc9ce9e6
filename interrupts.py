"""SIGTERM handled as Ctrl-C: one way out of a run, whichever of the two stopped it.

Schedulers, ``timeout`` and ``kill`` send SIGTERM, whose default action ends the process at once:
no ``finally`` runs, so temporary folders (an encoded corpus, 4 bytes a token; ``distill``'s
cache) stay behind and nothing says what was kept. Inside :func:`sigterm_as_interrupt` SIGTERM
raises :class:`Terminated`, a ``KeyboardInterrupt``, so every cleanup written for Ctrl-C runs
for it too, and the command line says what was kept (exit 143, as a process killed by SIGTERM).

Inside :func:`held` (the renames that put an output in place) both signals wait for the block's
end, so an output is never caught between its old and its new self; the interrupt then raised
carries what was put in place (:func:`put_in_place`), for the line that says what was kept.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

HELD = (signal.SIGINT, signal.SIGTERM)


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


@contextlib.contextmanager
def held(done: str) -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends, then act as they would have; ``done`` says what it did.

    For a sequence of renames that replaces an output (old aside, new in, sidecars): a signal between
    two of them would leave the output's path empty or its files mixed. The first signal that
    arrived is raised again once the block is over; when the block ended well, the interrupt it
    raises carries ``done`` (:func:`put_in_place`). Only in the main thread, where Python runs
    signal handlers; a handler set outside Python (``getsignal`` None) is left alone.
    """
    before = {s: signal.getsignal(s) for s in HELD}
    if threading.current_thread() is not threading.main_thread() or None in before.values():
        yield
        return
    caught: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)

    for s in HELD:
        signal.signal(s, hold)
    ended = False
    try:
        yield
        ended = True
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        if caught:
            try:
                signal.raise_signal(caught[0])  # its handler runs here: the interrupt is raised now
            except KeyboardInterrupt as exc:
                if ended:
                    exc.put_in_place = done  # type: ignore[attr-defined]
                raise


def put_in_place(exc: BaseException) -> str | None:
    """What the :func:`held` block that ``exc`` (or its cause) interrupted had put in place, if it ended."""
    for e in (exc, exc.__cause__, exc.__context__):
        done = getattr(e, "put_in_place", None)
        if done:
            return str(done)
    return None
