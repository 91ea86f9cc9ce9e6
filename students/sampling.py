"""Sampling kernels shared by every window and negative-sampling student (Numba).

word2vec's machinery, written once (Mikolov et al. 2013, "Distributed Representations of Words
and Phrases"): the unigram^0.75 negative-sampling distribution (Sec. 2.2; X2Static uses ^0.5),
frequent-word subsampling (Sec. 2.3, in the form of the released C code), the dynamic (reduced)
window, the per-chunk LCG random generator and its seeding and the linear learning-rate decay
(the losses' softplus and sigmoid are :mod:`~ctx2static.students.losses`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ctx2static.errors import UserError
from ctx2static.options import Rule

# word2vec's linear congruential generator: next_random = next_random * 25214903917 + 11 (mod 2^64).
_LCG_MUL = np.uint64(25214903917)
_LCG_ADD = np.uint64(11)
_SHIFT16 = np.uint64(16)
_SHIFT11 = np.uint64(11)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2^-53
# gensim's cum_table domain: cumulative weights scaled to 0..2^31-1 (fits uint32).
_CUM_DOMAIN = 2**31 - 1


def negative_table(counts: np.ndarray, exponent: float = 0.75) -> np.ndarray:
    """Cumulative table of ``count**exponent`` (word2vec Sec. 2.2: exponent 0.75; X2Static: 0.5).

    ``table[i]`` is the cumulative weight of words ``0..i`` scaled to ``0..2^31-1`` (uint32, as
    gensim's ``cum_table``); :func:`draw_word` inverts it by binary search.
    """
    weights = np.asarray(counts, dtype=np.float64) ** exponent
    if weights.size == 0 or not np.all(np.isfinite(weights)) or weights.sum() <= 0:
        raise UserError("negative table: counts must be positive and finite")
    cum = np.cumsum(weights)
    return np.round(cum / cum[-1] * _CUM_DOMAIN).astype(np.uint32)


def exponent_rule(exponent: float) -> Rule:
    """``ns_exponent`` between -1 and 1, as gensim reads it (1: by count, 0: uniform, < 0: rare first).

    Far outside, ``count**exponent`` overflows and the negative table cannot be built.
    """
    return ("ns_exponent", -1 <= exponent <= 1, "between -1 and 1 (word2vec: 0.75)")


def sample_rule(sample: float) -> Rule:
    """The subsampling threshold: 0 turns it off (:func:`keep_probabilities`); below 0 means nothing."""
    return ("sample", sample >= 0, "0 (off) or positive")


def keep_probabilities(counts: np.ndarray, sample: float) -> np.ndarray:
    """Probability of keeping each word under frequent-word subsampling (word2vec C code).

    ``keep = (sqrt(f / (sample*total)) + 1) * (sample*total) / f`` clipped to 1, with ``f`` the
    word's count (Mikolov et al. 2013 Sec. 2.3 as released); ``sample == 0`` keeps everything.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if sample <= 0:
        return np.ones(len(counts), dtype=np.float32)
    threshold = sample * counts.sum()
    keep = (np.sqrt(counts / threshold) + 1.0) * threshold / counts
    return np.minimum(keep, 1.0).astype(np.float32)


def linear_alpha(alpha: float, min_alpha: float, done: float, total: float) -> float:
    """Learning rate decayed linearly from ``alpha`` to ``min_alpha`` by words processed (word2vec)."""
    progress = min(max(done / total, 0.0), 1.0) if total > 0 else 1.0
    return alpha - (alpha - min_alpha) * progress


linear_alpha_nb = njit(cache=True)(linear_alpha)
"""linear_alpha compiled, for use inside Numba kernels."""


@njit(cache=True, inline="always")
def lcg(state: np.uint64) -> np.uint64:
    """word2vec's generator: ``state * 25214903917 + 11`` on uint64."""
    return state * _LCG_MUL + _LCG_ADD


@njit(cache=True, inline="always")
def unit_float(state: np.uint64) -> float:
    """The top 53 bits of ``state`` as a float in [0, 1)."""
    return (state >> _SHIFT11) * _TO_UNIT


@njit(cache=True)
def seed_state(seed: int, epoch: int, chunk: int) -> np.uint64:
    """Independent RNG state of one chunk in one epoch (splitmix64 of seed, epoch, chunk)."""
    z = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
    z += np.uint64(epoch) * np.uint64(0xBF58476D1CE4E5B9) + np.uint64(chunk) * np.uint64(0x94D049BB133111EB)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def draw_word(cum_table: np.ndarray, state: np.uint64) -> int:
    """A word id drawn from :func:`negative_table` using ``state`` (gensim: bisect on cum_table)."""
    r = (state >> _SHIFT16) % np.uint64(cum_table[-1])
    lo = 0
    hi = cum_table.shape[0] - 1
    while lo < hi:  # first i with cum_table[i] > r
        mid = (lo + hi) >> 1
        if cum_table[mid] > r:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, inline="always")
def draw_targets(
    word: int, cum_table: np.ndarray, negative: int, targets: np.ndarray, state: np.uint64
) -> tuple[int, np.uint64]:
    """Fill ``targets`` with ``word`` then up to ``negative`` negatives; return (count, state).

    Negatives equal to ``word`` are dropped, as word2vec does.
    """
    targets[0] = word
    n = 1
    for _ in range(negative):
        state = lcg(state)
        w = draw_word(cum_table, state)
        if w != word:
            targets[n] = w
            n += 1
    return n, state


@njit(cache=True, inline="always")
def reduced_window(window: int, state: np.uint64) -> int:
    """word2vec's dynamic window: an effective size drawn uniformly from 1..window."""
    return window - int((state >> _SHIFT16) % np.uint64(window))


@njit(cache=True)
def subsample(
    ids: np.ndarray, start: int, end: int, keep_prob: np.ndarray, out: np.ndarray, state: np.uint64
) -> tuple[int, np.uint64]:
    """Copy ``ids[start:end]`` into ``out``, keeping word ``w`` with probability ``keep_prob[w]``."""
    n = 0
    for k in range(start, end):
        w = ids[k]
        p = keep_prob[w]
        if p < 1.0:
            state = lcg(state)
            if unit_float(state) >= p:
                continue
        out[n] = w
        n += 1
    return n, state
