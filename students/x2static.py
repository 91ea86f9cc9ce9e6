"""X2Static (Gupta & Jaggi 2021): a CBOW/Sent2vec-style student whose context is the teacher's.

"Obtaining Better Static Word Embeddings Using Contextual Embedding Models".

Objective (Eq. 1): for each target word w_t of sentence S,
``l(u_{w_t} . E_ctx(S)) + sum_{w' in N} l(-u_{w'} . E_ctx(S))`` with ``l(x) = log(1 + e^-x)``.
``E_ctx`` is the mean of the teacher's last-layer vectors over the sentence (Eq. 3, ``sent``) or
over the sentence's tokens when the teacher saw the whole paragraph (Eq. 4, ``para``); both are in
the cache, so only the static table U (teacher size) is learned. Defaults from Table 1 and the
reference code: 1 epoch, 10 negatives drawn from counts^0.5, target subsampling t = 5e-6, lazy
(sparse) Adam lr 1e-3, batches of 128 sentences, U uniform in +-1/d.

A causal LM's rogue dimensions make u . E_ctx thousands, which saturates l (Gemma 3 on Brown;
measured: Results page, rogue_dimensions); with ``standardize`` (auto: when one
dimension carries 1,000x the median's energy) E_ctx and the start table are z-scored per
dimension first (transforms/postprocess.py), so U lives in the z-scored space.
"""

from __future__ import annotations

import enum
import logging
import math
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit
from tqdm import tqdm

from ctx2static.cache import Cache
from ctx2static.options import Rule, at_least, opt, positive, rate_rule, seed_rule
from ctx2static.students.cache_input import Init, TeacherSpaceConfig, context_stats, teacher_init
from ctx2static.students.losses import softplus
from ctx2static.students.sampling import (
    draw_targets,
    exponent_rule,
    keep_probabilities,
    negative_table,
    sample_rule,
    seed_state,
    subsample,
)
from ctx2static.students.student import CacheStudent
from ctx2static.transforms.postprocess import abtt_rule
from ctx2static.vectors import Vectors

log = logging.getLogger(__name__)


class Context(str, enum.Enum):
    """Which cached context vector E_ctx is (Eq. 3 or Eq. 4)."""

    SENT = "sent"
    PARA = "para"


@dataclass(frozen=True)
class Config(TeacherSpaceConfig):
    """X2Static defaults (Gupta & Jaggi 2021, Table 1 and reference code)."""

    context: Context = opt(Context.SENT, "E_ctx: the sentence mean (Eq. 3) or paragraph context (Eq. 4).")
    epochs: int = opt(1, "Passes over the cache.")
    negative: int = opt(10, "Negatives per target (Eq. 1).")
    ns_exponent: float = opt(0.5, "Exponent of the noise distribution (reference code: counts^0.5).")
    sample: float = opt(5e-6, "Target subsampling threshold t.")
    lr: float = opt(1e-3, "Lazy (sparse) Adam learning rate.")
    beta1: float = opt(0.9, "Adam beta1.")
    beta2: float = opt(0.999, "Adam beta2.")
    eps: float = opt(1e-8, "Adam epsilon.")
    batch_sentences: int = opt(128, "Sentences per Adam step.")
    seed: int = opt(1, "Random seed.")
    init: Init = opt(Init.AUTO, "Start of U: a teacher table (auto, ase, word, token) or random (+-1/d).")
    abtt: int | None = opt(1, "All-but-the-top on the result (transforms/postprocess.py; none = off).")

    def rules(self) -> Iterable[Rule]:
        """Counts positive, the rate in (0, 1), Adam's betas below 1 and its eps positive.

        Adam's step divides by 1 - beta1^t, and by sqrt(v) + eps where v stays 0 in a row whose
        gradients were 0.
        """
        return [
            *at_least(self, 1, "epochs"),
            ("negative", self.negative >= 0, "0 or more"),
            *at_least(self, 1, "batch_sentences"),
            sample_rule(self.sample),
            rate_rule("lr", self.lr),
            ("beta1", 0 <= self.beta1 < 1, "at least 0 and below 1"),
            ("beta2", 0 <= self.beta2 < 1, "at least 0 and below 1"),
            *positive(self, "eps"),
            exponent_rule(self.ns_exponent),
            abtt_rule(self.abtt),
            seed_rule(self.seed),
        ]

    def signals(self) -> tuple[str, ...]:
        """The context vectors of Eq. 3 or 4."""
        return (f"{Context(self.context).value}_ctx",)


@njit(cache=True, fastmath=True)
def logistic_grad(u: np.ndarray, c: np.ndarray, label: float, grad: np.ndarray) -> float:
    """Loss ``l(+-u.c)`` of Eq. 1 for one (word, context) pair; adds dL/du to ``grad``.

    ``label`` 1 for the target (loss ``log(1+e^{-u.c})``), 0 for a negative (``log(1+e^{u.c})``);
    ``dL/du = (sigmoid(u.c) - label) c``.
    """
    f = 0.0
    for d in range(u.shape[0]):
        f += u[d] * c[d]
    g = 1.0 / (1.0 + math.exp(-f)) - label
    for d in range(u.shape[0]):
        grad[d] += g * c[d]
    return softplus(-f if label > 0.5 else f)


@njit(cache=True, fastmath=True)
def _sparse_adam(
    U: np.ndarray,
    m: np.ndarray,
    v: np.ndarray,
    grad: np.ndarray,
    rows: np.ndarray,
    n_rows: int,
    scale: float,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
) -> None:
    """Lazy Adam on the touched ``rows`` only (torch.optim.SparseAdam's update); zeroes their grad."""
    step_size = lr * math.sqrt(1.0 - beta2**step) / (1.0 - beta1**step)
    for q in range(n_rows):
        r = rows[q]
        for d in range(U.shape[1]):
            g = grad[r, d] * scale
            m[r, d] = beta1 * m[r, d] + (1.0 - beta1) * g
            v[r, d] = beta2 * v[r, d] + (1.0 - beta2) * g * g
            U[r, d] -= step_size * m[r, d] / (math.sqrt(v[r, d]) + eps)
            grad[r, d] = 0.0


@njit(cache=True, fastmath=True)
def _train_shard(
    word_ids: np.ndarray,
    aligned: np.ndarray,
    sent_offsets: np.ndarray,
    ctx: np.ndarray,
    U: np.ndarray,
    m: np.ndarray,
    v: np.ndarray,
    grad: np.ndarray,
    touched: np.ndarray,
    flag: np.ndarray,
    keep_prob: np.ndarray,
    cum_table: np.ndarray,
    negative: int,
    batch: int,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
    state: np.uint64,
) -> tuple[float, int, int, np.uint64]:
    """One pass over a shard's sentences in batches; returns (loss, targets, adam step, rng state)."""
    n_sent = sent_offsets.shape[0] - 1
    longest = 0
    for s in range(n_sent):
        longest = max(longest, sent_offsets[s + 1] - sent_offsets[s])
    words = np.empty(longest, dtype=np.int32)
    kept = np.empty(longest, dtype=np.int32)
    targets = np.empty(negative + 1, dtype=np.int32)
    loss = 0.0
    n_targets = 0
    for b0 in range(0, n_sent, batch):
        n_rows = 0
        n_batch = 0
        for s in range(b0, min(b0 + batch, n_sent)):
            n = 0
            for k in range(sent_offsets[s], sent_offsets[s + 1]):
                if word_ids[k] >= 0 and aligned[k]:
                    words[n] = word_ids[k]
                    n += 1
            n, state = subsample(words, 0, n, keep_prob, kept, state)
            c = ctx[s]
            for i in range(n):
                nt, state = draw_targets(kept[i], cum_table, negative, targets, state)
                for k in range(nt):
                    r = targets[k]
                    if not flag[r]:
                        flag[r] = True
                        touched[n_rows] = r
                        n_rows += 1
                    loss += logistic_grad(U[r], c, 1.0 if k == 0 else 0.0, grad[r])
                n_batch += 1
        if n_batch == 0:
            continue
        step += 1
        _sparse_adam(U, m, v, grad, touched, n_rows, 1.0 / n_batch, lr, beta1, beta2, eps, step)
        for q in range(n_rows):
            flag[touched[q]] = False
        n_targets += n_batch
    return loss, n_targets, step, state


def fit(cache: Cache, config: Config) -> Vectors:
    """Train the static table U against the cached sentence/paragraph contexts (Eq. 1)."""
    key = f"{Context(config.context).value}_ctx"
    counts = cache.vocab.counts
    n_words = len(counts)
    dim = cache.shard(0, [key])[key].shape[1]
    stats = context_stats(cache, key, config.standardize, "x2static")
    scorer = stats if stats is not None and stats.wanted(config.standardize) else None
    rng = np.random.default_rng(config.seed)
    U = teacher_init(cache, config.init, dim, zscore=scorer)
    if U is None:
        U = ((rng.random((n_words, dim)) * 2 - 1) / dim).astype(np.float32)
    m = np.zeros_like(U)
    v = np.zeros_like(U)
    grad = np.zeros_like(U)
    touched = np.empty(n_words, dtype=np.int64)
    flag = np.zeros(n_words, dtype=np.bool_)
    keep_prob = keep_probabilities(counts, config.sample)
    cum_table = negative_table(counts, config.ns_exponent)
    step, loss, n_targets = 0, 0.0, 0
    loss_per_epoch: list[float] = []
    start = time.perf_counter()
    for epoch in range(config.epochs):
        e_loss, e_targets = loss, n_targets
        bar = tqdm(range(cache.n_shards), desc=f"x2static epoch {epoch + 1}", file=sys.stderr, leave=False)
        for i in bar:
            shard = cache.shard(i, [key])
            ctx = scorer.zscore(shard[key]) if scorer else np.ascontiguousarray(shard[key], np.float32)
            state = np.uint64(seed_state(config.seed, epoch, i))
            s_loss, s_targets, step, _ = _train_shard(
                shard["word_ids"], shard["word_aligned"], shard["sent_offsets"],
                ctx, U, m, v, grad, touched, flag,
                keep_prob, cum_table, config.negative, config.batch_sentences, config.lr,
                config.beta1, config.beta2, config.eps, step, state,
            )  # fmt: skip
            loss += s_loss
            n_targets += s_targets
            bar.set_postfix(loss=f"{s_loss / max(s_targets, 1):.4f}")
        loss_per_epoch.append((loss - e_loss) / max(n_targets - e_targets, 1))
    seconds = time.perf_counter() - start
    mean_loss = loss / max(n_targets, 1)
    log.info(
        "x2static (%s): %s targets in %.1f s (%s targets/s), mean loss %.4f",
        key, f"{n_targets:,}", seconds, f"{n_targets / max(seconds, 1e-9):,.0f}", mean_loss,
    )  # fmt: skip
    train: dict[str, Any] = {
        "targets": n_targets,
        "mean_loss": mean_loss,
        "adam_steps": step,
        "loss_per_epoch": loss_per_epoch,
        "standardized": scorer is not None,
    }
    if stats is not None:
        train["rogue_ratio"] = stats.rogue_ratio
    return Vectors(list(cache.vocab.words), U, counts.copy(), {"train": train})


STUDENT = CacheStudent(Config, fit)
