"""Length-sorted batching of teacher inputs: the one place that sorts by length and restores the order."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from ctx2static.memory import HeapTrim
from ctx2static.pipeline.align import Encoding

T = TypeVar("T")


def sorted_batches(lengths: Sequence[int], token_budget: int) -> Iterator[np.ndarray]:
    """Yield index arrays of length-sorted batches whose padded size stays within ``token_budget``."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    batch: list[int] = []
    longest = 0
    for i in order.tolist():
        longest_new = max(longest, lengths[i])
        if batch and longest_new * (len(batch) + 1) > token_budget:
            yield np.asarray(batch)
            batch, longest_new = [], lengths[i]
        batch.append(i)
        longest = longest_new
    if batch:
        yield np.asarray(batch)


def run_sorted(
    items: Sequence[Encoding],
    token_budget: int,
    fn: Callable[[list[Encoding]], list[T]],
    done: Callable[[list[int]], None] | None = None,
) -> list[T]:
    """Run ``fn`` over length-sorted batches and return its per-item results in the input order.

    ``done`` is called with each batch's item indices once the batch has run (progress). Every
    batch has a new shape, which leaves freed activations resident in the C heap: they are handed
    back as they pile up (:class:`~ctx2static.memory.HeapTrim`).
    """
    out: list[Any] = [None] * len(items)
    trim = HeapTrim()
    for idx in sorted_batches([len(e.ids) for e in items], token_budget):
        batch = idx.tolist()
        for i, res in zip(batch, fn([items[i] for i in batch]), strict=True):
            out[i] = res
        trim()
        if done is not None:
            done(batch)
    return out
