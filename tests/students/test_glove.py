import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from ctx2static.errors import UserError
from ctx2static.students.cooc import window_cooccurrence
from ctx2static.students.glove import Config, GloveState, fit, init_state, train_glove, weighting
from ctx2static.students.registry import fit_text_student
from ctx2static.text.corpus import Corpus
from ctx2static.text.encoded import EncodedCorpus
from ctx2static.text.vocab import Vocab, VocabConfig


def weighted_cost(state: GloveState, cooc: sp.spmatrix, config: Config) -> float:
    """GloVe's J (students/glove.py docstring) at the current parameters, in numpy: the reference."""
    x = sp.coo_matrix(cooc)
    keep = x.data > 0
    i, j, v = x.row[keep], x.col[keep], x.data[keep]
    diff = np.einsum("nd,nd->n", state.W[i], state.W_ctx[j]) + state.b[i] + state.b_ctx[j] - np.log(v)
    return float(0.5 * np.sum(weighting(v, config.xmax, config.alpha) * diff**2))


def topic_corpus(n_sentences=300, seed=0):
    """Two disjoint topics of 6 words; each sentence draws 8 words from one topic."""
    rng = np.random.default_rng(seed)
    sentences = [rng.integers(0, 6, size=8) + 6 * (k % 2) for k in range(n_sentences)]
    ids = np.concatenate(sentences).astype(np.int32)
    starts = np.arange(0, len(ids) + 1, 8, dtype=np.int64)
    vocab = Vocab([f"w{i}" for i in range(12)], np.bincount(ids, minlength=12))
    return EncodedCorpus(ids, starts, np.zeros(n_sentences, dtype=np.int32)), vocab


def test_weighting_values():
    f = weighting(np.array([0.0, 1.0, 5.0, 10.0, 200.0]), xmax=10.0, alpha=0.75)
    np.testing.assert_allclose(f, [0.0, 0.1**0.75, 0.5**0.75, 1.0, 1.0])
    assert weighting(np.array([25.0]), xmax=100.0, alpha=0.5)[0] == pytest.approx(0.5)


@pytest.mark.parametrize("value", [3.0, 40.0])  # below xmax (f < 1) and above (f = 1)
def test_first_adagrad_step_is_lr_times_finite_difference_gradient(value):
    cfg = Config(dim=4, epochs=1, threads=1, lr=0.05, xmax=10.0)
    x = sp.csr_matrix(([value], ([0], [2])), shape=(3, 3))
    before = init_state(3, cfg)
    after = train_glove(x, cfg, progress=False)
    # accumulators start at 1, so the first step is exactly -lr * gradient
    step = (before.params - after.params) / cfg.lr
    grad = np.zeros_like(before.params)
    eps = 1e-6
    for idx in np.ndindex(before.params.shape):
        plus, minus = init_state(3, cfg), init_state(3, cfg)
        plus.params[idx] += eps
        minus.params[idx] -= eps
        grad[idx] = (weighted_cost(plus, x, cfg) - weighted_cost(minus, x, cfg)) / (2 * eps)
    assert np.abs(grad).max() > 1e-3
    np.testing.assert_allclose(step, grad, atol=1e-8)
    np.testing.assert_allclose(after.gradsq - 1.0, (cfg.lr * grad) ** 2, atol=1e-12)
    assert after.costs == [pytest.approx(weighted_cost(before, x, cfg))]


def test_loss_decreases_hogwild():
    corpus, vocab = topic_corpus()
    x = window_cooccurrence(corpus, len(vocab), window=3)
    cfg = Config(dim=8, epochs=8, threads=2)
    state = train_glove(x, cfg, progress=False)
    assert len(state.costs) == 8
    assert all(b < a for a, b in zip(state.costs, state.costs[1:], strict=False))
    assert weighted_cost(state, x, cfg) < 0.5 * weighted_cost(init_state(len(vocab), cfg), x, cfg)


def test_neighbours_stay_within_topic():
    corpus, vocab = topic_corpus()
    vectors = fit(corpus, vocab, Config(dim=10, window=3, epochs=30, threads=1))
    assert vectors.words == vocab.words and vectors.dim == 10
    for i, word in enumerate(vocab.words):
        top = [int(w[1:]) for w, _ in vectors.most_similar(word, topn=3)]
        assert all(j // 6 == i // 6 for j in top), (word, top)


def test_resume_continues_exactly(tmp_path):
    corpus, vocab = topic_corpus(100)
    x = window_cooccurrence(corpus, len(vocab), window=3)
    straight = train_glove(x, Config(dim=6, epochs=4, threads=1, seed=7), progress=False)
    ckpt = str(tmp_path / "glove.ckpt")
    cfg = Config(dim=6, epochs=2, threads=1, seed=7, checkpoint=ckpt, checkpoint_every=1)
    half = train_glove(x, cfg, progress=False)
    assert not np.array_equal(half.params, straight.params)
    resumed = train_glove(x, dataclasses.replace(cfg, epochs=4), progress=False)
    assert resumed.epoch == 4 and len(resumed.seconds) == 2  # only epochs 3 and 4 ran
    np.testing.assert_array_equal(resumed.params, straight.params)
    np.testing.assert_array_equal(resumed.gradsq, straight.gradsq)
    assert resumed.costs == straight.costs


def test_resume_refuses_another_run(tmp_path):
    corpus, vocab = topic_corpus(50)
    x = window_cooccurrence(corpus, len(vocab), window=3)
    cfg = Config(dim=6, epochs=1, threads=1, checkpoint=str(tmp_path / "c"), checkpoint_every=1)
    train_glove(x, cfg, progress=False)
    with pytest.raises(UserError, match="options lr differ"):
        train_glove(x, dataclasses.replace(cfg, lr=0.1), progress=False)
    with pytest.raises(UserError, match="co-occurrence matrix differs"):
        train_glove(x * 2, cfg, progress=False)
    (tmp_path / "c").write_bytes(b"not a checkpoint")
    with pytest.raises(UserError, match="not a readable GloVe checkpoint"):
        train_glove(x, cfg, progress=False)


def test_bad_matrices_and_options():
    with pytest.raises(UserError, match="negative entries"):
        train_glove(sp.csr_matrix(np.array([[0.0, -1.0], [1.0, 0.0]])), Config(), progress=False)
    with pytest.raises(UserError, match="square"):
        train_glove(sp.csr_matrix(np.ones((2, 3))), Config(), progress=False)
    with pytest.raises(UserError, match="empty"):
        train_glove(sp.csr_matrix((3, 3)), Config(), progress=False)
    with pytest.raises(UserError, match="checkpoint=PATH"):
        train_glove(sp.csr_matrix(np.ones((2, 2))), Config(checkpoint_every=1), progress=False)


def test_fit_through_registry(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("the cat sat on the mat .\nthe dog sat on the log .\n\na cat and a dog .\n")
    vectors = fit_text_student("glove", Corpus([p]), VocabConfig(min_count=1), {"dim": "5", "epochs": "3"})
    assert "cat" in vectors and vectors.dim == 5 and np.isfinite(vectors.matrix).all()
    assert vectors.meta["student"] == "glove" and len(vectors.meta["train"]["loss_per_epoch"]) == 3
    assert vectors.meta["config"]["window"] == 10
