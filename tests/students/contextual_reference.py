"""The contextual students' losses written in torch as the papers state them (the references the
Numba kernels are checked against with autograd): per centre, from gathered rows."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def bert_sg_loss(u, ctx, mask, neg):
    """Wang et al. 2021 Eq. 13-15: u (B, d), ctx (B, W, d) window rows of V', mask (B, W), neg (B, k, d)."""
    z = torch.bmm(ctx, u[:, :, None])[:, :, 0].masked_fill(~mask, float("-inf"))
    a = torch.softmax(z, dim=1).nan_to_num(0.0)  # a centre without context words scores 0
    v_ctx = torch.bmm(a[:, None, :], ctx)[:, 0]
    pos = F.softplus(-(v_ctx * u).sum(1)) * mask.any(1)
    return pos + F.softplus(torch.bmm(neg, u[:, :, None])[:, :, 0]).sum(1)


def ctx2vec_loss(u, ctx, mask, v_context, neg, e):
    """Zheng et al. 2022 Eq. 5-8: e1 L1 + e2 L2 + e3 L3 per centre."""
    s = (ctx * mask[..., None]).sum(1)
    l1 = F.softplus(-(s * u).sum(1)) * mask.any(1)
    l2 = F.softplus(-(v_context * u).sum(1))
    l3 = F.softplus(torch.bmm(neg, u[:, :, None])[:, :, 0]).sum(1)
    return e[0] * l1 + e[1] * l2 + e[2] * l3


def window_mean(occ, ctx):
    """Mean of the window occurrences' vectors (zeros without any): occ (n, d), ctx (n, W), -1 = none."""
    mask = ctx >= 0
    rows = occ[ctx.clamp(min=0)] * mask[..., None]
    return rows.sum(1) / mask.sum(1).clamp(min=1)[:, None]
