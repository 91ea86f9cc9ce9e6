"""BERT+Skip-gram (Wang et al. 2021, "Using Dynamic Embeddings to Improve Static Embeddings").

Centre: u_i = U o_i (Eq. 10), o_i the teacher's vector of the centre occurrence. Context: the
static output table V' (what is saved). Attention over the 2ws window words (Eq. 13-14):
a_j = softmax_j(u_i . v'_j), v'_ctx = sum_j a_j v'_j. Loss (Eq. 15):
``-log s(v'_ctx . u_i) - sum_m log s(-v'_neg_m . u_i)``, negatives from unigram^0.75.
Defaults: d_emb 300, ws 5, k 5, SGD lr 0.025 decayed linearly, clip 5. The paper subsamples
nothing ("attention replaces it"); we subsample the occurrences as word2vec does, t = 1e-5: fewer
centres, and every similarity and analogy score measured rose
(measured: Results page, contextual_subsample). ``sample=0`` is the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ctx2static.cache import Cache
from ctx2static.options import opt
from ctx2static.students.contextual import (
    SIZED_BY,
    Array,
    ContextualConfig,
    axpy,
    dot,
    memory,
    negatives_update,
    train,
)
from ctx2static.students.losses import logistic
from ctx2static.students.student import CacheStudent
from ctx2static.vectors import Vectors


@dataclass(frozen=True)
class Config(ContextualConfig):
    """Wang et al. 2021 defaults (see :class:`ContextualConfig`), but for the subsampling."""

    sample: float = opt(1e-5, "Frequent-word subsampling of the occurrences (0 = off, as the paper).")


@njit(fastmath=True)
def centre_loss(
    P: Array, i: int, near: Array, ctx: Array, negs: Array, E: Array, params: Array, du: Array, beta: Array
) -> tuple[float, float]:
    """Eq. 13-15 for the centre u = P[i]: loss, dL/du into ``du``, row coefficients into ``beta``.

    z_j = v'_j . u, a = softmax(z) over the window words present, x = v'_ctx . u = sum_j a_j z_j;
    loss ``softplus(-x) + sum_m softplus(v'_m . u)`` (no positive term without window words).
    With c = dL/dx = -s(-x): dx/dz_j = a_j (1 + z_j - x), so dL/dv'_j = c a_j (1 + z_j - x) u and
    dL/du = sum_j c a_j (1 + z_j - x) v'_j (+ the negatives'). Signature: see
    :mod:`~ctx2static.students.contextual`; ``params`` is unused, nothing spreads.
    """
    u = P[i]
    du[:] = 0.0
    window2 = ctx.shape[0]
    n = 0
    zmax = 0.0
    for j in range(window2):
        beta[j] = 0.0
        if ctx[j] >= 0:
            beta[j] = dot(E[ctx[j]], u)  # z_j, for now
            zmax = beta[j] if n == 0 else max(zmax, beta[j])
            n += 1
    loss = 0.0
    if n > 0:  # (not an infinite start for zmax: fastmath assumes no infinities)
        total = 0.0
        x = 0.0
        for j in range(window2):
            if ctx[j] >= 0:
                e = np.exp(beta[j] - zmax)
                total += e
                x += e * beta[j]
        x /= total
        sig, sp = logistic(-x)
        c = -sig
        loss += sp
        for j in range(window2):
            if ctx[j] >= 0:
                z = beta[j]
                beta[j] = c * np.exp(z - zmax) / total * (1.0 + z - x)
                axpy(beta[j], E[ctx[j]], du)
    loss += negatives_update(u, E, negs, 1.0, du, beta[window2:])
    return loss, 0.0


def fit(cache: Cache, config: Config) -> Vectors:
    """Train V' with the centre seen through U o_i; returns V' (Eq. 15)."""
    return train("bert-sg", cache, config, centre_loss)


STUDENT = CacheStudent(Config, fit, memory, SIZED_BY)
