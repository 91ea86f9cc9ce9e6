"""Memory: what the machine has left before a large allocation, this process's peak, freed heap given back.

An option that sizes an array (``--dim``, a vocabulary, a window table) can ask for more than the
machine has; numpy then raises ``_ArrayMemoryError`` deep inside the work, or the kernel kills the
process. :func:`check_fits` compares an estimate against :func:`available_bytes` first and refuses
in one line that names the option.

``ru_maxrss`` only grows over a process's life, so a step that follows a larger one would report
the larger one's peak; sampling the current RSS (``/proc/self/statm`` on Linux) while the block
runs gives the block's own peak, as the process sees it (memory kept from earlier steps counts).
Elsewhere the process's lifetime peak (``ru_maxrss``) is the fallback.

glibc keeps freed memory in its heap when a live block above it pins the heap's top, and its
mmap threshold rises to the largest block freed, so after the first large free every
activation below 32 MB comes from that heap. A teacher pass on CPU frees and allocates
activations of a new shape at every batch (length-sorted batches) while oneDNN caches a small
kernel per shape in between: the heap keeps growing with memory that is free but resident (the
experiments of an earlier memory_extract, in the repository at commit 6ac302b). :class:`HeapTrim` hands that
memory back (``malloc_trim``) once it exceeds a slack; fixing the mmap threshold instead made every
batch fault its activations in again, which cost more CPU time (the same experiments).
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

from ctx2static.errors import UserError

_STATM = Path("/proc/self/statm")
_MEMINFO = Path("/proc/meminfo")
_CGROUP_V2 = Path("/sys/fs/cgroup")
_CGROUP_V1 = Path("/sys/fs/cgroup/memory")
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


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, IndexError, ValueError):  # absent, "max", unreadable
        return None


def _meminfo_available() -> int | None:
    """``MemAvailable`` of /proc/meminfo: free memory plus what the kernel can reclaim (page cache)."""
    try:
        for line in _MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return None


def _cgroup_headroom() -> int | None:
    """The container's memory limit less what it uses now (its reclaimable page cache counted free)."""
    for limit_file, usage_file, stat_file, cache_key in (
        (
            _CGROUP_V2 / "memory.max",
            _CGROUP_V2 / "memory.current",
            _CGROUP_V2 / "memory.stat",
            "inactive_file",
        ),
        (
            _CGROUP_V1 / "memory.limit_in_bytes",
            _CGROUP_V1 / "memory.usage_in_bytes",
            _CGROUP_V1 / "memory.stat",
            "total_inactive_file",
        ),
    ):
        limit, usage = _read_int(limit_file), _read_int(usage_file)
        if limit is None or usage is None or limit >= 1 << 60:  # v1 writes "no limit" as ~2**63
            continue
        cache = 0
        try:
            for line in stat_file.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == cache_key:
                    cache = int(value)
        except (OSError, ValueError):
            pass
        return max(0, limit - max(0, usage - cache))
    return None


def _address_space_headroom() -> int | None:
    """``ulimit -v`` less this process's virtual size: numpy fails at that limit whatever RAM is free."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        size = int(_STATM.read_text().split()[0]) * _PAGE
    except (OSError, IndexError, ValueError):
        return None
    return max(0, soft - size)


def available_bytes() -> int | None:
    """Bytes this process can still allocate; None where nothing can be read (not Linux).

    The least of the machine's ``MemAvailable``, the container's (cgroup) headroom and the
    ``ulimit -v`` headroom: whichever runs out first is what fails the allocation.
    """
    known = [_meminfo_available(), _cgroup_headroom(), _address_space_headroom()]
    return min((n for n in known if n is not None), default=None)


def format_bytes(nbytes: float) -> str:
    """``1.5 GiB``, ``640 MiB``: sizes as a user reads them in one line."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(nbytes) < 1024:
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.3g} {unit}"
        nbytes /= 1024
    return f"{nbytes:.3g} TiB"


def check_fits(nbytes: float, what: str, fix: str) -> None:
    """Refuse, before allocating, work estimated at ``nbytes`` that the machine cannot hold.

    ``what`` names the option and its value (``"--dim 200000"``), ``fix`` says what to change; the
    UserError reads ``--dim 200000 needs about 1.5 TiB of memory, more than the 20 GiB available:
    <fix>``. Where the available memory cannot be read (not Linux) nothing is refused.
    """
    available = available_bytes()
    if available is not None and nbytes > available:
        raise UserError(
            f"{what} needs about {format_bytes(nbytes)} of memory, more than the "
            f"{format_bytes(available)} available: {fix}"
        )


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
    faults to bring it back (milliseconds, against seconds per teacher batch); there is at most one
    a step. A whole MiniLM pass over Brown spent a little more system CPU and no more CPU in all
    (the file above); its memory stays within ``slack`` of what it really holds.
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
