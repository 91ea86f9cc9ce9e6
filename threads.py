"""Thread counts for Numba and torch, set for a block and restored after it (0 = the library's default)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ctx2static.errors import UserError


def _check(threads: int) -> None:
    if threads < 0:
        raise UserError(f"threads={threads}: use 0 for the default or a positive count")


@contextlib.contextmanager
def numba_threads(threads: int) -> Iterator[int]:
    """Run the block with ``threads`` Numba threads (0 = all; capped at Numba's pool); yields the count."""
    import numba

    _check(threads)
    pool = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]  # read from the environment at import
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, pool) if threads else pool)
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(before)


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[int]:
    """Run the block with ``threads`` torch CPU threads (0 = torch's current setting); yields the count."""
    import torch

    _check(threads)
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def blas_threads(threads: int) -> Iterator[int]:
    """Run the block with ``threads`` BLAS threads (0 = the library's default); yields the count.

    Uses threadpoolctl, imported only here.
    """
    from threadpoolctl import threadpool_limits

    _check(threads)
    with threadpool_limits(limits=threads or None, user_api="blas"):
        yield threads
