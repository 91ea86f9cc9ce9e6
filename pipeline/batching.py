"""Length-sorted batching of teacher inputs: the one place that sorts by length and restores the order."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
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


@dataclass
class HostBatch:
    """A batch padded to its longest input and largest group count, as numpy arrays on the host.

    Made where the encodings are (a feeding process, :mod:`~ctx2static.pipeline.feed`, or this one);
    the teacher copies it to the device as it is. On a GPU the forward is cheap and this host work
    is what the pass waits on, so it is built as whole arrays, not row by row.
    """

    rows: np.ndarray  # int64 [n]: the batch's inputs, as indices into the list they were sorted from
    ids: np.ndarray  # int64 [n, T]: token ids, the pad token where an input is shorter
    lens: np.ndarray  # int64 [n]: each input's tokens
    grp: np.ndarray  # int64 [n, T]: each token's group, -1 for none (special tokens, padding)
    first: np.ndarray  # int64 [n, G]: each group's first token, -1 where an input has no such group
    wanted: np.ndarray  # bool [n, G]: the groups whose signals are kept (an encoding's ``wanted``)

    @property
    def tokens(self) -> int:
        """The batch's teacher tokens, padding left out."""
        return int(self.lens.sum())


def host_batch(batch: Sequence[Encoding], rows: np.ndarray, pad_id: int) -> HostBatch:
    """``batch`` padded on the host (``rows``: where its inputs came from)."""
    lens = np.fromiter((len(e.ids) for e in batch), np.int64, len(batch))
    n_groups = np.fromiter((e.n_groups for e in batch), np.int64, len(batch))
    n, t_max, g_max = len(batch), int(lens.max()), max(int(n_groups.max()), 1)
    has_tok = np.arange(t_max) < lens[:, None]
    has_grp = np.arange(g_max) < n_groups[:, None]
    ids = np.full((n, t_max), pad_id, np.int64)
    ids[has_tok] = np.concatenate([e.ids for e in batch])
    grp = np.full((n, t_max), -1, np.int64)
    grp[has_tok] = np.concatenate([e.tok_group for e in batch])
    at_rows, cols = np.nonzero(grp >= 0)  # row-major: each row's positions ascending
    keys: np.ndarray = at_rows * g_max + grp[at_rows, cols]
    keys, at = np.unique(keys, return_index=True)
    first = np.full((n, g_max), -1, np.int64)
    first.flat[keys] = cols[at]  # a group's first position: where its key first occurs
    wanted = np.zeros((n, g_max), bool)
    wanted[has_grp] = np.concatenate(
        [np.ones(e.n_groups, bool) if e.wanted is None else e.wanted for e in batch]
    )
    return HostBatch(np.asarray(rows, np.int64), ids, lens, grp, first, wanted)
