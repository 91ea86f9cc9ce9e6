import numpy as np
import pytest

from ctx2static.cache import Cache
from ctx2static.errors import UserError
from ctx2static.students import x2static
from ctx2static.students.cache_input import Init
from ctx2static.students.registry import fit_cache_student

from ..synthetic_cache import write_cache

WORDS = ["a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3", "oov-ish"]


def _topic_corpus(n_sent=600, dim=16, seed=0):
    """Sentences of 6 words from one of two topics; context = the topic's direction + noise."""
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(2, dim))
    sents, ctx = [], []
    for s in range(n_sent):
        t = s % 2
        sents.append(list(rng.integers(0, 4, size=6) + 4 * t))
        ctx.append(topics[t] + 0.3 * rng.normal(size=dim))
    return sents, np.array(ctx)


def test_ase_is_the_exact_mean_of_occurrence_vectors(tmp_path):
    sents = [[0, 1, -1], [1, 2], [0]]
    occ = np.array([[1, 0], [2, 2], [3, 4], [5, 6], [7, 8]], dtype=np.float32)  # 5 in-vocab occurrences
    folder = write_cache(tmp_path / "c", ["w0", "w1", "w2", "w3"], sents, 2, np.zeros((3, 2)), occ_vec=occ)
    v = fit_cache_student("ase", folder)
    assert v.words == ["w0", "w1", "w2"]  # w3 never occurs
    np.testing.assert_allclose(v["w0"], [(1 + 7) / 2, (0 + 8) / 2])
    np.testing.assert_allclose(v["w1"], [(2 + 3) / 2, (2 + 4) / 2])
    np.testing.assert_allclose(v["w2"], [5, 6])
    assert v.meta["student"] == "ase" and v.meta["teacher"] == "synthetic"


def test_token_and_word_tables(tmp_path):
    tables = {"token_emb": np.eye(3, 4, dtype=np.float32), "word_emb": 2 * np.eye(3, 4, dtype=np.float32)}
    folder = write_cache(
        tmp_path / "c", ["x", "y", "z"], [[0, 1, 2]], 4, np.zeros((1, 4)), vocab_tables=tables
    )
    assert fit_cache_student("token", folder)["y"].tolist() == [0, 1, 0, 0]
    assert fit_cache_student("word", folder)["z"].tolist() == [0, 0, 2, 0]


def test_missing_signal_names_the_extract_flag(tmp_path):
    folder = write_cache(tmp_path / "c", ["x"], [[0]], 4, np.zeros((1, 4)))
    with pytest.raises(UserError, match="needs the cache signal 'occ_vec'.*--vectors"):
        fit_cache_student("bert-sg", folder)
    with pytest.raises(UserError, match="needs the cache signal 'para_ctx'.*--paragraph"):
        fit_cache_student("x2static", folder, {"context": "para"})
    with pytest.raises(UserError, match="trains from a teacher cache; pass --cache"):
        from ctx2static.students.registry import fit_text_student
        from ctx2static.text.corpus import Corpus

        fit_text_student("ase", Corpus([folder / "vocab.tsv"]))


def test_logistic_grad_matches_equation_and_finite_differences():
    rng = np.random.default_rng(1)
    u, c = rng.normal(size=5), rng.normal(size=5)
    for label in (1.0, 0.0):
        grad = np.zeros(5)
        loss = x2static.logistic_grad(u, c, label, grad)
        x = u @ c if label else -(u @ c)
        assert loss == pytest.approx(np.log1p(np.exp(-x)), rel=1e-12)

        def f(uu, label=label):
            return np.log1p(np.exp(-(uu @ c))) if label else np.log1p(np.exp(uu @ c))

        fd = [(f(u + 1e-6 * e) - f(u - 1e-6 * e)) / 2e-6 for e in np.eye(5)]
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-9)


def test_sparse_adam_step_matches_torch_sparse_adam_by_hand():
    U = np.ones((3, 2), np.float32)
    m, v = np.zeros_like(U), np.zeros_like(U)
    grad = np.array([[0, 0], [2.0, -4.0], [0, 0]], np.float32)
    x2static._sparse_adam(U, m, v, grad, np.array([1]), 1, 0.5, 0.1, 0.9, 0.999, 1e-8, 1)
    g = np.array([1.0, -2.0])
    m1, v1 = 0.1 * g, 0.001 * g * g
    step = 0.1 * np.sqrt(0.001) / 0.1
    np.testing.assert_allclose(U[1], 1 - step * m1 / (np.sqrt(v1) + 1e-8), rtol=1e-5)
    assert U[0].tolist() == [1, 1] and U[2].tolist() == [1, 1]  # untouched rows: lazy
    assert not grad.any()


@pytest.mark.parametrize("context", ["sent", "para"])
def test_x2static_learns_topics(tmp_path, context):
    sents, ctx = _topic_corpus()
    folder = write_cache(tmp_path / "c", WORDS, sents, 128, ctx, para_ctx=ctx)
    v = fit_cache_student(
        "x2static",
        folder,
        {"context": context, "sample": "0", "epochs": "3", "lr": "0.01", "abtt": "none", "init": "random"},
    )
    unit = v.unit()
    sims = unit[:8] @ unit[:8].T
    same = np.array([[(i < 4) == (j < 4) for j in range(8)] for i in range(8)])
    off_diag = ~np.eye(8, dtype=bool)
    assert sims[same & off_diag].min() > sims[~same].max()
    assert v.meta["train"]["mean_loss"] < np.log(2) * 11  # below the loss at u = 0 (1 target + 10 negatives)


def test_x2static_is_deterministic(tmp_path):
    sents, ctx = _topic_corpus(n_sent=100)
    folder = write_cache(tmp_path / "c", WORDS, sents, 64, ctx)
    a = x2static.fit(Cache.open(folder), x2static.Config(sample=0, init=Init.RANDOM))
    b = x2static.fit(Cache.open(folder), x2static.Config(sample=0, init=Init.RANDOM))
    np.testing.assert_array_equal(a.matrix, b.matrix)


def test_teacher_init_projects_and_scales(tmp_path):
    from ctx2static.students.cache_input import teacher_init

    rng = np.random.default_rng(0)
    word = rng.normal(size=(6, 5)) * np.array([5, 4, 0.1, 0.1, 0.1])  # 2 strong directions
    tables = {"word_emb": word.astype(np.float32), "token_emb": np.eye(6, 5, dtype=np.float32)}
    folder = write_cache(
        tmp_path / "c",
        [f"w{i}" for i in range(6)],
        [[0, 1, 2, 3, 4, 5]],
        4,
        np.zeros((1, 5)),
        vocab_tables=tables,
    )
    cache = Cache.open(folder)
    assert teacher_init(cache, Init.RANDOM, 2) is None
    t = teacher_init(cache, Init.WORD, 2)
    assert t.shape == (6, 2) and np.linalg.norm(t, axis=1).mean() == pytest.approx(1, rel=1e-5)
    centred = word - word.mean(0)
    got_d = np.linalg.norm(t[:, None] - t[None], axis=2)
    want_d = np.linalg.norm(centred[:, None] - centred[None], axis=2)
    scale = got_d.sum() / want_d.sum()
    np.testing.assert_allclose(got_d, want_d * scale, rtol=0.05, atol=0.05)  # 2 PCs keep the geometry
    with pytest.raises(UserError, match="narrower"):
        teacher_init(cache, Init.TOKEN, 9)


def test_a_start_table_wider_than_the_vocabulary_is_zero_padded(tmp_path):
    from ctx2static.students.cache_input import teacher_init

    word = np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32)
    tables = {"word_emb": word, "token_emb": word}
    cache = Cache.open(
        write_cache(tmp_path / "c", WORDS[:3], [[0, 1, 2]], 4, np.zeros((1, 8)), vocab_tables=tables)
    )
    start = teacher_init(cache, Init.WORD, 5)  # 3 words span 2 directions once centred
    assert start.shape == (3, 5) and np.abs(start[:, 3:]).max() == 0 and np.abs(start[:, :2]).min() > 0


def test_ase_init_averages_occurrences_and_auto_picks_it(tmp_path):
    from ctx2static.students.cache_input import teacher_init

    word = np.arange(12, dtype=np.float32).reshape(3, 4)  # w2 is never seen: falls back to its word row
    occ = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [3, 0, 0, 0], [0, 0, 2, 2]], np.float32)
    sents = [[0, 1, 0], [1]]  # occurrences: w0, w1, w0, w1
    tables = {"word_emb": word, "token_emb": word}
    with_vec = Cache.open(
        write_cache(tmp_path / "a", WORDS[:3], sents, 4, np.zeros((2, 4)), occ, vocab_tables=tables)
    )
    want = np.array([[2, 0, 0, 0], [0, 0.5, 1, 1], [8, 9, 10, 11]])
    want /= np.linalg.norm(want, axis=1).mean()
    np.testing.assert_allclose(teacher_init(with_vec, Init.ASE, 4), want, rtol=1e-6)
    np.testing.assert_allclose(teacher_init(with_vec, Init.AUTO, 4), want, rtol=1e-6)
    # without per-occurrence vectors the per-word sums still give ase (here each occurrence
    # counts as its sentence's context row): w0 = s0, w1 = (s0 + s1) / 2, w2 = its word row
    ctx = np.array([[4, 0, 0, 0], [0, 0, 2, 0]], np.float32)
    no_vec = Cache.open(write_cache(tmp_path / "b", WORDS[:3], sents, 4, ctx, vocab_tables=tables))
    assert "occ_vec" not in no_vec.signals
    want = np.array([[4, 0, 0, 0], [2, 0, 1, 0], [8, 9, 10, 11]], dtype=np.float64)
    want /= np.linalg.norm(want, axis=1).mean()
    np.testing.assert_allclose(teacher_init(no_vec, Init.AUTO, 4), want, rtol=1e-6)


def test_default_abtt_is_applied_to_the_trained_table(tmp_path):
    sents, ctx = _topic_corpus(n_sent=100)
    folder = write_cache(tmp_path / "c", WORDS, sents, 64, ctx)
    raw = fit_cache_student("x2static", folder, {"sample": "0", "abtt": "none", "init": "random"})
    post = fit_cache_student("x2static", folder, {"sample": "0", "init": "random"})
    assert x2static.Config().abtt == 1
    from ctx2static.transforms.postprocess import all_but_the_top

    np.testing.assert_allclose(post.matrix, all_but_the_top(raw.matrix, 1), atol=1e-6)
    assert np.abs(post.matrix.mean(0)).max() < 1e-5


def _with_rogue_dimension(ctx, value=300.0):
    """A causal LM's rogue dimension: one huge, nearly constant coordinate added to every context."""
    rng = np.random.default_rng(5)
    return np.hstack([ctx, value + rng.normal(size=(len(ctx), 1))])


def _topics_separate(v):
    unit = v.unit()
    sims = unit[:8] @ unit[:8].T
    same = np.array([[(i < 4) == (j < 4) for j in range(8)] for i in range(8)])
    return sims[same & ~np.eye(8, dtype=bool)].min() > sims[~same].max()


def test_ase_zscores_a_rogue_dimension_and_recovers_the_topics(tmp_path, caplog):
    from ctx2static.transforms.postprocess import DimensionStats

    sents, ctx = _topic_corpus(n_sent=200)
    folder = write_cache(tmp_path / "c", WORDS, sents, 64, _with_rogue_dimension(ctx))
    raw = fit_cache_student("ase", folder, {"standardize": "off"})
    with caplog.at_level("INFO", logger="ctx2static"):
        auto = fit_cache_student("ase", folder)
    assert "the table is z-scored (standardize=auto" in caplog.text  # the user is told why
    assert not raw.meta["train"]["standardized"] and auto.meta["train"]["standardized"]
    assert auto.meta["train"]["rogue_ratio"] > 1000
    want = DimensionStats.of_rows([raw.matrix]).zscore(raw.matrix)
    np.testing.assert_allclose(auto.matrix, want, atol=1e-5)
    assert np.median(raw.unit()[:8] @ raw.unit()[:8].T) > 0.99  # every word looks alike
    assert _topics_separate(auto)
    clean = fit_cache_student("ase", write_cache(tmp_path / "d", WORDS, sents, 64, ctx))
    assert not clean.meta["train"]["standardized"]  # no rogue dimension: auto keeps the teacher's table


def test_x2static_learns_topics_through_a_rogue_dimension_only_when_zscored(tmp_path):
    sents, ctx = _topic_corpus()
    folder = write_cache(tmp_path / "c", WORDS, sents, 128, _with_rogue_dimension(ctx))
    settings = {"sample": "0", "epochs": "3", "lr": "0.01", "abtt": "none", "init": "random"}
    raw = fit_cache_student("x2static", folder, {**settings, "standardize": "off"})
    auto = fit_cache_student("x2static", folder, settings)
    assert auto.meta["train"]["standardized"] and not raw.meta["train"]["standardized"]
    assert _topics_separate(auto) and not _topics_separate(raw)
    assert auto.meta["train"]["mean_loss"] < np.log(2) * 11 < raw.meta["train"]["mean_loss"]


def test_teacher_init_zscores_before_scaling(tmp_path):
    from ctx2static.students.cache_input import teacher_init
    from ctx2static.transforms.postprocess import DimensionStats

    word = np.array([[1, 100, 0], [3, 102, 2], [5, 101, 1]], np.float32)
    tables = {"word_emb": word, "token_emb": word}
    folder = write_cache(tmp_path / "c", WORDS[:3], [[0, 1, 2]], 4, np.zeros((1, 3)), vocab_tables=tables)
    cache = Cache.open(folder)
    # z-scored with the statistics given (the contexts'), not the table's own
    stats = DimensionStats(np.array([2.0, 90.0, 1.0]), np.array([1.0, 10.0, 0.5]), 1.0)
    z = (word - stats.mean) / stats.std
    np.testing.assert_allclose(
        teacher_init(cache, Init.WORD, 3, zscore=stats), z / np.linalg.norm(z, axis=1).mean(), rtol=1e-5
    )
