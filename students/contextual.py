"""Shared machinery of the students with a contextual centre (BERT+Skip-gram, Context-to-Vec).

The centre word i is seen through the teacher: its cached subword-pooled vector o_i (``occ_vec``)
is mapped to the static space by a learned linear map; the context words are rows of the static
table E that is saved. Batches are built in Numba (windows over a sentence's occurrences,
negatives from the shared unigram^0.75 table of :mod:`ctx2static.students.sampling`); the loss and
its gradients are torch (a dense projection, sparse gradients for E). Training is SGD with a
linearly decayed rate: the loss is summed over a batch, so every row of E moves as under
per-pair SGD, and the projection's gradient norm is clipped (the papers' clip at 5).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch
from numba import njit
from tqdm import tqdm

from ctx2static.cache import Cache
from ctx2static.options import Options, Rule, opt
from ctx2static.students.cache_input import Init, teacher_init
from ctx2static.students.sampling import draw_word, lcg, linear_alpha, negative_table, seed_state
from ctx2static.threads import torch_threads
from ctx2static.vectors import Vectors

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ContextualConfig(Options):
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
    threads: int = opt(0, "torch CPU threads (0 = torch's default).")
    seed: int = opt(1, "Random seed.")
    init: Init = opt(
        Init.AUTO, "Start of the static table: a teacher table (auto, ase, word, token) or random."
    )
    abtt: int | None = opt(1, "All-but-the-top on the result (students/postprocess.py; none = off).")

    def rules(self) -> Iterable[Rule]:
        """Sizes and rates positive."""
        return [
            ("dim", self.dim >= 1, "at least 1"),
            ("window", self.window >= 1, "at least 1"),
            ("negative", self.negative >= 1, "at least 1"),
            ("epochs", self.epochs >= 1, "at least 1"),
            ("batch", self.batch >= 1, "at least 1"),
            ("lr", self.lr > 0, "positive"),
            ("min_lr", 0 <= self.min_lr <= self.lr, "between 0 and lr"),
            ("threads", self.threads >= 0, "0 (torch's default) or more"),
        ]

    def signals(self) -> tuple[str, ...]:
        """The centre is seen through the teacher: per-occurrence vectors."""
        return ("occ_vec",)


@dataclass
class Batch:
    """Centres of one step: their occurrence rows, window words (masked), negatives."""

    centre: torch.Tensor  # (B,) rows of the shard's occ_vec
    ctx_word: torch.Tensor  # (B, 2 window) static ids of the window words, 0 where padded
    mask: torch.Tensor  # (B, 2 window) True where a window word exists
    negatives: torch.Tensor  # (B, negative) static ids
    window_mean: torch.Tensor | None = None  # (B, d) mean teacher vector of the window words


@njit(cache=True)
def window_occurrences(
    word_ids: np.ndarray, aligned: np.ndarray, sent_offsets: np.ndarray, window: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per occurrence: its static word and the occurrence rows of its +-window neighbours.

    Occurrences are the in-vocabulary aligned words, numbered in corpus order as the cache's
    per-occurrence arrays; the window runs over a sentence's occurrences (other words dropped
    first, as word2vec drops unknown words). Missing neighbours are -1.
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


@njit(cache=True, fastmath=True)
def window_mean(occ_vec: np.ndarray, ctx: np.ndarray) -> np.ndarray:
    """Mean of the teacher vectors of each occurrence's window words (zeros when it has none)."""
    out = np.zeros((ctx.shape[0], occ_vec.shape[1]), dtype=np.float32)
    for i in range(ctx.shape[0]):
        n = 0
        for c in range(ctx.shape[1]):
            j = ctx[i, c]
            if j >= 0:
                n += 1
                for d in range(occ_vec.shape[1]):
                    out[i, d] += occ_vec[j, d]
        if n > 1:
            for d in range(occ_vec.shape[1]):
                out[i, d] /= n
    return out


@njit(cache=True)
def draw_negatives(
    cum_table: np.ndarray, positives: np.ndarray, k: int, state: np.uint64
) -> tuple[np.ndarray, np.uint64]:
    """``k`` negatives per row from the unigram table, redrawn when equal to the row's positive."""
    out = np.empty((positives.shape[0], k), dtype=np.int64)
    for r in range(positives.shape[0]):
        for m in range(k):
            state = lcg(state)
            w = draw_word(cum_table, state)
            while w == positives[r]:
                state = lcg(state)
                w = draw_word(cum_table, state)
            out[r, m] = w
    return out, state


def projection(d_in: int, d_out: int, seed: int) -> torch.nn.Linear:
    """The student's linear map from the teacher's space, torch's default init drawn from ``seed``.

    The global RNG is left as it was, so the start does not depend on what ran before.
    """
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return torch.nn.Linear(d_in, d_out, bias=False)


def init_table(n_words: int, dim: int, seed: int) -> torch.Tensor:
    """The static table's start: uniform in (-0.5, 0.5)/dim, as word2vec's input vectors."""
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(n_words, dim, generator=gen) - 0.5) / dim


LossFn = Callable[[torch.Tensor, Batch, torch.Tensor, torch.Tensor], torch.Tensor]


def train(
    name: str,
    cache: Cache,
    config: ContextualConfig,
    projection: torch.nn.Module,
    loss_fn: LossFn,
    with_window_mean: bool = False,
) -> Vectors:
    """Stream the shards, build batches, minimise ``loss_fn`` (summed per batch) by SGD; return E.

    ``loss_fn(occ_vec, batch, ctx_rows, neg_rows)`` returns per-centre losses (``batch.window_mean``
    is filled when ``with_window_mean``); ``occ_vec`` is the
    shard's float32 occurrence matrix, ``ctx_rows`` (B, 2 window, dim) and ``neg_rows``
    (B, negative, dim) the gathered rows of E. Their gradients are scattered back into E
    (``index_add_``: the sparse SGD step, without building sparse tensors); ``projection`` (the
    student's linear map) takes a plain SGD step after its gradient norm is clipped at ``config.clip``.
    """
    with torch_threads(config.threads):
        torch.manual_seed(config.seed)
        counts = cache.vocab.counts
        start_table = teacher_init(cache, config.init, config.dim)
        table = (
            init_table(len(counts), config.dim, config.seed)
            if start_table is None
            else torch.from_numpy(start_table)
        )
        cum_table = negative_table(counts, config.ns_exponent)
        optimizer = torch.optim.SGD(projection.parameters(), lr=config.lr)
        total = cache.totals("n_occurrences") * config.epochs or 1
        done, loss_sum, steps = 0, 0.0, 0
        loss_per_epoch: list[float] = []
        start = time.perf_counter()
        bar = tqdm(total=total, desc=name, unit="occ", unit_scale=True, file=sys.stderr, mininterval=1.0)
        for epoch in range(config.epochs):
            e_loss, e_steps = loss_sum, steps
            for shard in cache.shards(["occ_vec"]):
                occ_np = shard["occ_vec"].astype(np.float32)
                occ_vec = torch.from_numpy(occ_np)
                occ_word, ctx = window_occurrences(
                    shard["word_ids"], shard["word_aligned"], shard["sent_offsets"], config.window
                )
                means = torch.from_numpy(window_mean(occ_np, ctx)) if with_window_mean else None
                state = np.uint64(seed_state(config.seed, epoch, shard.index))
                negs, _ = draw_negatives(cum_table, occ_word, config.negative, state)
                occ_word_t = torch.from_numpy(occ_word)
                for b0 in range(0, len(occ_word), config.batch):
                    sl = slice(b0, b0 + config.batch)
                    ctx_occ = torch.from_numpy(ctx[sl])
                    mask = ctx_occ >= 0
                    batch = Batch(
                        centre=torch.arange(b0, min(b0 + config.batch, len(occ_word))),
                        ctx_word=torch.where(mask, occ_word_t[ctx_occ.clamp(min=0)], 0),
                        mask=mask,
                        negatives=torch.from_numpy(negs[sl]),
                        window_mean=None if means is None else means[sl],
                    )
                    lr = linear_alpha(config.lr, config.min_lr, done, total)
                    for group in optimizer.param_groups:
                        group["lr"] = lr
                    optimizer.zero_grad(set_to_none=True)
                    ctx_rows = table[batch.ctx_word].requires_grad_()
                    neg_rows = table[batch.negatives].requires_grad_()
                    loss = loss_fn(occ_vec, batch, ctx_rows, neg_rows).sum()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(list(projection.parameters()), config.clip)
                    optimizer.step()
                    with torch.no_grad():
                        for ids, rows in ((batch.ctx_word, ctx_rows), (batch.negatives, neg_rows)):
                            table.index_add_(0, ids.reshape(-1), rows.grad.reshape(-1, config.dim), alpha=-lr)
                    n = len(batch.centre)
                    done += n
                    loss_sum += float(loss.detach())
                    steps += n
                    bar.update(n)
                    if (b0 // config.batch) % 50 == 0:
                        bar.set_postfix(loss=f"{loss_sum / max(steps, 1):.4f}", lr=f"{lr:.4g}")
            loss_per_epoch.append((loss_sum - e_loss) / max(steps - e_steps, 1))
        bar.close()
    seconds = time.perf_counter() - start
    mean_loss = loss_sum / max(steps, 1)
    log.info(
        "%s: %s centre words in %.1f s (%s words/s), mean loss %.4f",
        name, f"{steps:,}", seconds, f"{steps / max(seconds, 1e-9):,.0f}", mean_loss,
    )  # fmt: skip
    matrix = table.numpy()
    meta = {"centres": steps, "mean_loss": mean_loss, "loss_per_epoch": loss_per_epoch}
    return Vectors(list(cache.vocab.words), matrix, counts.copy(), meta)
