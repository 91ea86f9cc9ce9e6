"""Sentence student: static rows whose pooled mean predicts the teacher's sentence vector.

The objective of tokenlearn (MinishLab, 0.2.1 ``pretrain.py``): a sentence's mean of per-word
static rows, each scaled by a learned per-word weight, is regressed onto the teacher's mean over
the sentence's tokens (MSE, AdamW at 1e-3, batches of 256). Here it runs on the cache with no second
teacher pass: the target is ``sent_ctx`` (the teacher's layer mean over all tokens of the sentence,
special ones included) and the rows start from ASE (:func:`~ctx2static.students.cache_input.ase_table`),
so they live in the target's space from the first step. tokenlearn needs a learned linear head
because its rows (Model2Vec's distilled table) and its targets (PCA-reduced separately) are in
different bases, and it throws the head away at the end; here the head is the identity, so the
exported rows' mean is itself the prediction. What the mean of static rows cannot see is the same
for every sentence (the special tokens, words outside the vocabulary): a learned bias b takes it,
and is not exported (a constant shift, which a downstream classifier's intercept absorbs).

Every target dimension is divided by its standard deviation over the corpus's sentences, and the
rows with it: the loss then weighs the dimensions as a standardising downstream classifier does,
instead of being spent on the few outlier dimensions of a transformer's activations. In those
units, for a batch B of sentences s with occurrences w_1..w_n (in-vocabulary, aligned):

    p_s = (1/n) sum_i a_{w_i} E_{w_i},   r_s = p_s + b - t_s,
    L = (1/|B|) sum_s 1/2 ||r_s||^2 + (lambda/2) sum_{w in rows(B)} ||E_w - E0_w||^2

with E0 the ASE start and rows(B) the words the batch holds (the anchor, lazily, as the lazy Adam
step moves only those rows). Its gradient:

    dL/dE_w = (1/|B|) sum_s sum_{i: w_i = w} (a_w / n) r_s + lambda (E_w - E0_w)
    dL/da_w = (1/|B|) sum_s sum_{i: w_i = w} (E_w . r_s) / n
    dL/db   = (1/|B|) sum_s r_s

The optimiser is lazy Adam (:mod:`~ctx2static.students.adam`, torch's defaults) over E, a and b
held in one table, so one sparse step moves them all. The result is a_w E_w in the teacher's units:
with the weights folded into the rows, plain mean pooling of the exported table (Model2Vec's, or
:meth:`Vectors.encode` unweighted) gives the trained prediction up to b. A word's weight is then its
row's norm, which a classifier that normalises rows first (the downstream probes) does not see.
``a`` is only a reparametrisation of that norm, kept because Adam moves one scalar per word faster
than d coordinates. The anchor lambda keeps rows near ASE, whose word similarity is good, where the
sentence fit does not need them to move.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numba import njit
from tqdm import tqdm

from ctx2static.cache import Cache
from ctx2static.options import Options, Rule, opt, rate_rule, seed_rule
from ctx2static.students.adam import sparse_adam
from ctx2static.students.cache_input import ase_table
from ctx2static.vectors import Vectors

log = logging.getLogger(__name__)

BETA1, BETA2, EPS = 0.9, 0.999, 1e-8  # torch's Adam defaults, as tokenlearn's AdamW


@dataclass(frozen=True)
class Config(Options):
    """Defaults: tokenlearn's rate and batch (other settings on Brown: bench/results/sentence_student.md)."""

    epochs: int = opt(3, "Passes over the cache (sentences shuffled within each shard, per epoch).")
    lr: float = opt(1e-3, "Lazy Adam learning rate, in target standard deviations (tokenlearn: 1e-3).")
    batch_sentences: int = opt(256, "Sentences per Adam step (tokenlearn: 256).")
    weights: bool = opt(True, "Learn a weight per word in the pooled mean (folded into its row at the end).")
    anchor: float = opt(0.0, "lambda: pull of each row toward its ASE start (0 = none).")
    seed: int = opt(1, "Random seed (the sentence order of every epoch).")

    def rules(self) -> Iterable[Rule]:
        """Counts positive, the rate in (0, 1), the anchor a pull (not a push)."""
        return [
            ("epochs", self.epochs >= 1, "at least 1"),
            ("batch_sentences", self.batch_sentences >= 1, "at least 1"),
            rate_rule("lr", self.lr),
            ("anchor", self.anchor >= 0, "0 (off) or positive"),
            seed_rule(self.seed),
        ]

    def signals(self) -> tuple[str, ...]:
        """The teacher's per-sentence means."""
        return ("sent_ctx",)


@njit(cache=True)
def mean_rows(
    table: np.ndarray, word_ids: np.ndarray, aligned: np.ndarray, sent_offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence: the mean of ``table``'s rows over its occurrences (none: zeros), and how many."""
    n_sent = sent_offsets.shape[0] - 1
    pooled = np.zeros((n_sent, table.shape[1]), dtype=np.float64)
    n_occ = np.zeros(n_sent, dtype=np.int64)
    for s in range(n_sent):
        for k in range(sent_offsets[s], sent_offsets[s + 1]):
            if word_ids[k] >= 0 and aligned[k]:
                pooled[s] += table[word_ids[k]]
                n_occ[s] += 1
        if n_occ[s]:
            pooled[s] /= n_occ[s]
    return pooled, n_occ


@njit(cache=True, fastmath=True)
def batch_gradient(
    theta: np.ndarray,
    start: np.ndarray,
    word_ids: np.ndarray,
    aligned: np.ndarray,
    sent_offsets: np.ndarray,
    targets: np.ndarray,
    batch: np.ndarray,
    anchor: float,
    weights: bool,
    grad: np.ndarray,
    touched: np.ndarray,
    flag: np.ndarray,
) -> tuple[float, float, int, int]:
    """The loss of the module docstring on sentences ``batch`` and |B| times its gradient, added to ``grad``.

    ``theta`` (n_words + 1, d + 1): row w = [E_w, a_w], the last row = [b, unused]; ``start`` holds
    E0. Sentences without an occurrence are skipped. Marks the rows with a gradient in ``flag`` and
    lists them in ``touched`` (the bias row last). Returns (sum_s 1/2 ||r_s||^2, the anchor term,
    |B|, rows touched).
    """
    d = targets.shape[1]
    bias = theta.shape[0] - 1
    r = np.empty(d, dtype=np.float64)
    fit, n_batch, n_rows = 0.0, 0, 0
    for s in batch:
        k0, k1 = sent_offsets[s], sent_offsets[s + 1]
        n = 0
        for k in range(k0, k1):
            if word_ids[k] >= 0 and aligned[k]:
                n += 1
        if n == 0:
            continue
        for j in range(d):
            r[j] = theta[bias, j] - targets[s, j]
        for k in range(k0, k1):
            if word_ids[k] >= 0 and aligned[k]:
                w = word_ids[k]
                for j in range(d):
                    r[j] += theta[w, d] * theta[w, j] / n
        for j in range(d):
            fit += 0.5 * r[j] * r[j]
            grad[bias, j] += r[j]
        for k in range(k0, k1):
            if word_ids[k] >= 0 and aligned[k]:
                w = word_ids[k]
                if not flag[w]:
                    flag[w] = True
                    touched[n_rows] = w
                    n_rows += 1
                dot = 0.0
                for j in range(d):
                    grad[w, j] += theta[w, d] / n * r[j]
                    dot += theta[w, j] * r[j]
                if weights:
                    grad[w, d] += dot / n
        n_batch += 1
    pull = 0.0
    if anchor > 0:
        for q in range(n_rows):
            w = touched[q]
            for j in range(d):
                diff = theta[w, j] - start[w, j]
                pull += diff * diff
                grad[w, j] += n_batch * anchor * diff
    if n_batch:
        flag[bias] = True
        touched[n_rows] = bias
        n_rows += 1
    return fit, 0.5 * anchor * pull, n_batch, n_rows


@njit(cache=True)
def _train_shard(
    theta: np.ndarray,
    start: np.ndarray,
    m: np.ndarray,
    v: np.ndarray,
    grad: np.ndarray,
    touched: np.ndarray,
    flag: np.ndarray,
    word_ids: np.ndarray,
    aligned: np.ndarray,
    sent_offsets: np.ndarray,
    targets: np.ndarray,
    order: np.ndarray,
    batch: int,
    anchor: float,
    weights: bool,
    lr: float,
    step: int,
) -> tuple[float, int, int]:
    """A pass over a shard's sentences in ``order``, an Adam step a batch; returns (fit, sentences, step)."""
    fit, n_sent = 0.0, 0
    for b0 in range(0, order.shape[0], batch):
        f, _, n_batch, n_rows = batch_gradient(
            theta, start, word_ids, aligned, sent_offsets, targets, order[b0 : b0 + batch], anchor, weights,
            grad, touched, flag,
        )  # fmt: skip
        if n_batch == 0:
            continue
        step += 1
        sparse_adam(theta, m, v, grad, touched, n_rows, 1.0 / n_batch, lr, BETA1, BETA2, EPS, step)
        for q in range(n_rows):
            flag[touched[q]] = False
        fit += f
        n_sent += n_batch
    return fit, n_sent, step


def _target_scale(cache: Cache, table: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The targets' scale and the start of the bias, from the sentences with an occurrence.

    Per target dimension: its standard deviation (1 where it is 0), and mean(t - p0) in those units
    (p0: the ASE rows' mean); also the loss per sentence at that start.
    """
    d = table.shape[1]
    n, t1, t2, r1, r2 = 0, np.zeros(d), np.zeros(d), np.zeros(d), np.zeros(d)
    for shard in cache.shards(["sent_ctx"]):
        pooled, n_occ = mean_rows(table, shard["word_ids"], shard["word_aligned"], shard["sent_offsets"])
        t = shard["sent_ctx"][n_occ > 0].astype(np.float64)
        r = t - pooled[n_occ > 0]
        n += len(t)
        t1, t2, r1, r2 = t1 + t.sum(0), t2 + (t * t).sum(0), r1 + r.sum(0), r2 + (r * r).sum(0)
    n = max(n, 1)
    var = t2 / n - (t1 / n) ** 2
    sigma = np.where(var > 1e-12, np.sqrt(np.maximum(var, 1e-12)), 1.0)
    bias = r1 / n / sigma
    start_loss = 0.5 * float(((r2 / n - (r1 / n) ** 2) / sigma**2).sum())
    return sigma, bias, start_loss


def fit(cache: Cache, config: Config) -> Vectors:
    """Train the rows (and weights) from ASE so their sentence means fit the cached ``sent_ctx``."""
    table = ase_table(cache)
    n_words, d = table.shape
    sigma, bias, start_loss = _target_scale(cache, table)
    theta = np.ones((n_words + 1, d + 1), dtype=np.float32)
    theta[:n_words, :d] = table / sigma
    theta[n_words, :d] = bias
    start = theta[:n_words, :d].copy()
    m, v, grad = np.zeros_like(theta), np.zeros_like(theta), np.zeros_like(theta)
    touched = np.empty(n_words + 1, dtype=np.int64)
    flag = np.zeros(n_words + 1, dtype=np.bool_)
    step, fit_sum, n_sent = 0, 0.0, 0
    loss_per_epoch: list[float] = []
    began = time.perf_counter()
    for epoch in range(config.epochs):
        e_fit, e_sent = fit_sum, n_sent
        bar = tqdm(range(cache.n_shards), desc=f"sentence epoch {epoch + 1}", file=sys.stderr, leave=False)
        for i in bar:
            shard = cache.shard(i, ["sent_ctx"])
            order = np.random.default_rng([config.seed, epoch, i]).permutation(shard.n_sentences)
            s_fit, s_sent, step = _train_shard(
                theta, start, m, v, grad, touched, flag, shard["word_ids"], shard["word_aligned"],
                shard["sent_offsets"], (shard["sent_ctx"] / sigma).astype(np.float32), order,
                config.batch_sentences, config.anchor, config.weights, config.lr, step,
            )  # fmt: skip
            fit_sum += s_fit
            n_sent += s_sent
            bar.set_postfix(loss=f"{s_fit / max(s_sent, 1):.4f}")
        loss_per_epoch.append((fit_sum - e_fit) / max(n_sent - e_sent, 1))
    seconds = time.perf_counter() - began
    log.info(
        "sentence: %s sentences in %.1f s, loss per sentence %.4f at the start, %.4f in the last epoch",
        f"{n_sent:,}", seconds, start_loss, loss_per_epoch[-1],
    )  # fmt: skip
    rows = theta[:n_words, d:] * theta[:n_words, :d] * sigma.astype(np.float32)
    meta = {
        "sentences": n_sent,
        "start_loss": start_loss,
        "mean_loss": fit_sum / max(n_sent, 1),
        "loss_per_epoch": loss_per_epoch,
        "adam_steps": step,
    }
    return Vectors(list(cache.vocab.words), rows, cache.vocab.counts.copy(), meta)
