"""A sentence student: static rows whose mean over a sentence is the teacher's sentence vector.

tokenlearn's objective (MinishLab 2024), fitted from the cache instead of a second teacher pass:
the cache holds every sentence's teacher vector t_s (``sent_ctx``, the mean of the teacher layer
over the sentence's tokens, X2Static Eq. 3). With r_w the row of word w and S_s the sentence's
in-vocabulary words (aligned occurrences, n_s of them), the student minimises

    L(R) = 1/2 sum_s || (1/n_s) sum_{i in S_s} r_{w_i} - t_s ||^2 + lambda/2 sum_w || r_w - r0_w ||^2   (S1)

with r0 the ``ase`` rows (words never seen aligned: the ``word`` rows). The first term is
tokenlearn's mean-squared error against the teacher's sentence vector; the ridge pulls each row
towards its ase start, so a word seen in a few sentences stays near its average contextual vector
and a frequent one follows the sentences. Per-word weights need no parameter of their own: a
weighted mean sum_i a_w r_w / n_s is the plain mean of the rows a_w r_w, so the row's norm is its
weight (tokenlearn's export folds its weights into the rows the same way), and ``Vectors.encode``
with ``--weighting none`` pools exactly as the student was trained. No output layer either: the
rows live in the teacher's space, where t_s already is.

(S1) is a linear least-squares problem in R. Its minimum solves the normal equations

    (X^T X + lambda I) R = X^T T + lambda R0,   X[s, w] = (count of w in S_s) / n_s        (S2)

which preconditioned conjugate gradients (Jacobi: diag(X^T X) + lambda) solve column by column
with only products by the sparse X and X^T (X^T X, vocabulary x vocabulary, is never formed). So
the fit is exact and deterministic: no learning rate, no epochs, no early stopping to pick (unlike
tokenlearn's, which keeps the last epoch's model, not the best). Memory: X, kept as one block per
shard (a float64 and an int32 per aligned corpus word), five vocabulary x dim float64 blocks, and
one shard's sentences x dim product at a time (X^T X P is summed block by block, so no array is
sentences x dim for the whole corpus); the sentence vectors are streamed once, shard by shard, into
X^T T.

With ``standardize`` (auto: a rogue dimension, transforms/postprocess.py) t_s and r0 are z-scored
with the sentence vectors' statistics first, as x2static's contexts are.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ctx2static.cache import Cache, Shard
from ctx2static.options import Rule, at_least, opt, positive
from ctx2static.students.cache_input import Init, TeacherSpaceConfig, context_stats, teacher_table
from ctx2static.students.student import CacheStudent
from ctx2static.transforms.postprocess import DimensionStats
from ctx2static.vectors import Vectors

log = logging.getLogger(__name__)

_KEY = "sent_ctx"


@dataclass(frozen=True)
class Config(TeacherSpaceConfig):
    """The ridge of (S1) and the stopping rule of the conjugate-gradient solve of (S2)."""

    ridge: float = opt(
        0.1,
        "lambda of (S1): the pull towards the ase rows. X's entries are 1/n_s, so a word seen k "
        "times in sentences of n words weighs about k/n^2 against it: 0.1 is about 40 occurrences "
        "in 20-word sentences (the best held-out error on Brown; measured: Results page, sentence_student).",
    )
    iterations: int = opt(200, "Most conjugate-gradient iterations.")
    tolerance: float = opt(1e-5, "Stop when every column's residual norm is below this share of its start.")

    def rules(self) -> Iterable[Rule]:
        """A positive ridge (it makes (S2) positive definite) and a positive tolerance."""
        return [*positive(self, "ridge", "tolerance"), *at_least(self, 1, "iterations")]

    def signals(self) -> tuple[str, ...]:
        """The teacher's sentence vectors t_s."""
        return (_KEY,)


@dataclass
class _System:
    """(S2)'s pieces read from the cache: X (a block of rows per shard), X^T T, sum ||t_s||^2, sentences."""

    X: list[sp.csr_matrix]
    xt_t: np.ndarray
    t_energy: float
    n_sentences: int


def sentence_design(
    word_ids: np.ndarray, aligned: np.ndarray, offsets: np.ndarray, n_words: int
) -> sp.csr_matrix:
    """One shard's X of (S2): row s holds count(w in S_s) / n_s over the aligned in-vocabulary words.

    A sentence with no such word gets an empty row (it adds only a constant to (S1)).
    """
    n_sent = len(offsets) - 1
    sentence = np.repeat(np.arange(n_sent), np.diff(offsets))
    keep = (word_ids >= 0) & aligned.astype(bool)
    rows, cols = sentence[keep], word_ids[keep].astype(np.int64)
    n_s = np.bincount(rows, minlength=n_sent)
    data = (1.0 / n_s[rows]).astype(np.float64)
    return sp.csr_matrix((data, (rows, cols)), shape=(n_sent, n_words))  # duplicates summed: the counts


def shard_design(shard: Shard, n_words: int, columns: np.ndarray | None) -> sp.csr_matrix:
    """A cache shard's X, its word ids mapped through ``columns`` (-1: left out) when given."""
    ids = shard["word_ids"]
    if columns is not None:
        ids = np.where(ids >= 0, columns[np.maximum(ids, 0)], -1)
    return sentence_design(ids, shard["word_aligned"], shard["sent_offsets"], n_words)


def read_system(
    cache: Cache, n_words: int, scorer: DimensionStats | None, columns: np.ndarray | None = None
) -> _System:
    """Stream the shards once: stack X, accumulate X^T T and the targets' energy.

    ``columns`` maps the cache's word ids to X's columns (-1: left out), so the systems of several
    caches over one shared vocabulary can be summed; None keeps the cache's own ids.
    """
    blocks, xt_t, energy, n = [], None, 0.0, 0
    for i in range(cache.n_shards):
        shard = cache.shard(i, [_KEY])
        X = shard_design(shard, n_words, columns)
        T = np.asarray(scorer.zscore(shard[_KEY]) if scorer is not None else shard[_KEY], dtype=np.float64)
        used = np.diff(X.indptr) > 0
        energy += float(np.square(T[used]).sum())
        n += int(used.sum())
        part = X.T @ T
        xt_t = part if xt_t is None else xt_t + part
        blocks.append(X)
    return _System(blocks, np.asarray(xt_t), energy, n)


def objective(
    X: list[sp.csr_matrix], xt_t: np.ndarray, t_energy: float, R: np.ndarray, R0: np.ndarray, ridge: float
) -> float:
    """(S1) from X^T T and sum ||t_s||^2 alone: 1/2 (||XR||^2 - 2 <R, X^T T> + sum ||t||^2) + ridge term."""
    xr = sum(float(np.square(block @ R).sum()) for block in X)
    fit = xr - 2.0 * float(np.vdot(R, xt_t)) + t_energy
    return 0.5 * fit + 0.5 * ridge * float(np.square(R - R0).sum())


def solve(
    X: list[sp.csr_matrix],
    rhs: np.ndarray,
    start: np.ndarray,
    ridge: float,
    iterations: int,
    tolerance: float,
) -> tuple[np.ndarray, int, float]:
    """Jacobi-preconditioned conjugate gradients on (X^T X + ridge I) R = rhs, every column at once.

    X comes as blocks of rows; X^T X P is the sum of the blocks' X_b^T (X_b P), so the dense product
    is one block's sentences x dim at a time. Returns (R, iterations run, largest relative residual
    norm over the columns).
    """

    def apply(P: np.ndarray) -> np.ndarray:
        out = ridge * P
        for block in X:
            out += block.T @ (block @ P)
        return out

    diag = sum(np.asarray(block.multiply(block).sum(axis=0)).ravel() for block in X)
    inv_diag = 1.0 / (np.asarray(diag, dtype=np.float64) + ridge)
    R = start.astype(np.float64, copy=True)
    res = rhs - apply(R)
    norm0 = np.maximum(np.linalg.norm(rhs, axis=0), 1e-300)
    Z = inv_diag[:, None] * res
    P = Z.copy()
    rz = np.einsum("ij,ij->j", res, Z)
    worst = float((np.linalg.norm(res, axis=0) / norm0).max())
    done = 0
    while done < iterations and worst > tolerance:
        AP = apply(P)
        pap = np.einsum("ij,ij->j", P, AP)
        alpha = np.where(pap > 0, rz / np.where(pap > 0, pap, 1.0), 0.0)
        R += alpha * P
        res -= alpha * AP
        Z = inv_diag[:, None] * res
        rz_next = np.einsum("ij,ij->j", res, Z)
        P = Z + np.where(rz > 0, rz_next / np.where(rz > 0, rz, 1.0), 0.0) * P
        rz = rz_next
        done += 1
        worst = float((np.linalg.norm(res, axis=0) / norm0).max())
    return R, done, worst


def fit(cache: Cache, config: Config) -> Vectors:
    """Solve (S2) from the ase start; the rows are the vectors (their norms are the word weights)."""
    n_words = len(cache.vocab.counts)
    stats = context_stats(cache, _KEY, config.standardize, "sentence")
    scorer = stats if stats is not None and stats.wanted(config.standardize) else None
    R0 = teacher_table(cache, Init.ASE, scorer)
    start = time.perf_counter()
    system = read_system(cache, n_words, scorer)
    rhs = system.xt_t + config.ridge * R0
    before = objective(system.X, system.xt_t, system.t_energy, R0, R0, config.ridge)
    R, iterations, residual = solve(system.X, rhs, R0, config.ridge, config.iterations, config.tolerance)
    after = objective(system.X, system.xt_t, system.t_energy, R, R0, config.ridge)
    n = max(system.n_sentences, 1)
    log.info(
        "sentence: %s sentences, %d CG iterations in %.1f s (relative residual %.1e); objective a "
        "sentence %.4f at the ase start, %.4f fitted", f"{system.n_sentences:,}", iterations,
        time.perf_counter() - start, residual, before / n, after / n,
    )  # fmt: skip
    if residual > config.tolerance:
        log.warning(
            "sentence: conjugate gradients stopped at %d iterations with relative residual %.1e above "
            "tolerance %.0e; raise --set iterations",
            iterations,
            residual,
            config.tolerance,
        )
    train: dict[str, Any] = {
        "sentences": system.n_sentences,
        "cg_iterations": iterations,
        "relative_residual": residual,
        "objective_start": before / n,
        "objective": after / n,
        "standardized": scorer is not None,
    }
    if stats is not None:
        train["rogue_ratio"] = stats.rogue_ratio
    return Vectors(list(cache.vocab.words), R.astype(np.float32), cache.vocab.counts.copy(), {"train": train})


STUDENT = CacheStudent(Config, fit)
