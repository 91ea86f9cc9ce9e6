"""The sentence student: (S1)'s value by hand, (S2)'s solve against a dense solve, recovery on a cache."""

import numpy as np
import pytest
import scipy.sparse as sp

from ctx2static.errors import UserError
from ctx2static.students.registry import fit_cache_student
from ctx2static.students.sentence import objective, sentence_design, solve

from ..synthetic_cache import write_cache


def test_design_rows_are_word_counts_over_the_aligned_in_vocabulary_words():
    word_ids = np.array([0, 0, 1, -1, 2, -1, 1], dtype=np.int32)
    aligned = np.array([1, 1, 1, 1, 0, 1, 1], dtype=bool)
    offsets = np.array([0, 4, 5, 6, 7])
    X = sentence_design(word_ids, aligned, offsets, 3).toarray()
    np.testing.assert_allclose(X, [[2 / 3, 1 / 3, 0], [0, 0, 0], [0, 0, 0], [0, 1, 0]])


def _problem(seed=0, n_sent=40, n_words=12, dim=5):
    rng = np.random.default_rng(seed)
    dense = rng.random((n_sent, n_words)) * (rng.random((n_sent, n_words)) < 0.3)
    X = sp.csr_matrix(dense / np.maximum(dense.sum(1, keepdims=True), 1e-12))
    return X, rng.normal(size=(n_sent, dim)), rng.normal(size=(n_words, dim))


def test_objective_is_equation_s1_computed_from_the_targets():
    X, T, R0 = _problem()
    R = R0 + 0.1
    by_hand = 0.5 * sum(np.sum((X[s].toarray() @ R - T[s]) ** 2) for s in range(X.shape[0]))
    by_hand += 0.5 * 0.3 * np.sum((R - R0) ** 2)
    assert objective([X], X.T @ T, float(np.sum(T**2)), R, R0, 0.3) == pytest.approx(by_hand, rel=1e-10)
    halves = [X[:17], X[17:]]  # a block of rows per shard: the same value
    assert objective(halves, X.T @ T, float(np.sum(T**2)), R, R0, 0.3) == pytest.approx(by_hand, rel=1e-10)


def test_solve_matches_a_dense_solve_of_the_normal_equations_and_zeroes_the_gradient():
    X, T, R0 = _problem(seed=1)
    ridge = 0.05
    rhs = X.T @ T + ridge * R0
    R, iterations, residual = solve([X[:9], X[9:30], X[30:]], rhs, R0, ridge, 500, 1e-10)
    dense = X.toarray()
    want = np.linalg.solve(dense.T @ dense + ridge * np.eye(X.shape[1]), rhs)
    np.testing.assert_allclose(R, want, atol=1e-8)
    assert residual <= 1e-10 and 0 < iterations <= 500

    def f(M):
        return objective([X], X.T @ T, float(np.sum(T**2)), M, R0, ridge)

    for i, j in [(0, 0), (3, 2), (11, 4)]:  # finite differences of (S1) vanish at the solve
        e = np.zeros_like(R)
        e[i, j] = 1e-5
        assert (f(R + e) - f(R - e)) / 2e-5 == pytest.approx(0.0, abs=1e-6)


def test_solve_stops_at_the_iteration_limit_and_says_how_far_it_got():
    X, T, R0 = _problem(seed=2)
    _, iterations, residual = solve([X], X.T @ T + 1e-4 * R0, R0, 1e-4, 2, 1e-12)
    assert iterations == 2 and residual > 1e-12


def _cache(tmp_path, n_sent=400, dim=6, seed=0):
    """Sentence vectors that are exactly the mean of hidden word rows; ase rows are noise around them."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(10)]
    truth = rng.normal(size=(10, dim))
    sents = [list(rng.integers(0, 10, size=rng.integers(3, 8))) for _ in range(n_sent)]
    sent_ctx = np.array([truth[s].mean(0) for s in sents])
    occ = np.concatenate([truth[s] + rng.normal(size=(len(s), dim)) for s in sents])
    return write_cache(tmp_path / "c", words, sents, 64, sent_ctx, occ_vec=occ), truth, sents, sent_ctx


def test_fit_recovers_the_rows_whose_means_are_the_sentence_vectors(tmp_path):
    folder, truth, sents, sent_ctx = _cache(tmp_path)
    fitted = fit_cache_student("sentence", folder, {"ridge": 1e-6}, compose=False)
    ase = fit_cache_student("ase", folder, compose=False)
    rows = np.array([fitted[f"w{i}"] for i in range(10)])
    start = np.array([ase[f"w{i}"] for i in range(10)])
    assert np.abs(rows - truth).max() < 0.01 < np.abs(start - truth).max()  # float16 targets
    pooled = np.array([rows[s].mean(0) for s in sents])
    np.testing.assert_allclose(pooled, sent_ctx, atol=0.01)
    assert fitted.meta["train"]["objective"] < 1e-4 < fitted.meta["train"]["objective_start"]
    assert fitted.meta["train"]["sentences"] == len(sents) and fitted.meta["train"]["standardized"] is False


def test_a_large_ridge_keeps_the_ase_rows(tmp_path):
    folder, *_ = _cache(tmp_path)
    fitted = fit_cache_student("sentence", folder, {"ridge": 1e6}, compose=False)
    ase = fit_cache_student("ase", folder, compose=False)
    np.testing.assert_allclose(fitted.matrix, ase.matrix, atol=1e-3)


def test_the_ridge_must_be_positive():
    from ctx2static.students.registry import student_config

    with pytest.raises(UserError, match="ridge"):
        student_config("sentence", {"ridge": 0})


def test_a_rogue_dimension_is_z_scored_in_the_targets_and_the_start(tmp_path):
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(10)]
    sents = [list(rng.integers(0, 10, size=5)) for _ in range(300)]
    ctx = rng.normal(size=(300, 4))
    ctx[:, 0] = ctx[:, 0] * 30 + 500  # over 1,000x the median dimension's energy: auto z-scores
    folder = write_cache(tmp_path / "c", words, sents, 64, ctx)
    on = fit_cache_student("sentence", folder, compose=False)
    off = fit_cache_student("sentence", folder, {"standardize": "off"}, compose=False)
    assert on.meta["train"]["standardized"] is True and off.meta["train"]["standardized"] is False
    assert on.meta["train"]["rogue_ratio"] > 1000
    assert abs(on.matrix[:, 0].mean()) < 1.0 < 100 < abs(off.matrix[:, 0].mean())
