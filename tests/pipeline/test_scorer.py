"""The top-k scorer: bf16 candidates proved or redone, its ids and scores those of a float32 top-k."""

import pytest
import torch

from ctx2static.pipeline.scorer import Scorer


@pytest.mark.parametrize("spread", [1.0, 0.1, 1e-3])
def test_scorer_topk_equals_a_float32_topk(spread):
    """bf16 candidates, rescored in float32, give the float32 top-k however close the logits are.

    Spread 1: logits far apart; 0.1: closer (rows that need more candidates than the first round);
    1e-3: all logits of a row within bf16 rounding, so only the float32 product can order them (a
    scorer trusting its bf16 candidates there fails).
    """
    g = torch.Generator().manual_seed(0)
    w = torch.randn(3000, 24, generator=g)  # 3000 = 93 blocks of 32 + 24: the last block is padded
    w = w[:1] + spread * w
    bias = torch.randn(3000, generator=g) * (0 if spread < 0.01 else spread)
    x = torch.randn(700, 24, generator=g) * 3  # more rows than one chunk
    scorer = Scorer.from_weights(w, bias, blocked=True)  # bf16 candidates (by default only where fast)
    scores, ids = scorer.topk(x, 7)
    want_scores, want_ids = (x @ w.T + bias).topk(7, dim=-1)
    assert torch.equal(ids, want_ids)
    torch.testing.assert_close(scores, want_scores, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("blocked", [True, False])
def test_scorer_over_some_tokens_returns_their_ids(blocked):
    g = torch.Generator().manual_seed(2)
    w, bias = torch.randn(4000, 16, generator=g), torch.randn(4000, generator=g)
    x = torch.randn(300, 16, generator=g)
    keep = torch.randperm(4000, generator=g)[:2500].sort().values
    scores, ids = Scorer.from_weights(w, bias, token_ids=keep, blocked=blocked).topk(x, 6)
    logits = torch.full((300, 4000), -torch.inf)
    logits[:, keep] = x @ w[keep].T + bias[keep]
    want_scores, want_ids = logits.topk(6, dim=-1)
    assert torch.equal(ids, want_ids)
    torch.testing.assert_close(scores, want_scores, rtol=1e-5, atol=1e-5)


def test_scorer_small_vocabulary_is_the_float32_topk():
    g = torch.Generator().manual_seed(1)
    w, x = torch.randn(100, 8, generator=g), torch.randn(600, 8, generator=g)
    scorer = Scorer.from_weights(w)
    scores, ids = scorer.topk(x, 5)
    want_scores, want_ids = (x @ w.T).topk(5, dim=-1)
    assert torch.equal(ids, want_ids) and torch.equal(scores, want_scores)
