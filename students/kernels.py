"""Shared Numba kernels of the window/negative-sampling students (word2vec and its distilled kin).

Implements word2vec's machinery once (Mikolov et al. 2013, "Distributed Representations of Words
and Phrases"): the unigram^0.75 negative-sampling distribution (Sec. 2.2), frequent-word
subsampling (Sec. 2.3, in the form of the released C code), the dynamic (reduced) window, the
per-thread LCG random generator, the logistic negative-sampling update (Eq. 4) and a Hogwild
parallel driver (prange over chunks of sentences, shared tables updated without locks).

A student plugs into :func:`train` with a *centre update*: an ``@njit`` function (without
``cache=True``, see :func:`epoch_driver`) called for every kept centre word with the signature

``centre_update(sent, n, i, b, syn0, syn1neg, cum_table, negative, alpha, scratch, targets,
state, compute_loss) -> (loss, n_pairs, state)``

where ``sent[:n]`` is the subsampled sentence, ``i`` the centre position, ``b`` the reduced
window, ``scratch`` a float32 ``(2, dim)`` work array (hidden vector, its gradient), ``targets``
an int32 buffer of ``negative + 1`` ids and ``state`` the chunk's uint64 RNG state.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from numba import njit, prange
from tqdm import tqdm

from ctx2static.errors import UserError
from ctx2static.pipeline.vocab import EncodedCorpus, Vocab
from ctx2static.vectors import Vectors

# word2vec's linear congruential generator: next_random = next_random * 25214903917 + 11 (mod 2^64).
_LCG_MUL = np.uint64(25214903917)
_LCG_ADD = np.uint64(11)
_SHIFT16 = np.uint64(16)
_SHIFT11 = np.uint64(11)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2^-53
# gensim's cum_table domain: cumulative weights scaled to 0..2^31-1 (fits uint32).
_CUM_DOMAIN = 2**31 - 1
# Words per chunk of sentences: the unit of parallel work and of the learning-rate schedule
# (gensim's batch_words, word2vec's per-thread alpha refresh every 10k words).
CHUNK_WORDS = 10_000


@dataclass(frozen=True)
class Word2VecConfig:
    """word2vec's defaults (Mikolov et al. 2013; the C tool and gensim), shared by SGNS and CBOW."""

    dim: int = 100
    window: int = 5
    negative: int = 5
    sample: float = 1e-3
    alpha: float = 0.025
    min_alpha: float = 1e-4
    epochs: int = 5
    threads: int = 0  # 0 = all cores numba may use
    seed: int = 1
    ns_exponent: float = 0.75
    compute_loss: bool = False  # track the negative-sampling loss (costs a log per target)
    abtt: int | None = None  # all-but-the-top on the result (students/postprocess.py; None = off)

    def __post_init__(self) -> None:
        checks = [
            ("dim", self.dim >= 1, "at least 1"),
            ("window", self.window >= 1, "at least 1"),
            ("negative", self.negative >= 1, "at least 1"),
            ("epochs", self.epochs >= 1, "at least 1"),
            ("threads", self.threads >= 0, "0 (all cores) or more"),
            ("sample", self.sample >= 0, "0 (off) or positive"),
            ("alpha", self.alpha > 0, "positive"),
            ("min_alpha", 0 <= self.min_alpha <= self.alpha, "between 0 and alpha"),
        ]
        for name, ok, want in checks:
            if not ok:
                raise UserError(f"option {name}={getattr(self, name)!r} must be {want}")


# --------------------------------------------------------------------------- tables (numpy)
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


def chunk_bounds(sent_starts: np.ndarray, chunk_words: int = CHUNK_WORDS) -> np.ndarray:
    """Sentence indices splitting the corpus into chunks of about ``chunk_words`` tokens."""
    sent_starts = np.asarray(sent_starts, dtype=np.int64)
    n_sent = len(sent_starts) - 1
    marks = np.arange(0, sent_starts[-1], chunk_words, dtype=np.int64)
    firsts = np.searchsorted(sent_starts[:-1], marks, side="left")
    return np.unique(np.concatenate([[0], firsts, [n_sent]])).astype(np.int64)


def linear_alpha(alpha: float, min_alpha: float, done: float, total: float) -> float:
    """Learning rate decayed linearly from ``alpha`` to ``min_alpha`` by words processed (word2vec)."""
    progress = min(max(done / total, 0.0), 1.0) if total > 0 else 1.0
    return alpha - (alpha - min_alpha) * progress


_linear_alpha = njit(cache=True)(linear_alpha)


# --------------------------------------------------------------------------- random draws (numba)
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


# --------------------------------------------------------------------------- logistic update
@njit(cache=True, fastmath=True, inline="always")
def softplus(x: float) -> float:
    """log(1 + e^x), stable."""
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


@njit(cache=True, fastmath=True)
def ns_update(
    h: np.ndarray,
    syn1neg: np.ndarray,
    targets: np.ndarray,
    n_targets: int,
    alpha: float,
    grad: np.ndarray,
    compute_loss: bool,
) -> float:
    """One negative-sampling step (Mikolov et al. 2013 Eq. 4) for hidden vector ``h``.

    Loss ``-log s(h.v_t0) - sum_k log s(-h.v_tk)`` with ``t0 = targets[0]`` the positive. Each
    output row moves by ``-alpha * dL/dv`` (updated in place, in order, as word2vec); ``grad``
    receives ``-alpha * dL/dh`` for the caller to add to the input row(s). Returns the loss
    (0 unless ``compute_loss``).
    """
    dim = h.shape[0]
    a = np.float32(alpha)
    for d in range(dim):
        grad[d] = 0.0
    loss = 0.0
    for k in range(n_targets):
        row = syn1neg[targets[k]]
        f = np.float32(0.0)
        for d in range(dim):
            f += h[d] * row[d]
        label = np.float32(1.0) if k == 0 else np.float32(0.0)
        g = (label - np.float32(1.0) / (np.float32(1.0) + np.exp(-f))) * a
        for d in range(dim):
            r = row[d]
            grad[d] += g * r
            row[d] = r + g * h[d]
        if compute_loss:
            loss += softplus(-f) if k == 0 else softplus(f)
    return loss


@njit(cache=True, fastmath=True, inline="always")
def add_to_row(row: np.ndarray, delta: np.ndarray) -> None:
    """``row += delta`` (an input-embedding update)."""
    for d in range(row.shape[0]):
        row[d] += delta[d]


# --------------------------------------------------------------------------- parallel driver
def centre_update(*args: Any) -> tuple[float, int, np.uint64]:
    """Placeholder for a student's centre update; :func:`epoch_driver` binds the real one."""
    raise NotImplementedError("epoch_driver binds the student's centre update")


def _run_epoch(
    ids: np.ndarray,
    sent_starts: np.ndarray,
    bounds: np.ndarray,
    order: np.ndarray,
    syn0: np.ndarray,
    syn1neg: np.ndarray,
    cum_table: np.ndarray,
    keep_prob: np.ndarray,
    window: int,
    negative: int,
    alpha: float,
    min_alpha: float,
    done_before: int,
    total_words: int,
    seed: int,
    epoch: int,
    compute_loss: bool,
    chunk_done: np.ndarray,
    chunk_stats: np.ndarray,
) -> None:
    """One Hogwild epoch: chunks of sentences in parallel, each with its own RNG and buffers.

    Chunks are visited in ``order`` (see :func:`chunk_order`). A chunk's learning rate is set
    from the words all chunks have processed so far (read from ``chunk_done`` without locks, as
    word2vec's shared ``word_count_actual``). Writes ``chunk_stats[c] = (loss, pairs, kept)``.
    """
    n_chunks = bounds.shape[0] - 1
    dim = syn0.shape[1]
    max_len = 0
    for s in range(sent_starts.shape[0] - 1):
        max_len = max(max_len, sent_starts[s + 1] - sent_starts[s])
    for k in prange(n_chunks):
        c = order[k]
        state = seed_state(seed, epoch, c)
        sent = np.empty(max_len, dtype=np.int32)
        scratch = np.empty((2, dim), dtype=np.float32)
        targets = np.empty(negative + 1, dtype=np.int32)
        done = done_before
        for other in range(n_chunks):
            done += chunk_done[other]
        a = _linear_alpha(alpha, min_alpha, done, total_words)
        loss = 0.0
        pairs = 0
        kept = 0
        for s in range(bounds[c], bounds[c + 1]):
            n, state = subsample(ids, sent_starts[s], sent_starts[s + 1], keep_prob, sent, state)
            kept += n
            for i in range(n):
                state = lcg(state)
                b = reduced_window(window, state)
                l_i, p_i, state = centre_update(
                    sent,
                    n,
                    i,
                    b,
                    syn0,
                    syn1neg,
                    cum_table,
                    negative,
                    a,
                    scratch,
                    targets,
                    state,
                    compute_loss,
                )
                loss += l_i
                pairs += p_i
        chunk_done[c] = sent_starts[bounds[c + 1]] - sent_starts[bounds[c]]
        chunk_stats[c, 0] = loss
        chunk_stats[c, 1] = pairs
        chunk_stats[c, 2] = kept


_DRIVERS: dict[Callable[..., Any], Callable[..., None]] = {}


def epoch_driver(update: Any) -> Callable[..., None]:
    """The parallel epoch loop compiled with ``update`` (an ``@njit`` centre update) inlined.

    Numba cannot cache a function that takes another as an argument (the cache misses in every
    new process), so each student gets its own copy of :func:`_run_epoch` with ``centre_update``
    bound as a global. Numba's on-disk cache only checks the stamp of the file that holds the
    cached function, so the copy is named after a hash of the student's whole module source: an
    edit to the student recompiles it, an edit to this file invalidates it by its stamp. So a
    centre update should call only this module and its own; centre updates themselves are not
    cached, so they never hold stale copies of these kernels.
    """
    if update not in _DRIVERS:
        module = sys.modules[update.py_func.__module__]
        try:
            source = inspect.getsource(module).encode()
        except OSError:  # installed without sources: hash the bytecode instead
            source = update.py_func.__code__.co_code
        digest = hashlib.sha1(source).hexdigest()[:10]
        tag = f"_run_epoch_{module.__name__.rsplit('.', 1)[-1]}_{update.__name__}_{digest}"
        fn = types.FunctionType(_run_epoch.__code__, {**globals(), "centre_update": update}, tag)
        fn.__qualname__ = tag
        _DRIVERS[update] = njit(cache=True, parallel=True, fastmath=True)(fn)
    return _DRIVERS[update]


def chunk_order(n_chunks: int, threads: int) -> np.ndarray:
    """Order of chunks so that numba's static split of ``prange`` interleaves threads over the corpus.

    Numba hands each of ``threads`` workers one contiguous block of iterations (sizes as
    ``np.array_split``); block ``t`` lists chunks ``t, t+threads, ...``, so the workers walk the
    corpus side by side as word2vec's and gensim's do, rather than each from its own half
    (which costs about 2 similarity points on a corpus made of unlike parts).
    """
    return np.concatenate([np.arange(t, n_chunks, threads) for t in range(threads)]).astype(np.int64)


def _read_only(array: np.ndarray, dtype: type) -> np.ndarray:
    """A read-only view, so memmapped and in-memory corpora share one compiled signature."""
    view = np.asarray(array, dtype=dtype).view()
    view.flags.writeable = False
    return view


def _threads(requested: int) -> int:
    available = numba.config.NUMBA_NUM_THREADS
    return available if requested == 0 else min(requested, available)


def train(
    name: str,
    update: Any,
    corpus: EncodedCorpus,
    vocab: Vocab,
    config: Word2VecConfig,
) -> Vectors:
    """Train input/output embeddings with the centre update ``update`` (word2vec's loop); return syn0.

    Init as word2vec: syn0 uniform in (-0.5, 0.5)/dim, syn1neg zeros. Vectors come in vocabulary
    order with the vocabulary counts.
    """
    ids = _read_only(corpus.ids, np.int32)
    sent_starts = _read_only(corpus.sent_starts, np.int64)
    n_tokens = int(sent_starts[-1])
    rng = np.random.default_rng(config.seed)
    syn0 = ((rng.random((len(vocab), config.dim), dtype=np.float32) - 0.5) / config.dim).astype(np.float32)
    syn1neg = np.zeros_like(syn0)
    cum_table = negative_table(vocab.counts, config.ns_exponent)
    keep_prob = keep_probabilities(vocab.counts, config.sample)
    bounds = chunk_bounds(sent_starts)
    n_chunks = len(bounds) - 1
    chunk_done = np.zeros(n_chunks, dtype=np.int64)
    chunk_stats = np.zeros((n_chunks, 3), dtype=np.float64)
    total_words = config.epochs * n_tokens
    threads = _threads(config.threads)
    run_epoch = epoch_driver(update)
    order = chunk_order(n_chunks, threads)
    old_threads = numba.get_num_threads()
    numba.set_num_threads(threads)
    loss = pairs = kept = 0.0
    loss_per_epoch: list[float] = []
    start = time.perf_counter()
    try:
        bar = tqdm(range(config.epochs), desc=name, unit="epoch", file=sys.stderr, leave=False)
        for epoch in bar:
            chunk_done[:] = 0
            run_epoch(
                ids, sent_starts, bounds, order, syn0, syn1neg, cum_table, keep_prob,
                config.window, config.negative, config.alpha, config.min_alpha, epoch * n_tokens,
                total_words, config.seed, epoch, config.compute_loss, chunk_done, chunk_stats,
            )  # fmt: skip
            e_loss, e_pairs, e_kept = chunk_stats.sum(axis=0)
            loss, pairs, kept = loss + e_loss, pairs + e_pairs, kept + e_kept
            loss_per_epoch.append(e_loss / max(e_pairs, 1))
            rate = n_tokens * (epoch + 1) / (time.perf_counter() - start)
            post = {"words/s": f"{rate:,.0f}"}
            if config.compute_loss:
                post["loss/pair"] = f"{loss_per_epoch[-1]:.4f}"
            bar.set_postfix(post)
    finally:
        numba.set_num_threads(old_threads)
    seconds = time.perf_counter() - start
    meta: dict[str, Any] = {"pairs": int(pairs), "kept_words": int(kept)}
    summary = (
        f"{name}: {config.epochs} epochs over {n_tokens:,} tokens in {seconds:.1f} s "
        f"({total_words / seconds:,.0f} tokens/s, {threads} threads, "
        f"{kept / config.epochs:,.0f} tokens a pass after subsampling)"
    )
    if config.compute_loss:
        meta["loss_per_pair"] = loss / max(pairs, 1)
        meta["loss_per_epoch"] = loss_per_epoch
        summary += f", mean loss {meta['loss_per_pair']:.4f} per pair"
    print(summary, file=sys.stderr)
    return Vectors(list(vocab.words), syn0, vocab.counts.copy(), meta)
