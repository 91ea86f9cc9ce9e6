import numpy as np
import pytest

from ctx2static.students import cbow, sgns
from ctx2static.students.registry import fit_text_student
from ctx2static.students.sampling import negative_table, seed_state
from ctx2static.text.corpus import Corpus
from ctx2static.text.encoded import EncodedCorpus
from ctx2static.text.vocab import Vocab, VocabConfig
from ctx2static.vectors import Vectors

EPS = 1e-6


def _loss(h, out, pos, neg):
    """-log s(h.v_pos) - log s(-h.v_neg)."""
    return float(np.log1p(np.exp(-h @ out[pos])) + np.log1p(np.exp(h @ out[neg])))


def _num_grad(fn, x):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        bump = np.zeros_like(x)
        bump[idx] = EPS
        g[idx] = (fn(x + bump) - fn(x - bump)) / (2 * EPS)
    return g


def _tables(rng, v=5, dim=4):
    syn0 = rng.normal(0, 0.5, (v, dim)).astype(np.float32)
    syn1 = rng.normal(0, 0.5, (v, dim)).astype(np.float32)
    return syn0, syn1


def _buffers(dim, negative=1):
    return np.empty((2, dim), np.float32), np.empty(negative + 1, np.int32), seed_state(1, 0, 0)


def test_skipgram_update_matches_finite_difference_gradient():
    rng = np.random.default_rng(1)
    syn0, syn1 = _tables(rng)
    s0, s1 = syn0.copy(), syn1.copy()
    table = negative_table(np.array([0, 0, 0, 0, 3]))  # every negative is word 4
    sent = np.array([0, 1], dtype=np.int32)  # centre word 1 at position 1, context word 0
    alpha = 0.2
    scratch, targets, state = _buffers(4)
    loss, pairs, _ = sgns.sg_centre(sent, 2, 1, 1, s0, s1, table, 1, alpha, scratch, targets, state, True)
    x0, x1 = syn0.astype(np.float64), syn1.astype(np.float64)
    # skip-gram as word2vec: the context word's input vector predicts the centre's output vector
    assert pairs == 1
    assert loss == pytest.approx(_loss(x0[0], x1, 1, 4), rel=1e-5)
    g_h = _num_grad(lambda h: _loss(h, x1, 1, 4), x0[0])
    g_out = _num_grad(lambda o: _loss(x0[0], o, 1, 4), x1)
    np.testing.assert_allclose(s0[0] - syn0[0], -alpha * g_h, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(s1 - syn1, -alpha * g_out, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(s0[1:], syn0[1:])


@pytest.mark.parametrize("mean", [True, False])
def test_cbow_update_matches_finite_difference_gradient(mean):
    rng = np.random.default_rng(2)
    syn0, syn1 = _tables(rng)
    s0, s1 = syn0.copy(), syn1.copy()
    table = negative_table(np.array([0, 0, 0, 0, 3]))
    sent = np.array([0, 1, 2], dtype=np.int32)  # centre word 1, contexts 0 and 2
    alpha = 0.2
    scratch, targets, state = _buffers(4)
    centre = cbow.cbow_mean_centre if mean else cbow.cbow_sum_centre
    loss, pairs, _ = centre(sent, 3, 1, 1, s0, s1, table, 1, alpha, scratch, targets, state, True)
    x0, x1 = syn0.astype(np.float64), syn1.astype(np.float64)
    scale = 0.5 if mean else 1.0

    def on_inputs(x):
        return _loss(scale * (x[0] + x[2]), x1, 1, 4)

    assert pairs == 1
    assert loss == pytest.approx(on_inputs(x0), rel=1e-5)
    g_in = _num_grad(on_inputs, x0)
    g_out = _num_grad(lambda o: _loss(scale * (x0[0] + x0[2]), o, 1, 4), x1)
    # word2vec adds dL/dh to every context row: the true gradient divided by dh/dx = scale
    np.testing.assert_allclose(s0 - syn0, -alpha * g_in / scale, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(s1 - syn1, -alpha * g_out, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(s0[[1, 3, 4]], syn0[[1, 3, 4]])


def _topic_corpus(n_sent=400, length=10, group=8, seed=0):
    """Sentences drawn from one of two disjoint word groups: words 0..7 and 8..15."""
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, 2, n_sent)
    ids = (rng.integers(0, group, (n_sent, length)) + group * topic[:, None]).astype(np.int32).ravel()
    counts = np.bincount(ids, minlength=2 * group)
    order = np.argsort(-counts, kind="stable")  # vocabulary ids by descending count
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    words = [f"{'a' if w < group else 'b'}{w}" for w in order]
    corpus = EncodedCorpus(
        rank[ids].astype(np.int32), np.arange(0, ids.size + 1, length, dtype=np.int64), np.arange(n_sent)
    )
    return corpus, Vocab(words, counts[order])


@pytest.mark.parametrize("module", [sgns, cbow])
def test_words_end_up_near_their_topic(module):
    corpus, vocab = _topic_corpus()
    config = module.Config(dim=16, window=3, sample=0.0, epochs=10, threads=1)
    vec = module.fit(corpus, vocab, config)
    assert vec.words == vocab.words and vec.matrix.shape == (16, 16)
    np.testing.assert_array_equal(vec.counts, vocab.counts)
    unit = vec.unit()
    sims = unit @ unit.T
    same = np.array([[a[0] == b[0] for b in vec.words] for a in vec.words])
    np.fill_diagonal(sims, -np.inf)
    for i, w in enumerate(vec.words):
        top = np.argsort(-sims[i])[:5]
        assert all(same[i, j] for j in top), (w, [vec.words[j] for j in top])
    within = sims[same & np.isfinite(sims)].mean()
    across = sims[~same].mean()
    assert within > across + 0.5


@pytest.mark.parametrize("module", [sgns, cbow])
def test_one_thread_with_a_seed_is_deterministic(module):
    corpus, vocab = _topic_corpus(n_sent=100)
    config = module.Config(dim=8, epochs=2, threads=1, seed=3)
    a = module.fit(corpus, vocab, config).matrix
    b = module.fit(corpus, vocab, config).matrix
    np.testing.assert_array_equal(a, b)
    c = module.fit(corpus, vocab, module.Config(dim=8, epochs=2, threads=1, seed=4)).matrix
    assert not np.array_equal(a, c)


def test_loss_is_tracked_and_falls():
    corpus, vocab = _topic_corpus()
    one = sgns.fit(corpus, vocab, sgns.Config(dim=16, epochs=1, threads=1, compute_loss=True))
    many = sgns.fit(corpus, vocab, sgns.Config(dim=16, epochs=8, threads=1, compute_loss=True))
    assert 0 < many.meta["train"]["loss_per_pair"] < one.meta["train"]["loss_per_pair"]


def test_fit_student_end_to_end(mini_corpus, tmp_path):
    vectors = fit_text_student(
        "cbow",
        Corpus([mini_corpus]),
        VocabConfig(min_count=5),
        {"dim": "12", "epochs": "1"},
    )
    path = vectors.save(tmp_path / "v.txt")
    back = Vectors.load(path)
    assert back.dim == 12 and back.words == vectors.words
    assert back.meta["config"]["lr"] == 0.05 and back.meta["config"]["cbow_mean"] is True
    assert np.all(np.isfinite(back.matrix)) and np.any(back.matrix != 0)
