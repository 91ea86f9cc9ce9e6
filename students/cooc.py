"""Window co-occurrence counts for GloVe (Pennington et al. 2014, Sec. 4.2; SemGloVe Sec. 3.1).

``X_ij = sum over the corpus of 1/d`` for every occurrence of word ``j`` at distance ``d <= window``
of word ``i``, to the left or to the right (symmetric, as GloVe C's ``cooccur -symmetric 1``).
Windows never cross sentence boundaries (GloVe C likewise restarts the window at each line).

The encoded corpus is streamed in chunks of whole sentences: a Numba kernel writes the
``(later word, earlier word, 1/d)`` triples of one chunk into preallocated arrays, scipy sums them
into a CSR matrix, and the chunk matrices are added up. Memory is bounded by the matrix plus one
chunk of triples, never the triples of the whole corpus. The symmetric half is added at the end.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from ctx2static.errors import OptionError
from ctx2static.memory import check_fits
from ctx2static.text.encoded import EncodedCorpus

# Triples per chunk (16 bytes each: int32 row, int32 col, float64 weight): 64 MiB of scratch.
CHUNK_PAIRS = 1 << 22
TRIPLE_BYTES = 16


def pairs_per_sentence(lengths: np.ndarray, window: int) -> np.ndarray:
    """Number of ordered (earlier, later) pairs within ``window`` in sentences of these lengths."""
    lengths = np.asarray(lengths, dtype=np.int64)
    m = np.minimum(window, np.maximum(lengths - 1, 0))
    return m * lengths - m * (m + 1) // 2


@numba.njit(parallel=True, cache=True)
def _window_triples(
    ids: np.ndarray,
    starts: np.ndarray,
    offsets: np.ndarray,
    window: int,
    rows: np.ndarray,
    cols: np.ndarray,
    vals: np.ndarray,
) -> None:
    """For sentences ``starts[s]:starts[s+1]``, write (ids[p], ids[q], 1/(p-q)) for q < p <= q+window.

    ``offsets[s]`` is where sentence ``s`` writes its triples (a prefix sum of the pair counts), so
    sentences run in parallel and the output order is deterministic.
    """
    for s in numba.prange(len(starts) - 1):
        k = offsets[s]
        a = starts[s]
        b = starts[s + 1]
        for p in range(a + 1, b):
            for q in range(max(a, p - window), p):
                rows[k] = ids[p]
                cols[k] = ids[q]
                vals[k] = 1.0 / (p - q)
                k += 1


def window_cooccurrence(
    corpus: EncodedCorpus, vocab_size: int, window: int, chunk_pairs: int = CHUNK_PAIRS
) -> sp.csr_matrix:
    """The symmetric ``vocab_size x vocab_size`` float64 CSR matrix of 1/d-weighted window counts.

    Implements the window baseline of SemGloVe Sec. 3.1: ``X_ij += 1/|p_j - p_i|`` for
    ``0 < |p_j - p_i| <= window`` within one sentence. A word repeated within the window counts
    towards the diagonal in both directions (``X_ii += 2/d``), as GloVe C does.
    """
    if window < 1:
        raise OptionError(f"window={window}: the co-occurrence window must be at least 1", "window")
    starts = np.asarray(corpus.sent_starts, dtype=np.int64)
    pairs = pairs_per_sentence(np.diff(starts), window)
    ends = np.cumsum(pairs)
    total = sp.csr_matrix((vocab_size, vocab_size), dtype=np.float64)
    size = int(min(max(pairs.max(initial=0), chunk_pairs), ends[-1] if len(ends) else 0))
    check_fits(  # a sentence's triples are written at once: a long one with a wide window is the buffer
        size * TRIPLE_BYTES,
        f"window={window} over sentences of up to {int(np.diff(starts).max(initial=0)):,} words",
        "lower --window, or split the corpus into shorter sentences (--split)",
    )
    rows = np.empty(size, dtype=np.int32)
    cols = np.empty(size, dtype=np.int32)
    vals = np.empty(size, dtype=np.float64)
    first = 0
    n_sent = len(pairs)
    with tqdm(total=n_sent, desc="co-occurrences", unit="sent", leave=False) as bar:
        while first < n_sent:
            done = ends[first - 1] if first else 0
            # the largest run of sentences whose triples fit in the buffer (at least one sentence)
            last = max(int(np.searchsorted(ends, done + size, side="right")), first + 1)
            offsets = np.concatenate(([0], ends[first:last] - done)).astype(np.int64)
            n = int(offsets[-1])
            sl = slice(starts[first], starts[last])
            local_starts = starts[first : last + 1] - starts[first]
            _window_triples(np.asarray(corpus.ids[sl]), local_starts, offsets, window, rows, cols, vals)
            if n:
                chunk = sp.coo_matrix((vals[:n], (rows[:n], cols[:n])), shape=(vocab_size, vocab_size))
                total = total + chunk.tocsr()
            bar.update(last - first)
            first = last
    x = (total + total.T).tocsr()
    x.sum_duplicates()
    x.sort_indices()
    return x
