"""SIGTERM, SIGHUP and SIGQUIT handled as Ctrl-C: one way out of a run, whichever of them stopped it.

Schedulers, ``timeout`` and ``kill`` send SIGTERM, a closed terminal or a dropped ssh session
SIGHUP, Ctrl+backslash SIGQUIT; the default action of each ends the process at once: no ``finally``
runs, so temporary folders (an encoded corpus, 4 bytes a token; ``distill``'s cache) stay behind,
an output's renames stop halfway and nothing says what was kept. Inside
:func:`sigterm_as_interrupt` each raises :class:`Terminated`, a ``KeyboardInterrupt``, so every
cleanup written for Ctrl-C runs for it too, and the command line says what was kept (exit 128 +
the signal's number, as a process killed by it: 143 for SIGTERM).

Inside :func:`held` (the renames that put an output in place) these signals and SIGINT wait for the
block's end, so an output is never caught between its old and its new self; the interrupt then
raised carries what was put in place (:func:`put_in_place`), for the line that says what was kept.

An interrupt raised where Python cannot pass it on (a ``ctypes`` callback such as numba's compiler
calls, a ``__del__``, a weakref callback) is only printed as "Exception ignored" and the run would go
on to exit 0; inside :func:`sigterm_as_interrupt` it is caught by ``sys.unraisablehook`` and the same
signal is delivered to the main thread again, to be raised at its next ordinary line of Python.
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

TERMINATING = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name)
)  # Windows has SIGTERM alone
"""The signals that stop a run as Ctrl-C does (their default action would end it without cleanup)."""

HELD = (signal.SIGINT, *TERMINATING)


class Terminated(KeyboardInterrupt):
    """SIGTERM, SIGHUP or SIGQUIT (``signum``) arrived; raised where Ctrl-C's interrupt would be."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)

    @property
    def name(self) -> str:
        """The signal's name: ``SIGTERM``, ``SIGHUP``, ``SIGQUIT``."""
        return signal.Signals(self.signum).name


def _raise(signum: int, frame: FrameType | None) -> None:
    for s in TERMINATING:  # a second signal ends the process (a stuck cleanup)
        if signal.getsignal(s) is _raise:
            signal.signal(s, signal.SIG_DFL)
    raise Terminated(signum)


_hook_busy = [False]


def _deliver_after_hook(signum: int) -> None:
    while _hook_busy[0]:  # raised inside the hook itself it would be ignored again
        time.sleep(0.001)
    _thread.interrupt_main(signal.Signals(signum))


def _unraisable(
    previous: Callable[[sys.UnraisableHookArgs], object],
) -> Callable[[sys.UnraisableHookArgs], None]:
    """A ``sys.unraisablehook`` that re-delivers a swallowed interrupt; anything else goes to ``previous``.

    The signal is delivered again from another thread once the hook has returned: the main thread
    raises it at its next ordinary line.
    """

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, Terminated) and threading.current_thread() is threading.main_thread():
            signum = exc.signum
            for s in TERMINATING:  # _raise set them back to the default: this one reached no cleanup
                if signal.getsignal(s) is signal.SIG_DFL:
                    signal.signal(s, _raise)
        elif type(exc) is KeyboardInterrupt and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signum = signal.SIGINT
        else:
            previous(unraisable)
            return
        _hook_busy[0] = True
        _thread.start_new_thread(_deliver_after_hook, (signum,))
        _hook_busy[0] = False  # the last line: storing a value lets no signal handler run

    return hook


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM, SIGHUP and SIGQUIT raise :class:`Terminated`; their handling is back after.

    Only in the main thread (where Python runs signal handlers) and only for a signal that has its
    default action: a program's own handler is kept, one ignored stays ignored (``nohup`` ignores
    SIGHUP), and nested blocks are the outer one's.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    mine = [s for s in TERMINATING if signal.getsignal(s) is signal.SIG_DFL]
    for s in mine:
        signal.signal(s, _raise)
    hook = sys.unraisablehook
    sys.unraisablehook = _unraisable(hook)
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for s in mine:
            signal.signal(s, signal.SIG_DFL)


@contextlib.contextmanager
def held(done: str) -> Iterator[None]:
    """SIGINT and the :data:`TERMINATING` signals wait until the block ends, then act as they would have.

    ``done`` says what the block did. For a sequence of renames that replaces an output (old aside,
    new in, sidecars): a signal between two of them would leave the output's path empty or its
    files mixed. The first signal that
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
