"""The contextual students' Numba centre updates and SGD step against autograd and finite differences."""

import numpy as np
import pytest
import torch

from ctx2static.students import bert_sg, contextual, ctx2vec
from ctx2static.students.sampling import keep_probabilities, negative_table, seed_state

from .contextual_reference import bert_sg_loss, ctx2vec_loss, window_mean

PARAMS = np.array([0.7, 1.3, 0.9, 0.4])  # ctx2vec's e1, e2, e3, mix: unlike values catch a swapped one


def _centre_case(seed, n_ctx):
    """A centre at row 2 of P (7 rows, d 4), windows of 4 slots (n_ctx present), 3 negatives, 6 words."""
    rng = np.random.default_rng(seed)
    P, table = rng.normal(size=(7, 4)), rng.normal(size=(6, 4))
    ctx_occ = np.full(4, -1)
    ctx_occ[:n_ctx] = [10, 11, 13, 14][:n_ctx]  # occurrence numbers; e0 = 10 puts them at rows 0,1,3,4
    ctx_word = np.full(4, -1)
    ctx_word[:n_ctx] = [1, 4, 1, 5][:n_ctx]  # word 1 twice: its gradient must add up
    return P, table, ctx_occ, ctx_word, np.array([0, 3, 4])


def _run_kernel(module, P, table, ctx_occ, ctx_word, negs, params=PARAMS):
    du, beta = np.zeros(4), np.zeros(7)
    near = np.where(ctx_occ >= 0, ctx_occ - 10, -1)  # their rows in P
    loss, spread = module.centre_loss(P, 2, near, ctx_word, negs, table, params, du, beta)
    return loss, spread, du, beta


def _reference(module, P, table, ctx_occ, ctx_word, negs):
    """Loss and gradients in P and the table by autograd of the torch formulas."""
    Pt = torch.tensor(P, requires_grad=True)
    Et = torch.tensor(table, requires_grad=True)
    mask = torch.tensor(ctx_word >= 0)[None]
    ctx = Et[torch.tensor(ctx_word).clamp(min=0)][None]
    neg = Et[torch.tensor(negs)][None]
    u = Pt[2:3]
    if module is bert_sg:
        loss = bert_sg_loss(u, ctx, mask, neg)
    else:
        mean = window_mean(Pt, torch.tensor(np.where(ctx_occ >= 0, ctx_occ - 10, -1))[None])
        v_context = PARAMS[3] * u + (1 - PARAMS[3]) * mean
        loss = ctx2vec_loss(u, ctx, mask, v_context, neg, PARAMS[:3])
    loss.sum().backward()
    return float(loss[0].detach()), Pt.grad.numpy(), Et.grad.numpy()


@pytest.mark.parametrize("module", [bert_sg, ctx2vec])
@pytest.mark.parametrize("n_ctx", [4, 2, 1, 0])
def test_centre_update_matches_autograd(module, n_ctx):
    P, table, ctx_occ, ctx_word, negs = _centre_case(n_ctx, n_ctx)
    loss, spread, du, beta = _run_kernel(module, P, table, ctx_occ, ctx_word, negs)
    want_loss, grad_P, grad_E = _reference(module, P, table, ctx_occ, ctx_word, negs)
    assert loss == pytest.approx(want_loss, rel=1e-10)
    np.testing.assert_allclose(du, grad_P[2], rtol=1e-9, atol=1e-12)
    # every row gradient is beta * u: scatter the coefficients and compare the whole table's gradient
    got_E = np.zeros_like(table)
    for w, b in zip(np.concatenate([ctx_word, negs]), beta, strict=True):
        if w >= 0:
            got_E[w] += b * P[2]
    np.testing.assert_allclose(got_E, grad_E, rtol=1e-9, atol=1e-12)
    # the neighbours' projections get spread * u (Context-to-Vec's window mean), the others nothing
    rows = ctx_occ[ctx_occ >= 0] - 10
    want_spread = np.zeros_like(P)
    want_spread[rows] = spread * P[2]
    others = np.delete(np.arange(7), 2)
    np.testing.assert_allclose(want_spread[others], grad_P[others], rtol=1e-9, atol=1e-12)
    if module is bert_sg or n_ctx == 0:
        assert spread == 0.0


@pytest.mark.parametrize("module", [bert_sg, ctx2vec])
def test_centre_update_gradient_by_finite_differences(module):
    P, table, ctx_occ, ctx_word, negs = _centre_case(7, 3)
    _, _, du, _ = _run_kernel(module, P, table, ctx_occ, ctx_word, negs)
    h = 1e-6
    for d in range(4):
        hi, lo = P.copy(), P.copy()
        hi[2, d] += h
        lo[2, d] -= h
        fd = (
            _run_kernel(module, hi, table, ctx_occ, ctx_word, negs)[0]
            - _run_kernel(module, lo, table, ctx_occ, ctx_word, negs)[0]
        ) / (2 * h)
        assert du[d] == pytest.approx(fd, rel=1e-5, abs=1e-8)


def test_negatives_update_by_hand():
    u, table = np.array([1.0, -2.0]), np.array([[0.5, 0.25], [-1.0, 1.0]])
    du, beta = np.zeros(2), np.zeros(2)
    loss = contextual.negatives_update(u, table, np.array([1, 0]), 2.0, du, beta)
    y = np.array([-3.0, 0.0])  # v_1 . u, v_0 . u
    sig = 1 / (1 + np.exp(-y))
    assert loss == pytest.approx(2 * np.log1p(np.exp(y)).sum())
    np.testing.assert_allclose(beta, 2 * sig)
    np.testing.assert_allclose(du, 2 * (sig[0] * table[1] + sig[1] * table[0]))


def _shard(rng, d=6):
    """Three sentences of 6 occurrences over 5 words, window 2; float16 vectors as the cache stores them."""
    word_ids = rng.integers(0, 5, size=18)
    occ_word, ctx = contextual.window_occurrences(word_ids, np.ones(18, bool), np.array([0, 6, 12, 18]), 2)
    occ = rng.normal(size=(18, d)).astype(np.float16)
    return contextual.ShardWindows(
        occ, occ_word, ctx, contextual.window_words(occ_word, ctx), 100, np.arange(18), 18
    )


def test_window_words():
    ctx = np.array([[1, 2, -1], [-1, -1, -1], [0, -1, -1]])
    got = contextual.window_words(np.array([7, 8, 9]), ctx)
    assert got.tolist() == [[8, 9, -1], [-1, -1, -1], [7, -1, -1]]


@pytest.mark.parametrize("module", [bert_sg, ctx2vec])
@pytest.mark.parametrize("clip", [1e9, 0.05])
def test_step_equals_autograd_sgd_on_dense_tables(module, clip):
    """One step on centres 4..11 (neighbours outside them): E and U move as SGD on the summed loss."""
    rng = np.random.default_rng(3)
    data = _shard(rng)
    table = rng.normal(size=(5, 3)).astype(np.float32)
    proj = contextual.init_projection(6, 3, seed=1)
    params, spreads = (PARAMS, True) if module is ctx2vec else ((), False)
    E = torch.tensor(table, dtype=torch.float64, requires_grad=True)
    U = torch.tensor(proj, dtype=torch.float64, requires_grad=True)
    cum = negative_table(np.array([5, 4, 3, 2, 1]))
    params = np.asarray(params, np.float32)
    step = contextual.Step(module.centre_loss, params, spreads, table, proj, cum, clip, 8, 2, 2, seed=4)
    buf = step.buffers()
    lr = 0.1
    got_loss = step(data, 4, 12, lr, 1, buf)
    negs = buf.negs[:8]
    for i, o in enumerate(range(4, 12)):  # each centre's own stream: the same whatever the batch
        want = np.empty(2, np.int64)
        contextual.draw_negatives(cum, data.occ_word[o], want, np.uint64(seed_state(4, 1, 100 + o)))
        assert negs[i].tolist() == want.tolist() and data.occ_word[o] not in want

    b = slice(4, 12)
    occ = torch.from_numpy(data.occ_vec).double()
    ctx = torch.from_numpy(data.ctx[b])
    mask = ctx >= 0
    rows = E[torch.from_numpy(data.ctx_word[b]).clamp(min=0)]
    neg = E[torch.from_numpy(negs)]
    u = occ[b] @ U.T
    if module is bert_sg:
        loss = bert_sg_loss(u, rows, mask, neg)
    else:  # the paper's form: the projection of the mixed vector (the kernel uses linearity)
        v_context = (PARAMS[3] * occ[b] + (1 - PARAMS[3]) * window_mean(occ, ctx)) @ U.T
        loss = ctx2vec_loss(u, rows, mask, v_context, neg, PARAMS[:3])
    loss.sum().backward()
    coef = min(1.0, clip / (float(U.grad.norm()) + 1e-6))
    assert coef < 1.0 or clip > 1e8  # the small clip must bite
    assert got_loss == pytest.approx(float(loss.sum().detach()), rel=1e-5)
    np.testing.assert_allclose(step.table, (E - lr * E.grad).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(step.proj, (U - lr * coef * U.grad).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_scatter_rows_by_hand():
    P = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    table = np.zeros((4, 2), np.float32)
    words = np.array([[2, -1], [2, 0]])  # word 2 in both windows: both updates land
    negs = np.array([[3], [1]])
    beta = np.array([[0.5, 9.0, 1.0], [2.0, 3.0, -1.0]], np.float32)  # 9.0 sits in an empty slot
    contextual.scatter_rows(P, table, words, negs, beta, 0.1)
    want = np.zeros((4, 2))
    want[2] = -0.1 * (0.5 * P[0] + 2.0 * P[1])
    want[0] = -0.1 * 3.0 * P[1]
    want[3] = -0.1 * 1.0 * P[0]
    want[1] = -0.1 * -1.0 * P[1]
    np.testing.assert_allclose(table, want, rtol=1e-6)


@pytest.mark.parametrize("clip", [100.0, 2.5])
def test_clipped_sgd_by_hand(clip):
    proj = np.ones((2, 2), np.float32)
    grad = np.array([[3.0, 0.0], [0.0, 4.0]], np.float32)  # norm 5
    contextual.clipped_sgd(proj, grad, 0.1, clip)
    scale = min(1.0, clip / (5.0 + 1e-6))
    np.testing.assert_allclose(proj, 1.0 - 0.1 * scale * grad, rtol=1e-6)


@pytest.mark.parametrize("sample", [0.0, 0.05])
@pytest.mark.parametrize("module", [bert_sg, ctx2vec])
def test_one_thread_train_is_the_serial_loop_of_steps(tmp_path, module, sample):
    """threads=1: shards in order, batches in order, the rate from each batch's corpus position."""
    from ctx2static.cache import Cache
    from ctx2static.students.cache_input import Init
    from ctx2static.students.sampling import linear_alpha

    from ..synthetic_cache import write_cache

    rng = np.random.default_rng(5)
    sents = [list(rng.integers(0, 6, size=7)) for _ in range(80)]  # 2 shards of 64 + 16 sentences
    occ = rng.normal(size=(560, 8))
    cache = Cache.open(
        write_cache(tmp_path / "c", [f"w{i}" for i in range(6)], sents, 64, np.zeros((80, 8)), occ_vec=occ)
    )
    cfg = module.Config(
        dim=4, batch=100, epochs=2, threads=1, init=Init.RANDOM, lr=0.05, seed=2, sample=sample
    )
    params, spreads = ((cfg.e1, cfg.e2, cfg.e3, cfg.mix), True) if module is ctx2vec else ((), False)
    got = contextual.train("t", cache, cfg, module.centre_loss, params, spreads)
    keep = keep_probabilities(cache.vocab.counts, sample) if sample else None

    table = contextual.init_table(6, 4, cfg.seed)
    step = contextual.Step(
        module.centre_loss,
        np.asarray(params, np.float32),
        spreads,
        table,
        contextual.init_projection(8, 4, cfg.seed),
        negative_table(cache.vocab.counts),
        cfg.clip,
        cfg.batch,
        cfg.window,
        cfg.negative,
        cfg.seed,
    )
    buf, total, centres = step.buffers(), 560 * 2, 0
    for epoch in range(2):
        first = 0
        for shard in cache.shards(["occ_vec"]):
            data = contextual.ShardWindows.read(shard, cfg.window, first, keep, (cfg.seed, epoch))
            for b0 in range(0, len(data.occ_word), cfg.batch):
                done = int(data.rows[b0]) if b0 else 0  # the rate decays by corpus occurrences, kept or not
                lr = linear_alpha(cfg.lr, cfg.min_lr, epoch * 560 + first + done, total)
                step(data, b0, min(b0 + cfg.batch, len(data.occ_word)), lr, epoch, buf)
            first += len(shard["occ_vec"])
            centres += len(data.occ_word)
    np.testing.assert_array_equal(got.matrix, table)
    assert got.meta["train"]["centres"] == centres
    assert (centres == total) == (sample == 0)


def test_subsampling_keeps_each_word_at_its_rate_and_windows_close_over_the_dropped():
    rng = np.random.default_rng(0)
    n = 60_000
    ids = rng.integers(0, 3, n)
    ids[::7] = -1  # unknown words: never occurrences
    aligned = np.ones(n, bool)
    aligned[3::11] = False  # cut by the teacher: never occurrences
    keep_prob = np.array([1.0, 0.5, 0.1], np.float32)
    occ = (ids >= 0) & aligned
    kept, rows = contextual.subsample_occurrences(ids, aligned, keep_prob, (1, 0, 0))
    assert not kept[~occ].any()
    assert (np.flatnonzero(occ)[rows] == np.flatnonzero(kept)).all()  # rows number the occurrences
    for w, p in enumerate(keep_prob):
        share = kept[ids == w].sum() / occ[ids == w].sum()
        assert abs(share - p) < 4 * np.sqrt(p * (1 - p) / occ[ids == w].sum()) + 1e-9
    again, _ = contextual.subsample_occurrences(ids, aligned, keep_prob, (1, 0, 0))
    other, _ = contextual.subsample_occurrences(ids, aligned, keep_prob, (1, 1, 0))
    assert (again == kept).all() and (other != kept).any()  # fixed per (seed, epoch), redrawn per epoch
    shifted, _ = contextual.subsample_occurrences(ids[7:], aligned[7:], keep_prob, (1, 0, occ[:7].sum()))
    assert (shifted == kept[7:]).all()  # a draw belongs to the occurrence, not to where a shard starts

    # windows run over the kept occurrences only (word2vec drops subsampled words before windowing)
    occ_word, ctx = contextual.window_occurrences(ids[:40], kept[:40], np.array([0, 40]), 2)
    assert occ_word.tolist() == ids[:40][kept[:40]].tolist()
    m = len(occ_word)
    assert ctx[1].tolist() == [0, 2, 3, -1] and ctx[m - 1].tolist() == [m - 3, m - 2, -1, -1]


def test_widen_casts_every_float16_as_numpy_does():
    half = np.arange(1 << 16, dtype=np.uint16).view(np.float16).reshape(256, 256)  # nan, inf, subnormals
    out = np.full(half.shape, 7.0, np.float32)
    contextual.widen(half, out)
    assert np.array_equal(out.view(np.uint32), half.astype(np.float32).view(np.uint32))
    single = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    got = np.empty_like(single)
    contextual.widen(single, got)
    assert np.array_equal(got, single)
