"""BERT+Skip-gram (Wang et al. 2021, "Using Dynamic Embeddings to Improve Static Embeddings").

Centre: u_i = U o_i (Eq. 10), o_i the teacher's vector of the centre occurrence. Context: the
static output table V' (what is saved). Attention over the 2ws window words (Eq. 13-14):
a_j = softmax_j(u_i . v'_j), v'_ctx = sum_j a_j v'_j. Loss (Eq. 15):
``-log s(v'_ctx . u_i) - sum_m log s(-v'_neg_m . u_i)``, negatives from unigram^0.75.
Defaults: d_emb 300, ws 5, k 5, SGD lr 0.025 decayed linearly, clip 5, no subsampling.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ctx2static.cache import Cache
from ctx2static.students.contextual import Batch, ContextualConfig, projection, train
from ctx2static.vectors import Vectors


@dataclass(frozen=True)
class Config(ContextualConfig):
    """Wang et al. 2021 defaults (see :class:`ContextualConfig`)."""


def loss(u: torch.Tensor, ctx: torch.Tensor, mask: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
    """Eq. 13-15 per centre: u (B, d), ctx (B, W, d) window rows of V', mask (B, W), neg (B, k, d)."""
    z = torch.bmm(ctx, u[:, :, None])[:, :, 0].masked_fill(~mask, float("-inf"))
    a = torch.softmax(z, dim=1).nan_to_num(0.0)  # a centre without context words scores 0
    v_ctx = torch.bmm(a[:, None, :], ctx)[:, 0]
    pos = F.softplus(-(v_ctx * u).sum(1)) * mask.any(1)
    return pos + F.softplus(torch.bmm(neg, u[:, :, None])[:, :, 0]).sum(1)


def fit(cache: Cache, config: Config) -> Vectors:
    """Train V' with the centre seen through U o_i; returns V' (Eq. 15)."""
    d = cache.shard(0, ["occ_vec"])["occ_vec"].shape[1]
    proj = projection(d, config.dim, config.seed)

    def batch_loss(occ_vec: torch.Tensor, b: Batch, ctx: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
        return loss(proj(occ_vec[b.centre]), ctx, b.mask, neg)

    return train("bert-sg", cache, config, proj, batch_loss)
