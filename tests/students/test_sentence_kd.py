"""The sentence-kd student: (K1) and (K2) by hand, their gradients against finite differences, the
mapped start, training that learns a known geometry, determinism and resuming from a checkpoint."""

import numpy as np
import pytest

from ctx2static.cache import Cache
from ctx2static.errors import UserError
from ctx2static.students.cache_input import Init, teacher_table
from ctx2static.students.registry import fit_cache_student, student_config
from ctx2static.students.sentence_kd import Config, Loss, Source, batch_loss, train_rows
from ctx2static.vectors import Vectors

from ..synthetic_cache import write_cache


def test_infonce_is_k1_by_hand():
    M = np.array([[1.0, 0.0], [1.0, 1.0]])
    T = np.array([[2.0, 0.0], [0.0, 3.0]])
    tau = 0.5
    c = 1 / np.sqrt(2)  # cos of [1, 1] with either axis
    s = np.array([[1.0, 0.0], [c, c]]) / tau
    by_hand = np.mean([np.log(np.exp(s[i]).sum()) - s[i, i] for i in range(2)])
    assert batch_loss(M, T, Loss.INFONCE, tau)[0] == pytest.approx(by_hand, rel=1e-12)


def test_kl_is_k2_by_hand_and_zero_for_the_teachers_own_geometry():
    rng = np.random.default_rng(0)
    T = rng.normal(size=(3, 4))
    M = rng.normal(size=(3, 4))
    tau = 0.2

    def dist(a):
        u = a / np.linalg.norm(a, axis=1, keepdims=True)
        s = u @ u.T / tau
        out = np.zeros((3, 3))
        for i in range(3):
            j = [k for k in range(3) if k != i]
            e = np.exp(s[i, j])
            out[i, j] = e / e.sum()
        return out

    q, p = dist(T), dist(M)
    off = ~np.eye(3, dtype=bool)
    by_hand = np.sum(q[off] * np.log(q[off] / p[off])) / 3
    assert batch_loss(M, T, Loss.KL, tau)[0] == pytest.approx(by_hand, rel=1e-10)
    value, grad = batch_loss(3.0 * T, T, Loss.KL, tau)  # scale does not matter: cosines
    assert value == pytest.approx(0.0, abs=1e-12) and np.abs(grad).max() < 1e-12


@pytest.mark.parametrize("loss,width", [(Loss.INFONCE, 5), (Loss.KL, 3)])
def test_gradient_matches_finite_differences(loss, width):
    rng = np.random.default_rng(1)
    M, T = rng.normal(size=(6, 5)), rng.normal(size=(6, width))
    _, grad = batch_loss(M, T, loss, 0.3)
    h = 1e-6
    for i, j in [(0, 0), (2, 3), (5, 4), (3, 1)]:
        e = np.zeros_like(M)
        e[i, j] = h
        numeric = (batch_loss(M + e, T, loss, 0.3)[0] - batch_loss(M - e, T, loss, 0.3)[0]) / (2 * h)
        assert grad[i, j] == pytest.approx(numeric, rel=1e-5, abs=1e-9)


def _cache(tmp_path, n_sent=800, seed=0):
    """Targets that are the normalised means of hidden rows; the ase rows are the hidden rows, noisy
    (a few occurrences a word) and through a fixed linear map (the start's affine fit undoes the map,
    not the noise)."""
    rng = np.random.default_rng(seed)
    n_words, dim = 150, 6
    words = [f"w{i}" for i in range(n_words)]
    truth = rng.normal(size=(n_words, dim))
    sents = [list(rng.integers(0, n_words, size=rng.integers(3, 7))) for _ in range(n_sent)]
    means = np.array([truth[s].mean(0) for s in sents])
    emb = means / np.linalg.norm(means, axis=1, keepdims=True)
    warp = rng.normal(size=(dim, dim))
    occ = np.concatenate([(truth[s] + 1.5 * rng.normal(size=(len(s), dim))) @ warp for s in sents])
    sent_ctx = np.zeros((n_sent, dim))
    folder = write_cache(tmp_path / "c", words, sents, 128, sent_ctx, occ_vec=occ, sent_emb=emb)
    return folder, sents, emb


def _geometry(vectors, sents, emb):
    """How well the student's sentence means keep the teacher's: the correlation of the two pairwise
    cosine matrices, and how often a sentence's nearest teacher embedding is its own."""
    m = np.array([vectors.matrix[s].mean(0) for s in sents])
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    pairs = np.triu_indices(len(m), 1)
    corr = np.corrcoef((m @ m.T)[pairs], (emb @ emb.T)[pairs])[0, 1]
    return corr, float(np.mean(np.argmax(m @ emb.T, axis=1) == np.arange(len(m))))


@pytest.mark.parametrize("loss", ["infonce", "kl"])
def test_training_learns_the_teachers_sentence_geometry(tmp_path, loss):
    folder, sents, emb = _cache(tmp_path)
    start = fit_cache_student("sentence-kd", folder, {"epochs": 1, "lr": 1e-9}, compose=False)
    opts = {"epochs": 20, "lr": 0.01, "batch_sentences": 32, "loss": loss}
    trained = fit_cache_student("sentence-kd", folder, opts, compose=False)
    losses = trained.meta["train"]["loss_per_epoch"]
    assert losses[-1] < 0.3 * losses[0]
    (corr0, hit0), (corr, hit) = _geometry(start, sents, emb), _geometry(trained, sents, emb)
    assert corr0 < 0.85 and hit0 < 0.4  # the mapped ase start: noisy rows
    assert corr > 0.95 and hit > 0.9


def test_the_same_seed_gives_the_same_rows_and_a_checkpoint_resumes_exactly(tmp_path):
    folder, *_ = _cache(tmp_path, n_sent=300)
    opts = {"lr": 0.01, "batch_sentences": 32, "loss": "kl"}
    whole = fit_cache_student("sentence-kd", folder, {**opts, "epochs": 3}, compose=False)
    again = fit_cache_student("sentence-kd", folder, {**opts, "epochs": 3}, compose=False)
    np.testing.assert_array_equal(whole.matrix, again.matrix)
    ck = str(tmp_path / "kd.ckpt.npz")
    first = fit_cache_student("sentence-kd", folder, {**opts, "epochs": 1, "checkpoint": ck}, compose=False)
    assert not np.array_equal(first.matrix, whole.matrix)
    resumed = fit_cache_student("sentence-kd", folder, {**opts, "epochs": 3, "checkpoint": ck}, compose=False)
    np.testing.assert_array_equal(resumed.matrix, whole.matrix)
    assert resumed.meta["train"]["loss_per_epoch"] == whole.meta["train"]["loss_per_epoch"]
    with pytest.raises(UserError, match="checkpoint is from another run \\(options lr differ\\)"):
        fit_cache_student(
            "sentence-kd", folder, {**opts, "lr": 0.02, "epochs": 4, "checkpoint": ck}, compose=False
        )


def test_a_column_map_moves_rows_and_nothing_else(tmp_path):
    folder, *_ = _cache(tmp_path, n_sent=300)
    cache = Cache.open(folder)
    ase = teacher_table(cache, Init.ASE)
    config = Config(epochs=2, lr=0.01, batch_sentences=32)
    own, _ = train_rows([Source(cache)], ase, config)
    perm = np.random.default_rng(3).permutation(len(ase))  # the cache's word i is row perm[i]
    rows = np.empty_like(ase)
    rows[perm] = ase
    mapped, _ = train_rows([Source(cache, perm)], rows, config)
    np.testing.assert_allclose(mapped[perm], own, rtol=1e-5, atol=1e-6)


def test_two_caches_train_one_table_over_both_corpora(tmp_path):
    """Halves of one corpus in two caches, the second with its vocabulary in reverse order: the
    table learns the geometry of every sentence, as one cache of the whole corpus does."""
    folder, sents, emb = _cache(tmp_path, n_sent=800)
    whole = Cache.open(folder)
    n = len(whole.vocab.words)
    occ = np.concatenate([whole.shard(i, ["occ_vec"])["occ_vec"] for i in range(whole.n_shards)])
    cut = sum(len(s) for s in sents[:400])
    words = list(whole.vocab.words)
    first = write_cache(
        tmp_path / "a", words, sents[:400], 128, np.zeros((400, 6)), occ[:cut], sent_emb=emb[:400]
    )
    back = [[n - 1 - w for w in s] for s in sents[400:]]
    second = write_cache(
        tmp_path / "b", words[::-1], back, 128, np.zeros((400, 6)), occ[cut:], sent_emb=emb[400:]
    )
    sources = [Source(Cache.open(first)), Source(Cache.open(second), np.arange(n)[::-1].copy())]
    config = Config(epochs=20, lr=0.01, batch_sentences=32)
    R, train = train_rows(sources, teacher_table(whole, Init.ASE), config)
    assert train["loss_per_epoch"][-1] < 0.3 * train["loss_per_epoch"][0]
    corr, hit = _geometry(Vectors(words, R, whole.vocab.counts, {}), sents, emb)
    assert corr > 0.95 and hit > 0.9
    only_first, _ = train_rows(sources[:1], teacher_table(whole, Init.ASE), config)
    _, hit_both = _geometry(Vectors(words, R, whole.vocab.counts, {}), sents[400:], emb[400:])
    _, hit_one = _geometry(Vectors(words, only_first, whole.vocab.counts, {}), sents[400:], emb[400:])
    assert hit_one < hit_both - 0.05  # the second half's sentences are what the second cache adds


def test_a_cache_without_sentence_embeddings_names_the_extract_flag(tmp_path):
    rng = np.random.default_rng(0)
    folder = write_cache(tmp_path / "c", ["a", "b"], [[0, 1], [1, 0]], 8, rng.normal(size=(2, 3)))
    with pytest.raises(UserError, match="sentence.embedding"):
        fit_cache_student("sentence-kd", folder, compose=False)


def test_options_are_checked():
    with pytest.raises(UserError, match="temperature"):
        student_config("sentence-kd", {"temperature": 0})
    with pytest.raises(UserError, match="batch_sentences"):
        student_config("sentence-kd", {"batch_sentences": 1})


def test_a_cache_of_one_sentence_a_shard_is_one_line_not_untrained_rows(tmp_path):
    rng = np.random.default_rng(0)
    words, sents = ["a", "b", "c"], [[0, 1, 2]]
    emb = rng.normal(size=(1, 3))
    folder = write_cache(
        tmp_path / "c", words, sents, 8, np.zeros((1, 3)), occ_vec=rng.normal(size=(3, 3)), sent_emb=emb
    )
    with pytest.raises(
        UserError, match=r"no shard holds two sentences .*; extract a corpus of more sentences"
    ):
        fit_cache_student("sentence-kd", folder, compose=False)
