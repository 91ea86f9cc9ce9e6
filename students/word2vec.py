"""The word2vec trainer shared by SGNS and CBOW: negative-sampling update and Hogwild epoch driver.

A student plugs into :func:`train` with a *centre update*: an ``@njit`` function (without
``cache=True``, see :func:`epoch_driver`) called for every kept centre word with the signature

``centre_update(sent, n, i, b, syn0, syn1neg, cum_table, negative, alpha, scratch, targets,
state, compute_loss) -> (loss, n_pairs, state)``

where ``sent[:n]`` is the subsampled sentence, ``i`` the centre position, ``b`` the reduced
window, ``scratch`` a float32 ``(2, dim)`` work array (hidden vector, its gradient), ``targets``
an int32 buffer of ``negative + 1`` ids and ``state`` the chunk's uint64 RNG state. The
logistic negative-sampling update is Mikolov et al. 2013 Eq. 4; the driver runs chunks of
sentences in parallel (prange), updating the shared tables without locks.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit, prange
from tqdm import tqdm

from ctx2static.options import Options, Rule, at_least, opt, rate_rule, seed_rule
from ctx2static.students import sampling
from ctx2static.students.budget import FLOAT32, Sizes
from ctx2static.students.jit_bind import bind_update, centre_update
from ctx2static.students.losses import softplus
from ctx2static.students.sampling import (
    exponent_rule,
    lcg,
    linear_alpha_nb,
    reduced_window,
    sample_rule,
    seed_state,
    subsample,
)
from ctx2static.text.encoded import EncodedCorpus
from ctx2static.text.vocab import Vocab
from ctx2static.threads import numba_threads, threads_rule
from ctx2static.transforms.postprocess import abtt_rule
from ctx2static.vectors import Vectors

log = logging.getLogger(__name__)

# Words per chunk of sentences: the unit of parallel work and of the learning-rate schedule
# (gensim's batch_words, word2vec's per-thread alpha refresh every 10k words).
CHUNK_WORDS = 10_000


@dataclass(frozen=True)
class Word2VecConfig(Options):
    """word2vec's defaults (Mikolov et al. 2013; the C tool and gensim), shared by SGNS and CBOW."""

    dim: int = opt(100, "Vector size.")
    window: int = opt(5, "Largest window; each centre draws its own from 1..window (word2vec).")
    negative: int = opt(5, "Noise words per positive (Eq. 4).")
    sample: float = opt(1e-3, "Frequent-word subsampling threshold (Sec. 2.3; 0 = off).")
    lr: float = opt(0.025, "Initial learning rate (word2vec's alpha), decayed linearly to min_lr.")
    min_lr: float = opt(1e-4, "Final learning rate (word2vec's min_alpha).")
    epochs: int = opt(5, "Passes over the corpus.")
    threads: int = opt(0, "Numba threads (0 = all cores numba may use).")
    seed: int = opt(1, "Random seed.")
    ns_exponent: float = opt(0.75, "Exponent of the unigram noise distribution (Sec. 2.2).")
    compute_loss: bool = opt(
        False,
        "Track the negative-sampling loss of each pair as it is trained (online, as word2vec and gensim "
        "do; costs a log per target). It can rise in the last epochs while the trained model's own loss "
        "still falls (measured: Results page, sgns_frozen_loss).",
    )
    abtt: int | None = opt(None, "All-but-the-top on the result (transforms/postprocess.py; none = off).")

    def rules(self) -> Iterable[Rule]:
        """Sizes positive, rates in (0, 1) and ordered (from 1 up the updates diverge to NaN)."""
        return [
            *at_least(self, 1, "dim", "window", "negative", "epochs"),
            threads_rule(self.threads, "all cores numba may use"),
            sample_rule(self.sample),
            rate_rule("lr", self.lr),
            ("min_lr", 0 <= self.min_lr <= self.lr, "between 0 and lr"),
            exponent_rule(self.ns_exponent),
            abtt_rule(self.abtt, self.dim),
            seed_rule(self.seed),
        ]


SIZED_BY = ("dim",)


def memory(config: Word2VecConfig, sizes: Sizes) -> int:
    """Bytes of the two tables, syn0 and syn1neg (float32, words x dim); their init makes no third."""
    return 2 * sizes.n_words * config.dim * FLOAT32


def chunk_bounds(sent_starts: np.ndarray, chunk_words: int = CHUNK_WORDS) -> np.ndarray:
    """Sentence indices splitting the corpus into chunks of about ``chunk_words`` tokens."""
    sent_starts = np.asarray(sent_starts, dtype=np.int64)
    n_sent = len(sent_starts) - 1
    marks = np.arange(0, sent_starts[-1], chunk_words, dtype=np.int64)
    firsts = np.searchsorted(sent_starts[:-1], marks, side="left")
    return np.unique(np.concatenate([[0], firsts, [n_sent]])).astype(np.int64)


# error_model="numpy": a diverging run (too high a rate for its data) yields NaN, which saving
# refuses in one line, instead of a ZeroDivisionError that fastmath raises on NaN denominators
@njit(cache=True, fastmath=True, error_model="numpy")
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
        a = linear_alpha_nb(alpha, min_alpha, done, total_words)
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


def epoch_driver(update: Any) -> Callable[..., None]:
    """The parallel epoch loop compiled with ``update`` (an ``@njit`` centre update) inlined.

    A centre update should call only its own module, this one and :mod:`sampling` (see
    :func:`~ctx2static.students.jit_bind.bind_update`, which explains the on-disk cache).
    """
    return bind_update(_run_epoch, update, parallel=True)


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
    cum_table = sampling.negative_table(vocab.counts, config.ns_exponent)
    keep_prob = sampling.keep_probabilities(vocab.counts, config.sample)
    bounds = chunk_bounds(sent_starts)
    n_chunks = len(bounds) - 1
    chunk_done = np.zeros(n_chunks, dtype=np.int64)
    chunk_stats = np.zeros((n_chunks, 3), dtype=np.float64)
    total_words = config.epochs * n_tokens
    run_epoch = epoch_driver(update)
    loss = pairs = kept = 0.0
    loss_per_epoch: list[float] = []
    start = time.perf_counter()
    with numba_threads(config.threads) as threads:
        order = chunk_order(n_chunks, threads)
        bar = tqdm(range(config.epochs), desc=name, unit="epoch", file=sys.stderr, leave=False)
        for epoch in bar:
            chunk_done[:] = 0
            run_epoch(
                ids, sent_starts, bounds, order, syn0, syn1neg, cum_table, keep_prob,
                config.window, config.negative, config.lr, config.min_lr, epoch * n_tokens,
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
    seconds = time.perf_counter() - start
    train: dict[str, Any] = {"pairs": int(pairs), "kept_words": int(kept)}
    summary = (
        f"{name}: {config.epochs} epochs over {n_tokens:,} tokens in {seconds:.1f} s "
        f"({total_words / seconds:,.0f} tokens/s, {threads} threads, "
        f"{kept / config.epochs:,.0f} tokens a pass after subsampling)"
    )
    if config.compute_loss:
        train["loss_per_pair"] = loss / max(pairs, 1)
        train["loss_per_epoch"] = loss_per_epoch
        summary += f", mean loss {train['loss_per_pair']:.4f} per pair"
    log.info(summary)
    return Vectors(list(vocab.words), syn0, vocab.counts.copy(), {"train": train})
