"""Shared trainer of the students with a contextual centre (BERT+Skip-gram, Context-to-Vec).

The centre word i is seen through the teacher: its cached subword-pooled vector o_i (``occ_vec``)
is mapped to the static space by a learned linear map, u_i = U o_i; the context words and the
negatives are rows of the static table E that is saved. Training is minibatch SGD with a
linearly decayed rate (the Context-to-Vec reference code: batches of ``batch`` centres, the loss
summed over a batch, the projection's gradient norm clipped at 5). One step, on centres b0..b1:

1. P = O U^T for the batch's occurrence vectors O (plus ``window`` rows on each side for a
   student that reads its neighbours' projections): one float32 GEMM (numpy's BLAS);
2. a Numba kernel runs the student's *centre update* for every centre against the step's
   starting table: the centre's loss, dL/du_i (row i of G) and, for every static row it read, a
   coefficient beta with dL/dE_row = beta u_i (true of both students' losses); a student may
   also send dL/dP_k = spread_i u_i to each window neighbour k (Context-to-Vec's window mean);
3. E_row -= lr beta u_i for every (centre, row) pair: the sparse gradient of the summed loss;
4. dU = G^T O (GEMM), scaled to norm ``clip`` if larger, U -= lr dU.

With ``threads`` > 1, that many workers take the batches in corpus order and step side by side
on the shared E and U without waiting for each other (Hogwild, as word2vec's threads share
their tables): each batch's step is the one above, but E may change under a batch between its
reads and its update, and U moves by the other workers' steps while a batch is in flight
(asynchronous SGD, at most ``threads - 1`` steps stale; the U update itself is locked). With one
thread the run is exactly the serial minibatch SGD. A step's rate comes from its batch's position
in the corpus, so the schedule does not depend on the threads.

A centre update is an ``@njit`` function (without ``cache=True``, see
:func:`~ctx2static.students.jit_bind.bind_update`)

``centre_update(P, i, near, ctx, negs, E, params, du, beta) -> (loss, spread)``

with ``P[i]`` = u_i, ``near`` the rows of P of the 2 window occurrences of its window (-1 =
none, after the present ones), ``ctx`` their static ids (-1 = none), ``negs`` the negatives, ``E``
the static table, ``params`` the student's float32 constants; it writes dL/du_i into ``du`` and
the coefficients into ``beta`` (window slots, then negatives).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from numba import njit
from tqdm import tqdm

from ctx2static.cache import Cache
from ctx2static.options import Rule, at_least, opt, positive, rate_rule, seed_rule
from ctx2static.students.budget import FLOAT32, INT64, Sizes
from ctx2static.students.cache_input import CacheConfig, Init, teacher_init
from ctx2static.students.jit_bind import bind_update, centre_update
from ctx2static.students.losses import logistic
from ctx2static.students.sampling import (
    draw_word,
    exponent_rule,
    keep_probabilities,
    lcg,
    linear_alpha,
    negative_table,
    sample_rule,
    seed_state,
    unit_float,
)
from ctx2static.threads import blas_threads, numba_pool, threads_rule
from ctx2static.transforms.postprocess import abtt_rule
from ctx2static.vectors import Vectors

log = logging.getLogger(__name__)

_SUBSAMPLE_STREAM = 1 << 62  # offsets the subsampling draws' generator states from the negatives'

Array = np.ndarray  # shorthand for the centre updates' signatures


@dataclass(frozen=True)
class ContextualConfig(CacheConfig):
    """Defaults shared by BERT+Skip-gram and Context-to-Vec (Wang et al. 2021, Zheng et al. 2022)."""

    dim: int = opt(300, "Static vector size d_emb.")
    window: int = opt(5, "Context words on each side of the centre (ws).")
    negative: int = opt(5, "Negatives per centre (k), from unigram^ns_exponent.")
    ns_exponent: float = opt(0.75, "Exponent of the noise distribution.")
    lr: float = opt(0.025, "SGD learning rate, decayed linearly to min_lr.")
    min_lr: float = opt(1e-4, "Final learning rate.")
    clip: float = opt(5.0, "Gradient norm clip of the projection.")
    epochs: int = opt(1, "Passes over the cache.")
    batch: int = opt(1000, "Centre words per step (Context-to-Vec reference: 1000 pairs).")
    threads: int = opt(0, "Workers stepping side by side (Hogwild), 0 = Numba's thread count (all cores).")
    seed: int = opt(1, "Random seed.")
    init: Init = opt(
        Init.AUTO, "Start of the static table: a teacher table (auto, ase, word, token) or random."
    )
    abtt: int | None = opt(1, "All-but-the-top on the result (transforms/postprocess.py; none = off).")
    sample: float = opt(
        1e-4,
        "Frequent-word subsampling of the occurrences, word2vec's rule (0 = off, as the papers): "
        "fewer centres, so faster, with similarity as good or better as measured.",
    )

    def rules(self) -> Iterable[Rule]:
        """Sizes positive, rates in (0, 1) and ordered, a clip that bounds (0 would freeze the projection)."""
        return [
            *at_least(self, 1, "dim", "window", "negative", "epochs", "batch"),
            rate_rule("lr", self.lr),
            ("min_lr", 0 <= self.min_lr <= self.lr, "between 0 and lr"),
            *positive(self, "clip"),
            threads_rule(self.threads, "Numba's thread count"),
            sample_rule(self.sample),
            exponent_rule(self.ns_exponent),
            abtt_rule(self.abtt, self.dim),
            seed_rule(self.seed),
        ]

    def signals(self) -> tuple[str, ...]:
        """The centre is seen through the teacher: per-occurrence vectors."""
        return ("occ_vec",)


SIZED_BY = ("dim", "window")


def memory(config: ContextualConfig, sizes: Sizes) -> int:
    """Bytes of the static table E, the window tables of two shards and the workers' step buffers.

    E is words x dim float32 (drawn in place); a shard's windows hold 2 x window int64 per occurrence,
    twice (rows and words), for the shard trained and the next, read meanwhile; each worker steps on
    dim-wide rows of a batch and its window margin.
    """
    threads = config.threads or numba_pool()
    table = sizes.n_words * config.dim * FLOAT32
    windows = 2 * sizes.shard_occurrences * (1 + 2 * 2 * config.window) * INT64
    rows = config.batch + 2 * config.window
    per_worker = (
        2 * rows * config.dim * FLOAT32 + config.batch * (2 * config.window + config.negative) * FLOAT32
    )
    return table + windows + threads * per_worker


@njit(cache=True, nogil=True)
def window_occurrences(
    word_ids: np.ndarray, aligned: np.ndarray, sent_offsets: np.ndarray, window: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per occurrence: its static word and the occurrence rows of its +-window neighbours.

    Occurrences are the in-vocabulary words where ``aligned`` is set (the teacher's alignment,
    or the subsampled occurrences of :func:`subsample_occurrences`), numbered in corpus order;
    the window runs over a sentence's occurrences (other words dropped first, as word2vec drops
    unknown and subsampled words). Missing neighbours are -1, after the present ones.
    """
    n_occ = 0
    for k in range(word_ids.shape[0]):
        if word_ids[k] >= 0 and aligned[k]:
            n_occ += 1
    occ_word = np.empty(n_occ, dtype=np.int64)
    ctx = np.full((n_occ, 2 * window), -1, dtype=np.int64)
    base = 0
    for s in range(sent_offsets.shape[0] - 1):
        n = 0
        for k in range(sent_offsets[s], sent_offsets[s + 1]):
            if word_ids[k] >= 0 and aligned[k]:
                occ_word[base + n] = word_ids[k]
                n += 1
        for i in range(n):
            c = 0
            for j in range(max(0, i - window), min(n, i + window + 1)):
                if j != i:
                    ctx[base + i, c] = base + j
                    c += 1
        base += n
    return occ_word, ctx


@njit(cache=True, nogil=True)
def subsample_occurrences(
    word_ids: np.ndarray, aligned: np.ndarray, keep_prob: np.ndarray, rng: tuple[int, int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Frequent-word subsampling of a shard's occurrences (word2vec Sec. 2.3, as SGNS does it).

    Occurrence r of word w stays with probability ``keep_prob[w]``, drawn from the generator state
    ``seed_state(seed, epoch, 2^62 + first + r)`` for ``rng = (seed, epoch, first)``: a stream apart
    from the negatives', fixed per occurrence and epoch whatever the threads. Returns the token
    mask of the kept occurrences (for :func:`window_occurrences`, so windows close over the dropped
    words as word2vec's do) and their occurrence rows in the shard.
    """
    seed, epoch, first = rng
    kept = np.zeros(word_ids.shape[0], dtype=np.bool_)
    rows = np.empty(word_ids.shape[0], dtype=np.int64)
    r = 0
    n = 0
    for k in range(word_ids.shape[0]):
        if word_ids[k] >= 0 and aligned[k]:
            p = keep_prob[word_ids[k]]
            if p >= 1.0 or unit_float(lcg(seed_state(seed, epoch, _SUBSAMPLE_STREAM + first + r))) < p:
                kept[k] = True
                rows[n] = r
                n += 1
            r += 1
    return kept, rows[:n]


@njit(cache=True, nogil=True)
def window_words(occ_word: np.ndarray, ctx: np.ndarray) -> np.ndarray:
    """Static ids of the window occurrences of :func:`window_occurrences` (-1 where none)."""
    out = np.full(ctx.shape, -1, dtype=np.int64)
    for i in range(ctx.shape[0]):
        for j in range(ctx.shape[1]):
            if ctx[i, j] >= 0:
                out[i, j] = occ_word[ctx[i, j]]
    return out


@njit(cache=True, inline="always")
def draw_negatives(cum_table: np.ndarray, positive: int, out: np.ndarray, state: np.uint64) -> np.uint64:
    """Fill ``out`` with negatives from the unigram table, each redrawn while equal to ``positive``."""
    for m in range(out.shape[0]):
        state = lcg(state)
        w = draw_word(cum_table, state)
        while w == positive:
            state = lcg(state)
            w = draw_word(cum_table, state)
        out[m] = w
    return state


def init_table(n_words: int, dim: int, seed: int) -> np.ndarray:
    """The static table's start, float32: uniform in (-0.5, 0.5)/dim, as word2vec's input vectors."""
    table = np.random.default_rng(seed).random((n_words, dim), np.float32)
    table -= 0.5
    table /= dim
    return table


def init_projection(d: int, dim: int, seed: int) -> np.ndarray:
    """U's start, (dim, d) float32: uniform in +-1/sqrt(d), torch's default for ``Linear(d, dim)``."""
    bound = 1.0 / np.sqrt(d)
    return np.random.default_rng(seed).uniform(-bound, bound, (dim, d)).astype(np.float32)


def widen(src: np.ndarray, out: np.ndarray) -> None:
    """Copy rows of float16 or float32 ``src`` into float32 ``out`` (same shape, both C-contiguous).

    numpy's float16 cast is scalar code: for a batch of MiniLM's occurrence vectors it took 4x the
    time of :func:`half_bits_to_single`, a loop the compiler vectorises (bit-exact, every value).
    """
    if src.dtype == np.float16:
        half_bits_to_single(src.reshape(-1).view(np.uint16), out.reshape(-1).view(np.uint32))
    else:
        np.copyto(out, src)


@njit(cache=True, nogil=True, error_model="numpy")
def half_bits_to_single(half: np.ndarray, single: np.ndarray) -> None:
    """IEEE binary16 bit patterns (uint16) to binary32 ones (uint32), as a float16 -> float32 cast."""
    for k in range(half.shape[0]):
        h = np.uint32(half[k])
        magnitude = h & np.uint32(0x7FFF)
        # normal numbers: the exponent rebiased from 15 to 127; inf and nan rebiased twice, to all ones
        rebias = np.uint32(112 << 23) * (np.uint32(1) + np.uint32(magnitude >= np.uint32(0x7C00)))
        normal = (magnitude << np.uint32(13)) + rebias
        # zero and subnormals: magnitude x 2^-24, exact in float32
        small = np.float32(np.float32(magnitude) * np.float32(2.0**-24)).view(np.uint32)
        sign = (h & np.uint32(0x8000)) << np.uint32(16)
        single[k] = (normal if magnitude >= np.uint32(0x0400) else small) | sign


@njit(cache=True, fastmath=True, inline="always")
def dot(a: np.ndarray, b: np.ndarray) -> float:
    """The dot product of a and b, accumulated in their precision."""
    acc = a.dtype.type(0.0)
    for d in range(a.shape[0]):
        acc += a[d] * b[d]
    return acc


@njit(cache=True, fastmath=True, inline="always")
def axpy(alpha: float, x: np.ndarray, y: np.ndarray) -> None:
    """Add alpha x to y in place (alpha cast to y's precision)."""
    a = y.dtype.type(alpha)
    for d in range(y.shape[0]):
        y[d] += a * x[d]


@njit(cache=True, fastmath=True)
def negatives_update(
    u: np.ndarray, table: np.ndarray, negs: np.ndarray, weight: float, du: np.ndarray, beta: np.ndarray
) -> float:
    """Negative-sampling part of both losses: ``weight * sum_m softplus(v_m . u)`` (Wang Eq. 15, Zheng Eq. 7).

    Adds its gradient ``weight * s(v_m . u) v_m`` to ``du``; ``beta[m] = weight * s(v_m . u)`` (its
    gradient in row v_m is ``beta[m] u``). Returns the loss.
    """
    loss = 0.0
    for m in range(negs.shape[0]):
        row = table[negs[m]]
        sig, sp = logistic(dot(row, u))
        g = weight * sig
        loss += weight * sp
        beta[m] = g
        axpy(g, row, du)
    return loss


def _batch_kernel(
    P: np.ndarray,
    off: int,
    b0: int,
    n_b: int,
    occ_word: np.ndarray,
    ctx: np.ndarray,
    ctx_word: np.ndarray,
    cum_table: np.ndarray,
    rng: tuple[int, int, int],
    table: np.ndarray,
    params: np.ndarray,
    spreads: bool,
    G: np.ndarray,
    beta: np.ndarray,
    negs: np.ndarray,
    losses: np.ndarray,
) -> None:
    """Step 2 of a batch (module docstring): centres b0..b0+n_b are rows off.. of P and G.

    Centre o draws its negatives with the generator state ``seed_state(seed, epoch, first + o)``
    for ``rng = (seed, epoch, first)``, so they depend neither on the threads nor on the batch.
    """
    seed, epoch, first = rng
    G[:off] = 0.0
    G[off + n_b :] = 0.0
    e0 = b0 - off
    spread = np.zeros(n_b, dtype=np.float32)
    near = np.empty(ctx.shape[1], dtype=np.int64)
    for i in range(n_b):
        o = b0 + i
        for j in range(ctx.shape[1]):
            near[j] = ctx[o, j] - e0 if ctx[o, j] >= 0 else -1
        draw_negatives(cum_table, occ_word[o], negs[i], seed_state(seed, epoch, first + o))
        losses[i], spread[i] = centre_update(
            P, off + i, near, ctx_word[o], negs[i], table, params, G[off + i], beta[i]
        )
    if spreads:  # dL/dP_k += spread_i u_i over the centres i whose window holds k (windows are symmetric)
        for r in range(P.shape[0]):
            for j in range(ctx.shape[1]):
                c = ctx[e0 + r, j] - b0
                if 0 <= c < n_b and spread[c] != 0.0:
                    axpy(spread[c], P[off + c], G[r])


@njit(cache=True, nogil=True, fastmath=True)
def scatter_rows(
    P: np.ndarray, table: np.ndarray, words: np.ndarray, negs: np.ndarray, beta: np.ndarray, lr: float
) -> None:
    """Step 3: ``table[w] -= lr beta u_i`` for every window word and negative w of centre i = row i of P."""
    window2 = words.shape[1]
    for i in range(P.shape[0]):
        for s in range(beta.shape[1]):
            w = words[i, s] if s < window2 else negs[i, s - window2]
            if w >= 0:
                axpy(-lr * beta[i, s], P[i], table[w])


@njit(cache=True, nogil=True, fastmath=True)
def clipped_sgd(proj: np.ndarray, grad: np.ndarray, lr: float, clip: float) -> None:
    """Step 4: ``proj -= lr * grad``, grad scaled by clip / (norm + 1e-6) if larger (clip_grad_norm_)."""
    norm = 0.0
    for r in range(grad.shape[0]):
        for d in range(grad.shape[1]):
            norm += np.float64(grad[r, d]) ** 2
    scale = -lr * min(1.0, clip / (np.sqrt(norm) + 1e-6))
    for r in range(grad.shape[0]):
        axpy(scale, grad[r], proj[r])


@dataclass
class ShardWindows:
    """A shard's centres (its occurrences, or those kept by subsampling): vectors, words, windows."""

    occ_vec: np.ndarray  # (n_centres, d), float16 or float32
    occ_word: np.ndarray  # (n_centres,) static ids
    ctx: np.ndarray  # (n_centres, 2 window) centre rows, -1 = none
    ctx_word: np.ndarray  # (n_centres, 2 window) static ids, -1 = none
    first: int  # number of the shard's first occurrence in the corpus (seeds the negatives)
    rows: np.ndarray  # (n_centres,) each centre's occurrence row in the shard
    n_occ: int  # the shard's occurrences, kept or not

    @classmethod
    def read(
        cls,
        shard: Any,
        window: int,
        first: int,
        keep_prob: np.ndarray | None = None,
        seed_epoch: tuple[int, int] = (0, 0),
    ) -> ShardWindows:
        """The windows of a cache shard whose first occurrence is the corpus' ``first``.

        With ``keep_prob`` (per word), the occurrences are subsampled first
        (:func:`subsample_occurrences`, seeded by ``seed_epoch`` = (seed, epoch)).
        """
        ids, aligned, offsets = shard["word_ids"], shard["word_aligned"], shard["sent_offsets"]
        occ_vec = shard["occ_vec"]
        n_occ = len(occ_vec)
        if keep_prob is None:
            kept, rows = aligned, np.arange(n_occ)
        else:
            kept, rows = subsample_occurrences(ids, aligned, keep_prob, (*seed_epoch, first))
            occ_vec = occ_vec[rows]
        occ_word, ctx = window_occurrences(ids, kept, offsets, window)
        return cls(occ_vec, occ_word, ctx, window_words(occ_word, ctx), first, rows, n_occ)

    def position(self, b: int) -> int:
        """Occurrences of the shard before centre b (0 for the first, all of them past the last)."""
        return 0 if b == 0 else int(self.rows[b]) if b < len(self.rows) else self.n_occ


@dataclass
class Buffers:
    """One worker's scratch arrays for :class:`Step` (row counts: batch plus the margins)."""

    occ: np.ndarray  # the batch's occurrence vectors, float32
    P: np.ndarray
    G: np.ndarray
    dU: np.ndarray
    beta: np.ndarray
    negs: np.ndarray
    losses: np.ndarray


@dataclass
class Step:
    """One SGD step of the module docstring on the shared tables E and U (updated in place)."""

    update: Any  # the student's centre update (@njit)
    params: np.ndarray  # float32 constants passed to it
    spreads: bool  # whether it sends gradients to its window neighbours' projections
    table: np.ndarray  # E (n_words, dim) float32
    proj: np.ndarray  # U (dim, d) float32
    cum_table: np.ndarray  # the negatives' unigram table (sampling.negative_table)
    clip: float
    batch: int
    window: int
    negative: int
    seed: int
    kernel: Any = field(init=False)
    lock: Any = field(init=False, default_factory=threading.Lock)  # around U's update

    def __post_init__(self) -> None:
        self.kernel = bind_update(_batch_kernel, self.update, nogil=True)

    def buffers(self) -> Buffers:
        """Scratch arrays for one worker."""
        rows, (dim, d) = self.batch + 2 * self.window * self.spreads, self.proj.shape
        return Buffers(
            np.empty((rows, d), np.float32),
            np.empty((rows, dim), np.float32),
            np.empty((rows, dim), np.float32),
            np.empty_like(self.proj),
            np.empty((self.batch, 2 * self.window + self.negative), np.float32),
            np.empty((self.batch, self.negative), np.int64),
            np.empty(self.batch, np.float32),
        )

    def __call__(self, data: ShardWindows, b0: int, b1: int, lr: float, epoch: int, buf: Buffers) -> float:
        """Step on centres b0..b1 of ``data`` at rate ``lr`` with scratch ``buf``; returns their loss."""
        margin = self.window * self.spreads
        e0, e1 = max(0, b0 - margin), min(len(data.occ_word), b1 + margin)
        off, n_b, n_ext = b0 - e0, b1 - b0, e1 - e0
        P, G = buf.P[:n_ext], buf.G[:n_ext]
        occ = buf.occ[:n_ext]
        widen(data.occ_vec[e0:e1], occ)
        # numpy's BLAS beat torch's MKL on AMD CPUs (measured: Results page, contextual_subsample)
        np.matmul(occ, self.proj.T, out=P)
        self.kernel(
            P, off, b0, n_b, data.occ_word, data.ctx, data.ctx_word, self.cum_table,
            (self.seed, epoch, data.first), self.table, self.params, self.spreads, G, buf.beta,
            buf.negs, buf.losses,
        )  # fmt: skip
        scatter_rows(P[off : off + n_b], self.table, data.ctx_word[b0:b1], buf.negs, buf.beta, lr)
        np.matmul(G.T, occ, out=buf.dU)
        with self.lock:
            clipped_sgd(self.proj, buf.dU, lr, self.clip)
        return float(buf.losses[:n_b].sum(dtype=np.float64))


@dataclass
class Tally:
    """Centres stepped and their loss over all workers, and the progress bar; one lock guards them all.

    The same lock hands out a shard's batches (:func:`work`): a worker holds it for an instant
    between steps, never during one.
    """

    bar: Any
    batch: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: int = 0
    loss_sum: float = 0.0

    def add(self, data: ShardWindows, b0: int, b1: int, loss: float, lr: float) -> None:
        """Count centres b0..b1 of ``data`` and their loss; the bar shows the mean loss every 50 batches."""
        with self.lock:
            self.done += b1 - b0
            self.loss_sum += loss
            self.bar.update(data.position(b1) - data.position(b0))
            if (b0 // self.batch) % 50 == 0:
                self.bar.set_postfix(loss=f"{self.loss_sum / self.done:.4f}", lr=f"{lr:.4g}")


def work(
    step: Step,
    tally: Tally,
    config: ContextualConfig,
    total: int,
    epoch: int,
    before: int,
    data: ShardWindows,
    batches: Iterator[int],
    buf: Buffers,
) -> None:
    """One worker: take the shard's next batch until none is left (``before``: occurrences of earlier epochs).

    The rate decays linearly over the occurrences of all epochs (``total``), by each batch's place.
    """
    while True:
        with tally.lock:
            b0 = next(batches, None)
        if b0 is None:
            return
        b1 = min(b0 + config.batch, len(data.occ_word))
        lr = linear_alpha(config.lr, config.min_lr, before + data.first + data.position(b0), total)
        tally.add(data, b0, b1, step(data, b0, b1, lr, epoch, buf), lr)


def run_epoch(
    pool: ThreadPoolExecutor,
    shards: Iterator[Any],
    read: Callable[[Any, int], ShardWindows],
    worker: Callable[[ShardWindows, Iterator[int], Buffers], None],
    buffers: list[Buffers],
    batch: int,
) -> None:
    """Every shard's batches shared by the workers (one per buffer); the next shard is read meanwhile."""
    data: ShardWindows | None = read(next(shards), 0)
    while data is not None:
        batches = iter(range(0, len(data.occ_word), batch))
        jobs = [pool.submit(worker, data, batches, buf) for buf in buffers]
        first = data.first + data.n_occ
        shard = next(shards, None)
        data = None if shard is None else read(shard, first)
        for job in jobs:
            job.result()


def start_step(
    cache: Cache, config: ContextualConfig, update: Any, params: Iterable[float], spreads: bool
) -> Step:
    """The step on E (a teacher table of ``config.init``, or random) and U (as torch's ``Linear``, seeded)."""
    counts = cache.vocab.counts
    start_table = teacher_init(cache, config.init, config.dim)
    table = (
        init_table(len(counts), config.dim, config.seed)
        if start_table is None
        else np.ascontiguousarray(start_table, dtype=np.float32)
    )
    d = cache.shard(0, ["occ_vec"])["occ_vec"].shape[1]
    return Step(
        update, np.asarray(tuple(params), np.float32), spreads, table,
        init_projection(d, config.dim, config.seed), negative_table(counts, config.ns_exponent),
        config.clip, config.batch, config.window, config.negative, config.seed,
    )  # fmt: skip


def train(
    name: str,
    cache: Cache,
    config: ContextualConfig,
    update: Any,
    params: Iterable[float] = (),
    spreads: bool = False,
) -> Vectors:
    """Stream the shards and take one :class:`Step` per ``config.batch`` centres; return E.

    ``update`` is the student's centre update (module docstring), ``params`` its constants,
    ``spreads`` whether it sends gradients to its window neighbours (:func:`start_step`).
    ``config.threads`` workers (0 = Numba's thread count) step side by side, each with
    single-threaded GEMMs; the next shard is read while they work on one.
    """
    threads = config.threads or numba_pool()
    with blas_threads(1):
        step = start_step(cache, config, update, params, spreads)
        n_occ = cache.totals("n_occurrences")
        total = n_occ * config.epochs or 1
        keep_prob = keep_probabilities(cache.vocab.counts, config.sample) if config.sample > 0 else None

        def read(shard: Any, first: int, epoch: int) -> ShardWindows:
            """The shard's windows in ``epoch`` (subsampled when ``config.sample`` is set)."""
            return ShardWindows.read(shard, config.window, first, keep_prob, (config.seed, epoch))

        loss_per_epoch: list[float] = []
        start = time.perf_counter()
        bar = tqdm(total=total, desc=name, unit="occ", unit_scale=True, file=sys.stderr, mininterval=1.0)
        tally = Tally(bar, config.batch)
        buffers = [step.buffers() for _ in range(threads)]
        with ThreadPoolExecutor(threads) as pool:
            for epoch in range(config.epochs):
                e_loss, e_done, before = tally.loss_sum, tally.done, epoch * n_occ
                worker = partial(work, step, tally, config, total, epoch, before)
                run_epoch(
                    pool, cache.shards(["occ_vec"]), partial(read, epoch=epoch), worker, buffers, config.batch
                )
                loss_per_epoch.append((tally.loss_sum - e_loss) / max(tally.done - e_done, 1))
        bar.close()
    seconds = time.perf_counter() - start
    mean_loss = tally.loss_sum / max(tally.done, 1)
    log.info(
        "%s: %s centre words in %.1f s (%s words/s, %d threads), mean loss %.4f",
        name, f"{tally.done:,}", seconds, f"{tally.done / max(seconds, 1e-9):,.0f}", threads, mean_loss,
    )  # fmt: skip
    train: dict[str, Any] = {
        "centres": tally.done,
        "mean_loss": mean_loss,
        "loss_per_epoch": loss_per_epoch,
        "loop_seconds": round(seconds, 2),
    }
    return Vectors(list(cache.vocab.words), step.table, cache.vocab.counts.copy(), {"train": train})
