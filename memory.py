"""Resident memory of this process: its peak over a block of code, and freed heap given back.

``ru_maxrss`` only grows over a process's life, so a step that follows a larger one would report
the larger one's peak; sampling the current RSS (``/proc/self/statm`` on Linux) while the block
runs gives the block's own peak, as the process sees it (memory kept from earlier steps counts).
Elsewhere the process's lifetime peak (``ru_maxrss``) is the fallback.

glibc keeps freed memory in its heap when a live block above it pins the heap's top, and its
mmap threshold rises to the largest block freed, so after the first large free every
activation below 32 MB comes from that heap. A teacher pass on CPU frees and allocates
activations of a new shape at every batch (length-sorted batches) while oneDNN caches a small
kernel per shape in between: the heap keeps growing with memory that is free but resident
(MiniLM: +660 MiB over the first 2,000 Brown sentences; bench/results/memory_extract_2.md).
:class:`HeapTrim` hands that memory back (``malloc_trim``) once it exceeds a slack; fixing the
mmap threshold instead made every batch fault its activations in again (about 10% more CPU time).
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

_STATM = Path("/proc/self/statm")
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TRIM_SLACK = 128 << 20  # heap growth tolerated between two trims


def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's ``malloc_trim`` (glibc), or None where it has none (macOS, musl, Windows)."""
    try:
        return ctypes.CDLL(None).malloc_trim  # the C library this process already runs on
    except (OSError, AttributeError, TypeError):
        return None


_TRIM = _malloc_trim()


def current_rss() -> int:
    """Resident bytes of this process now (the lifetime peak where /proc is missing)."""
    try:
        return int(_STATM.read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


class PeakRss:
    """``with PeakRss() as peak: ...`` then ``peak.bytes``: the largest RSS seen while the block ran."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            self.bytes = max(self.bytes, current_rss())
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> PeakRss:
        self.bytes = current_rss()
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        self.bytes = max(self.bytes, current_rss())

    @property
    def megabytes(self) -> float:
        """The peak in MiB."""
        return self.bytes / 2**20


def release_freed() -> bool:
    """Give the heap's free pages back to the OS (glibc ``malloc_trim``); False where it cannot."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True


class HeapTrim:
    """Call after each step of a loop: trims the heap once RSS grew ``slack`` bytes since the last trim.

    A trim costs a walk of the free lists and, when what it returned is used again, the page
    faults to bring it back (21 ms per 128 MiB here, against seconds per teacher batch); there is
    at most one a step. A whole MiniLM pass over Brown spent 2% more system CPU and no
    more CPU in all; its memory stays within ``slack`` of what it really holds.
    """

    def __init__(self, slack: int = TRIM_SLACK) -> None:
        self.slack = slack
        release_freed()  # what an earlier loop left free is not counted as this one's
        self.base = current_rss()

    def __call__(self) -> None:
        """One step done: trim if the heap grew the slack since the last trim."""
        rss = current_rss()
        if rss > self.base + self.slack:
            release_freed()
            self.base = current_rss()  # what is left is in use: the next trim waits for more growth
        else:
            self.base = min(self.base, rss)
