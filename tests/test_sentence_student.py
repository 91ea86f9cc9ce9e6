"""The sentence student: its gradient, its fit, and that it recovers rows that generate the targets."""

import numpy as np
import pytest

from ctx2static.cache import Cache
from ctx2static.students import sentence
from ctx2static.students.cache_input import ase_table
from ctx2static.students.registry import fit_cache_student

from .synthetic_cache import write_cache

# three sentences with occurrences (a repeated word, an OOV, an unaligned word) and one without
WORD_IDS = np.array([0, 1, 1, -1, 2, 3, 4, 0, -1], dtype=np.int32)
ALIGNED = np.array([1, 1, 1, 1, 1, 0, 1, 1, 1], dtype=bool)
OFFSETS = np.array([0, 4, 6, 8, 9], dtype=np.int64)


def reference_loss(theta, start, targets, batch, anchor, weights):
    """The module docstring's L, written from the formula in numpy (no shared code with the kernel)."""
    n_words, d = theta.shape[0] - 1, targets.shape[1]
    fit, rows, n_batch = 0.0, set(), 0
    for s in batch:
        span = slice(OFFSETS[s], OFFSETS[s + 1])
        ws = [w for w, a in zip(WORD_IDS[span], ALIGNED[span], strict=True) if w >= 0 and a]
        if not ws:
            continue
        scale = [theta[w, d] if weights else 1.0 for w in ws]
        p = sum(a * theta[w, :d] for a, w in zip(scale, ws, strict=True)) / len(ws)
        r = p + theta[n_words, :d] - targets[s]
        fit += 0.5 * r @ r
        rows |= set(ws)
        n_batch += 1
    pull = sum(((theta[w, :d] - start[w]) ** 2).sum() for w in rows)
    return fit / n_batch + 0.5 * anchor * pull


@pytest.mark.parametrize("weights", [True, False])
def test_gradient_matches_finite_differences(weights):
    rng = np.random.default_rng(0)
    n_words, d = 6, 3
    theta = rng.normal(size=(n_words + 1, d + 1))
    if not weights:
        theta[:, d] = 1.0
    start = rng.normal(size=(n_words, d))
    targets = rng.normal(size=(4, d))
    batch, anchor = np.array([0, 1, 2, 3]), 0.7
    grad = np.zeros_like(theta)
    touched = np.empty(n_words + 1, dtype=np.int64)
    flag = np.zeros(n_words + 1, dtype=bool)
    fit, pull, n_batch, n_rows = sentence.batch_gradient(
        theta, start, WORD_IDS, ALIGNED, OFFSETS, targets, batch, anchor, weights, grad, touched, flag
    )
    assert n_batch == 3  # the sentence without an occurrence is skipped
    assert sorted(touched[:n_rows]) == [0, 1, 2, 4, n_words]  # word 3 is unaligned, word 5 absent
    expected = reference_loss(theta, start, targets, batch, anchor, weights)
    assert fit / n_batch + pull == pytest.approx(expected)
    fd = np.zeros_like(theta)
    for idx in np.ndindex(theta.shape):
        hi, lo = theta.copy(), theta.copy()
        hi[idx] += 1e-6
        lo[idx] -= 1e-6
        fd[idx] = (
            reference_loss(hi, start, targets, batch, anchor, weights)
            - reference_loss(lo, start, targets, batch, anchor, weights)
        ) / 2e-6
    if not weights:
        fd[:, d] = 0.0  # the weights are fixed at 1: no gradient, so Adam leaves them
    np.testing.assert_allclose(grad / n_batch, fd, atol=1e-6)


def _generated(tmp_path, n_sent=1500, n_words=16, d=6, seed=0):
    """Targets that are a known linear function of the words: t_s = mean_i g_w R_w + c (c: the specials)."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(n_words, d)) * rng.uniform(0.3, 2.0, size=(n_words, 1))
    offset = rng.normal(size=d)
    sents = [list(rng.integers(0, n_words, size=rng.integers(3, 9))) for _ in range(n_sent)]
    targets = np.array([truth[s].mean(0) + offset for s in sents])
    words = [f"w{i}" for i in range(n_words)]
    return write_cache(tmp_path / "c", words, sents, 400, targets), truth, sents, targets


def _explained(rows, sents, targets):
    """R^2 of the targets by the sentence means of ``rows`` plus the best constant."""
    pooled = np.array([rows[s].mean(0) for s in sents])
    resid = targets - pooled
    resid -= resid.mean(0)
    return 1 - (resid**2).sum() / ((targets - targets.mean(0)) ** 2).sum()


def test_recovers_the_rows_that_generate_the_targets(tmp_path):
    folder, truth, sents, targets = _generated(tmp_path)
    start = _explained(ase_table(Cache.open(folder)), sents, targets)
    v = fit_cache_student("sentence", folder, {"epochs": "40", "lr": "0.02"}, compose=False)
    rows = np.asarray(v.matrix)
    assert start < 0.8  # ASE smears each word over its sentences' means
    assert _explained(rows, sents, targets) > 0.99
    shift = (rows - truth).mean(0)  # a common shift of the rows is the bias's to take
    np.testing.assert_allclose(rows - shift, truth, atol=0.05 * np.abs(truth).max())
    losses = v.meta["loss_per_epoch"]
    assert losses[-1] < losses[0] < v.meta["start_loss"]


def test_anchor_keeps_rows_near_ase(tmp_path):
    folder, _, _, _ = _generated(tmp_path, n_sent=300)
    ase = ase_table(Cache.open(folder))

    def moved(anchor):
        v = sentence.fit(Cache.open(folder), sentence.Config(epochs=3, lr=0.05, anchor=anchor, weights=False))
        return np.linalg.norm(np.asarray(v.matrix) - ase)

    assert moved(10.0) < 0.5 * moved(0.0)


def test_same_seed_same_rows_other_seed_other_order(tmp_path):
    folder, _, _, _ = _generated(tmp_path, n_sent=300)
    cache = Cache.open(folder)
    a = sentence.fit(cache, sentence.Config(epochs=2, seed=3)).matrix
    b = sentence.fit(cache, sentence.Config(epochs=2, seed=3)).matrix
    c = sentence.fit(cache, sentence.Config(epochs=2, seed=4)).matrix
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
