"""A shard's per-word sums of the occurrence vectors, kept on the teacher's device.

Extract's default signals keep no occurrence vector, only each word's sum of them (``ase`` and
the students' start tables are those sums over the counts). On a GPU, bringing every occurrence's
row to the host (4 bytes a dimension, then a scatter into the shard's array and a sum there) cost
more host time per teacher token than the device spent on the forward: the GPU waited on it. Here
each batch's wanted rows are summed by word where they were computed, and only the shard's sums
(one row a word it holds) cross to the host, once.

Deterministic, so a shard rebuilt after a kill is the same bytes: each chunk of rows is reduced
by a one-hot matrix product (no atomic adds), and the chunk's sums are added into the shard's with
``index_add_`` on indices that are distinct within the call. The sums are float64 like
:class:`~ctx2static.cache.writer.WordSums`; their order of addition is the chunk's, so they equal
the host's occurrence-order sums up to float64 rounding.
"""

from __future__ import annotations

import numpy as np
import torch

from ctx2static.pipeline.teacher import to_device

CHUNK = 2048
"""Rows reduced by one product: its one-hot matrix is at most CHUNK x CHUNK float64 (32 MiB)."""


class DeviceSums:
    """The float64 sums [words, d] of one shard's occurrence vectors, on ``device``, by the word's slot."""

    def __init__(self, n_words: int, device: torch.device) -> None:
        self.n_words, self.device = n_words, device
        self.sums: torch.Tensor | None = None  # the width is known from the first rows

    def add(self, slots: np.ndarray, rows: torch.Tensor) -> None:
        """Add ``rows`` [k, d] (on the device) into the sums of their words' ``slots`` (int [k], host)."""
        if self.sums is None:
            self.sums = torch.zeros((self.n_words, rows.shape[1]), dtype=torch.float64, device=self.device)
        for start in range(0, len(slots), CHUNK):
            # distinct slots and each row's place among them, on the host: no device sync
            present, where = np.unique(slots[start : start + CHUNK], return_inverse=True)
            where_d = to_device(where.reshape(-1).astype(np.int64), self.device)
            onehot = where_d.unsqueeze(0) == torch.arange(len(present), device=self.device).unsqueeze(1)
            reduced = onehot.to(torch.float64) @ rows[start : start + CHUNK].to(torch.float64)
            self.sums.index_add_(0, to_device(present.astype(np.int64), self.device), reduced)

    def result(self, width: int) -> np.ndarray:
        """The sums on the host (float64 [words, d]); zeros of ``width`` when no row came."""
        if self.sums is None:
            return np.zeros((self.n_words, width), np.float64)
        return self.sums.cpu().numpy()
