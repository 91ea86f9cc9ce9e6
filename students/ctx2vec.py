"""Context-to-Vec (Zheng et al. 2022), training part (Sec. 3.1-3.3).

Centre u_i = W o_i (teacher vector through a linear map); static table u' (what is saved).
- L1, semantic (Eq. 5): ``-log s((sum_j u'_{i+j})^T u_i)`` over the window words;
- L2, contextualised (Eq. 4, 6): ``-log s(V_context^T u_i)``, with the tied map of the reference
  code V_context = W (l o_i + l mean_{k in window, k != i} o_k), l = 0.5;
- L3, negatives (Eq. 7): ``-sum_m log s(-u'_neg_m^T u_i)``;
joint L = e1 L1 + e2 L2 + e3 L3 (Eq. 8; the paper gives no e's: 1 each). Reference code: SGD lr
0.08 decayed linearly, batches of 1000, ws 5, 5 negatives (unigram^0.75), clip 5, 1 epoch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ctx2static.cache import Cache
from ctx2static.options import opt
from ctx2static.students.contextual import Batch, ContextualConfig, projection, train
from ctx2static.vectors import Vectors


@dataclass(frozen=True)
class Config(ContextualConfig):
    """Context-to-Vec reference-code defaults (other fields in :class:`ContextualConfig`)."""

    lr: float = opt(0.08, "SGD learning rate, decayed linearly (reference code).")
    e1: float = opt(1.0, "Weight of L1, the semantic loss (Eq. 8; the paper gives none).")
    e2: float = opt(1.0, "Weight of L2, the contextualised loss.")
    e3: float = opt(1.0, "Weight of L3, the negatives.")
    mix: float = opt(0.5, "l1 = l2 of Eq. 4: the centre's share in V_context.")


def loss(
    u: torch.Tensor,
    ctx: torch.Tensor,
    mask: torch.Tensor,
    v_context: torch.Tensor,
    neg: torch.Tensor,
    e: tuple[float, float, float],
) -> torch.Tensor:
    """Eq. 5-8 per centre: returns e1 L1 + e2 L2 + e3 L3.

    Shapes: u (B, d), ctx (B, W, d) window rows of u', mask (B, W), v_context (B, d), neg (B, k, d).
    """
    s = (ctx * mask[..., None]).sum(1)
    l1 = F.softplus(-(s * u).sum(1)) * mask.any(1)
    l2 = F.softplus(-(v_context * u).sum(1))
    l3 = F.softplus(torch.bmm(neg, u[:, :, None])[:, :, 0]).sum(1)
    return e[0] * l1 + e[1] * l2 + e[2] * l3


def fit(cache: Cache, config: Config) -> Vectors:
    """Train the static table u' with the joint loss of Eq. 8; returns u'."""
    d = cache.shard(0, ["occ_vec"])["occ_vec"].shape[1]
    proj = projection(d, config.dim, config.seed)
    e = (config.e1, config.e2, config.e3)

    def batch_loss(occ_vec: torch.Tensor, b: Batch, ctx: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
        o = occ_vec[b.centre]
        v_context = proj(config.mix * o + (1 - config.mix) * b.window_mean)
        return loss(proj(o), ctx, b.mask, v_context, neg, e)

    return train("ctx2vec", cache, config, proj, batch_loss, with_window_mean=True)
