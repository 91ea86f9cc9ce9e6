"""Peak resident memory of this process over a block of code, sampled by a background thread.

``ru_maxrss`` only grows over a process's life, so a step that follows a larger one would report
the larger one's peak; sampling the current RSS (``/proc/self/statm`` on Linux) while the block
runs gives the block's own peak, as the process sees it (memory kept from earlier steps counts).
Elsewhere the process's lifetime peak (``ru_maxrss``) is the fallback.
"""

from __future__ import annotations

import os
import resource
import sys
import threading
from pathlib import Path
from types import TracebackType

_STATM = Path("/proc/self/statm")
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


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
