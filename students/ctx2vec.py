"""Context-to-Vec (Zheng et al. 2022), training part (Sec. 3.1-3.3).

Centre u_i = W o_i (teacher vector through a linear map); static table u' (what is saved).
- L1, semantic (Eq. 5): ``-log s((sum_j u'_{i+j})^T u_i)`` over the window words;
- L2, contextualised (Eq. 4, 6): ``-log s(V_context^T u_i)``, with the tied map of the reference
  code V_context = W (l o_i + l mean_{k in window, k != i} o_k), l = 0.5;
- L3, negatives (Eq. 7): ``-sum_m log s(-u'_neg_m^T u_i)``;
joint L = e1 L1 + e2 L2 + e3 L3 (Eq. 8; the paper gives no e's: 1 each). Reference code: SGD lr
0.08 decayed linearly, batches of 1000, ws 5, 5 negatives (unigram^0.75), clip 5, 1 epoch, no
subsampling; we subsample the occurrences as word2vec does, t = 1e-4 (:class:`ContextualConfig`):
fewer centres, similarity and analogy up (measured: Results page, contextual_subsample; a smaller t
costs MSR analogy). ``sample=0`` is the reference code's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from numba import njit

from ctx2static.cache import Cache
from ctx2static.options import Rule, opt, share_rule
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
    """Context-to-Vec reference-code defaults (other fields in :class:`ContextualConfig`)."""

    lr: float = opt(0.08, "SGD learning rate, decayed linearly (reference code).")
    e1: float = opt(1.0, "Weight of L1, the semantic loss (Eq. 8; the paper gives none).")
    e2: float = opt(1.0, "Weight of L2, the contextualised loss.")
    e3: float = opt(1.0, "Weight of L3, the negatives.")
    mix: float = opt(0.5, "l1 = l2 of Eq. 4: the centre's share in V_context.")

    def rules(self) -> Iterable[Rule]:
        """The shared rules; the loss weights non-negative (a negative one ascends its loss), mix a share."""
        weights = [(name, getattr(self, name) >= 0, "0 or more") for name in ("e1", "e2", "e3")]
        return [*super().rules(), *weights, share_rule("mix", self.mix)]


@njit(fastmath=True)
def centre_loss(
    P: Array, i: int, near: Array, ctx: Array, negs: Array, E: Array, params: Array, du: Array, beta: Array
) -> tuple[float, float]:
    """Eq. 5-8 for the centre u = P[i], ``params`` = (e1, e2, e3, mix): returns (loss, spread).

    The projection is linear, so V_context = W (l o_i + l mean_k o_k) = l u + l mean_k P_k over the
    n window occurrences k (their rows ``near`` of P; mean 0 when n = 0), l = mix, 1 - mix.
    - L1 = softplus(-s), s = sum_j u'_j . u: dL1/du'_j = -s(-s) u, dL1/du = -s(-s) sum_j u'_j;
    - L2 = softplus(-y), y = V_context . u = mix u.u + (1 - mix) mean_k P_k . u:
      dL2/du = -s(-y) (V_context + mix u), dL2/dP_k = -s(-y) (1 - mix) / n u (the spread);
    - L3: :func:`negatives_update`. Writes dL/du into ``du`` and row coefficients into ``beta``.
    """
    e1, e2, e3, mix = params[0], params[1], params[2], params[3]
    u = P[i]
    du[:] = 0.0
    window2 = ctx.shape[0]
    n = 0
    near_dot = 0.0  # mean_k P_k . u
    for j in range(window2):
        beta[j] = 0.0
        if ctx[j] >= 0:
            n += 1
            axpy(1.0, E[ctx[j]], du)  # du = sum_j u'_j for now: each row read once
            near_dot += dot(P[near[j]], u)
    loss = 0.0
    spread = 0.0
    c1 = 0.0
    if n > 0:
        sig, sp = logistic(-dot(du, u))  # L1 of s = (sum_j u'_j) . u
        c1 = -e1 * sig
        loss += e1 * sp
        near_dot /= n
    for d in range(du.shape[0]):
        du[d] *= c1  # dL1/du
    y = mix * dot(u, u) + (1.0 - mix) * near_dot
    sig, sp = logistic(-y)
    c2 = -e2 * sig
    loss += e2 * sp
    axpy(2.0 * mix * c2, u, du)
    if n > 0:
        spread = c2 * (1.0 - mix) / n
        for j in range(window2):
            if ctx[j] >= 0:
                beta[j] = c1
                axpy(spread, P[near[j]], du)
    loss += negatives_update(u, E, negs, e3, du, beta[window2:])
    return loss, spread


def fit(cache: Cache, config: Config) -> Vectors:
    """Train the static table u' with the joint loss of Eq. 8; returns u'."""
    params = (config.e1, config.e2, config.e3, config.mix)
    return train("ctx2vec", cache, config, centre_loss, params, spreads=True)


STUDENT = CacheStudent(Config, fit, memory, SIZED_BY)
