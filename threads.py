"""Thread counts for Numba and BLAS, set for a block and restored after it (0 = the library's default).

Torch's is :func:`ctx2static.pipeline.teacher.torch_threads`: only the teacher stage imports torch.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ctx2static.errors import OptionError
from ctx2static.options import Rule

THREADS_PER_CPU = 4
"""The most threads an option may ask per CPU: past the CPUs threads only take turns, and a count many
times larger is a setting brought from a bigger machine, refused before any work starts."""


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system tells it, else all)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def threads_rule(threads: int, default: str) -> Rule:
    """The rule of every ``threads`` option: 0 (``default``) or a count this machine can run."""
    cpus = usable_cpus()
    most = THREADS_PER_CPU * cpus
    return (
        "threads",
        0 <= threads <= most,
        f"0 ({default}) or at most {most} ({THREADS_PER_CPU} per CPU; here {cpus})",
    )


def _check(threads: int) -> None:
    if threads < 0:
        raise OptionError(f"threads={threads}: use 0 for the default or a positive count", "threads")


def numba_pool() -> int:
    """Numba's thread pool: the students' threads by default (NUMBA_NUM_THREADS, else every CPU)."""
    import numba

    return int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]  # read from the environment at import


@contextlib.contextmanager
def numba_threads(threads: int) -> Iterator[int]:
    """Run the block with ``threads`` Numba threads (0 = all; capped at Numba's pool); yields the count."""
    import numba

    _check(threads)
    pool = numba_pool()
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, pool) if threads else pool)
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(before)


@contextlib.contextmanager
def blas_threads(threads: int) -> Iterator[int]:
    """Run the block with ``threads`` BLAS threads (0 = the library's default); yields the count.

    Uses threadpoolctl, imported only here.
    """
    from threadpoolctl import threadpool_limits

    _check(threads)
    with threadpool_limits(limits=threads or None, user_api="blas"):
        yield threads
