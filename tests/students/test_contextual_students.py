import numpy as np
import pytest
import torch

from ctx2static.cache import Cache
from ctx2static.students import bert_sg, contextual, ctx2vec
from ctx2static.students.cache_input import Init
from ctx2static.students.registry import fit_cache_student

from ..synthetic_cache import write_cache


def _sig(x):
    return 1 / (1 + np.exp(-x))


def test_window_occurrences_skip_oov_and_stay_in_sentence():
    word_ids = np.array([3, -1, 4, 5, 6, 7], np.int64)  # sentence 0: 3 -1 4 5 | sentence 1: 6 7
    aligned = np.array([1, 1, 1, 0, 1, 1], bool)  # 5 is cut by the teacher
    occ_word, ctx = contextual.window_occurrences(word_ids, aligned, np.array([0, 4, 6]), 1)
    assert occ_word.tolist() == [3, 4, 6, 7]
    assert ctx.tolist() == [[1, -1], [0, -1], [3, -1], [2, -1]]


def test_negatives_never_the_positive():
    from ctx2static.students.sampling import negative_table

    negs = np.empty(50, np.int64)
    contextual.draw_negatives(negative_table(np.array([100, 1, 1])), 0, negs, np.uint64(7))
    assert (negs != 0).all()  # never the positive


def _kernel_loss(module, u, ctx, mask, neg, near=None, params=()):
    """The student's centre update on one centre: u, the window words' rows ctx (mask), negatives neg."""
    table = np.concatenate([ctx[0], neg[0]])
    W, k = ctx.shape[1], neg.shape[1]
    ctx_word = np.where(mask[0], np.arange(W), -1)
    order = np.argsort(~mask[0], kind="stable")  # present window slots first, as window_occurrences
    P = np.concatenate([u, np.zeros((W, u.shape[1])) if near is None else near])
    near = np.where(mask[0], np.arange(1, W + 1), -1)
    loss, _ = module.centre_loss(
        P,
        0,
        near[order],
        ctx_word[order],
        np.arange(W, W + k),
        table,
        np.asarray(params, float),
        np.zeros(u.shape[1]),
        np.zeros(W + k),
    )
    return loss


def test_bert_sg_loss_matches_eq_13_to_15_by_hand():
    rng = np.random.default_rng(0)
    u, ctx, neg = rng.normal(size=(1, 4)), rng.normal(size=(1, 3, 4)), rng.normal(size=(1, 2, 4))
    mask = np.array([[True, True, False]])
    z = ctx[0, :2] @ u[0]
    a = np.exp(z) / np.exp(z).sum()
    v = a @ ctx[0, :2]
    want = -np.log(_sig(v @ u[0])) - np.log(_sig(-(neg[0] @ u[0]))).sum()
    assert _kernel_loss(bert_sg, u, ctx, mask, neg) == pytest.approx(want, rel=1e-10)


def test_ctx2vec_loss_matches_eq_5_to_8_by_hand():
    rng = np.random.default_rng(1)
    u, ctx, near, neg = (
        rng.normal(size=(1, 4)),
        rng.normal(size=(1, 3, 4)),
        rng.normal(size=(3, 4)),  # projections of the window occurrences
        rng.normal(size=(1, 2, 4)),
    )
    mask = np.array([[True, False, True]])
    vc = 0.3 * u + 0.7 * (near[0] + near[2]) / 2  # Eq. 4 with l1 = mix = 0.3
    l1 = -np.log(_sig((ctx[0, 0] + ctx[0, 2]) @ u[0]))
    l2 = -np.log(_sig(vc[0] @ u[0]))
    l3 = -np.log(_sig(-(neg[0] @ u[0]))).sum()
    got = _kernel_loss(ctx2vec, u, ctx, mask, neg, near, (0.5, 2.0, 3.0, 0.3))
    assert got == pytest.approx(0.5 * l1 + 2 * l2 + 3 * l3, rel=1e-10)


def _topic_cache(tmp_path, n_sent=300, dim=12):
    rng = np.random.default_rng(0)
    topics = rng.normal(size=(2, dim))
    sents = [list(rng.integers(0, 4, size=8) + 4 * (s % 2)) for s in range(n_sent)]
    occ = np.concatenate([topics[np.array(s) // 4] + 0.5 * rng.normal(size=(8, dim)) for s in sents])
    words = [f"w{i}" for i in range(8)]
    return write_cache(tmp_path / "c", words, sents, 64, np.zeros((n_sent, dim)), occ_vec=occ)


@pytest.mark.parametrize("student", ["bert-sg", "ctx2vec"])
@pytest.mark.parametrize("threads", ["1", "2"])
def test_contextual_students_learn_topics(tmp_path, student, threads):
    folder = _topic_cache(tmp_path)
    v = fit_cache_student(
        student,
        folder,
        {
            "dim": "10",
            "epochs": "3",
            "lr": "0.002",
            "threads": threads,
            "abtt": "none",
            "init": "random",
            "sample": "0",
        },  # 8 words: word2vec's subsampling would drop nearly every occurrence
    )
    unit = v.unit()
    sims = unit @ unit.T
    same = np.array([[(i < 4) == (j < 4) for j in range(8)] for i in range(8)])
    assert sims[same & ~np.eye(8, dtype=bool)].min() > sims[~same].max()


def test_scattered_update_equals_sgd_on_a_dense_table(tmp_path):
    """One step of train()'s gather + scatter update equals autograd SGD on a dense table."""
    from ctx2static.students.sampling import negative_table, seed_state

    from .contextual_reference import bert_sg_loss

    folder = _topic_cache(tmp_path, n_sent=2)  # 16 occurrences: one batch
    cache = Cache.open(folder)
    cfg = bert_sg.Config(dim=5, lr=0.1, min_lr=0.1, clip=1e9, seed=3, init=Init.RANDOM, sample=0)
    w0 = torch.from_numpy(contextual.init_projection(12, 5, cfg.seed))
    v = contextual.train("t", cache, cfg, bert_sg.centre_loss)

    shard = cache.shard(0)
    occ = torch.from_numpy(shard["occ_vec"].astype(np.float32))
    occ_word, ctx = contextual.window_occurrences(
        shard["word_ids"], shard["word_aligned"], shard["sent_offsets"], 5
    )
    negs = np.empty((len(occ_word), cfg.negative), np.int64)
    for o, w in enumerate(occ_word):  # each centre's negatives from its own generator state
        contextual.draw_negatives(
            negative_table(cache.vocab.counts), w, negs[o], np.uint64(seed_state(cfg.seed, 0, o))
        )
    table = torch.nn.Parameter(torch.from_numpy(contextual.init_table(8, 5, cfg.seed)))
    ctx_t = torch.from_numpy(ctx)
    mask = ctx_t >= 0
    ctx_word = torch.where(mask, torch.from_numpy(occ_word)[ctx_t.clamp(min=0)], 0)
    u = occ @ w0.T
    bert_sg_loss(u, table[ctx_word], mask, table[torch.from_numpy(negs)]).sum().backward()
    want = (table - 0.1 * table.grad).detach().numpy()
    np.testing.assert_allclose(v.matrix, want, rtol=1e-5, atol=1e-7)
