import math

import numpy as np
import pytest
from numba import njit

from ctx2static.errors import UserError
from ctx2static.students.sampling import (
    draw_targets,
    draw_word,
    keep_probabilities,
    lcg,
    linear_alpha,
    negative_table,
    reduced_window,
    seed_state,
    subsample,
)
from ctx2static.students.word2vec import Word2VecConfig, chunk_bounds, chunk_order, ns_update


@njit
def _draw_many(cum_table, n, seed):
    state = seed_state(seed, 0, 0)
    out = np.empty(n, dtype=np.int64)
    for k in range(n):
        state = lcg(state)
        out[k] = draw_word(cum_table, state)
    return out


@njit
def _windows(window, n, seed):
    state = seed_state(seed, 0, 0)
    out = np.empty(n, dtype=np.int64)
    for k in range(n):
        state = lcg(state)
        out[k] = reduced_window(window, state)
    return out


@njit
def _kept_counts(ids, keep_prob, reps, seed):
    state = seed_state(seed, 0, 0)
    out = np.empty(ids.shape[0], dtype=np.int32)
    kept = np.zeros(keep_prob.shape[0], dtype=np.int64)
    for _ in range(reps):
        n, state = subsample(ids, 0, ids.shape[0], keep_prob, out, state)
        for k in range(n):
            kept[out[k]] += 1
    return kept


@njit
def _targets(word, cum_table, negative, seed):
    targets = np.empty(negative + 1, dtype=np.int32)
    n, _ = draw_targets(word, cum_table, negative, targets, seed_state(seed, 0, 0))
    return targets[:n]


@pytest.mark.parametrize("exponent", [0.75, 0.5])
def test_negative_table_draws_follow_count_power(exponent):
    counts = np.array([500, 120, 40, 9, 1], dtype=np.int64)
    table = negative_table(counts, exponent)
    want = counts**exponent / (counts**exponent).sum()
    widths = np.diff(np.concatenate([[0], table.astype(np.int64)])) / float(table[-1])
    np.testing.assert_allclose(widths, want, atol=1e-8)
    draws = _draw_many(table, 200_000, 3)
    freq = np.bincount(draws, minlength=len(counts)) / len(draws)
    np.testing.assert_allclose(freq, want, atol=0.004)
    # 0.75 flattens the distribution relative to raw counts, 0.5 even more
    assert freq[0] < counts[0] / counts.sum()


def test_negative_table_rejects_empty_counts():
    with pytest.raises(UserError):
        negative_table(np.zeros(3))


def test_draw_targets_puts_word_first_and_drops_self_draws():
    table = negative_table(np.array([0, 0, 7, 0]))  # every draw is word 2
    np.testing.assert_array_equal(_targets(0, table, 3, 1), [0, 2, 2, 2])
    np.testing.assert_array_equal(_targets(2, table, 3, 1), [2])


def test_keep_probabilities_match_word2vec_formula():
    counts = np.array([1000, 100, 10, 1])
    sample = 1e-2
    t = sample * 1111
    want = [min(1.0, (math.sqrt(c / t) + 1) * t / c) for c in counts]
    np.testing.assert_allclose(keep_probabilities(counts, sample), want, rtol=1e-6)
    assert want[0] == pytest.approx(0.11652, abs=1e-4)  # by hand: (sqrt(90.009)+1)*11.11/1000
    assert want[2] == 1.0
    np.testing.assert_array_equal(keep_probabilities(counts, 0.0), np.ones(4))


def test_subsample_keeps_words_at_their_probability():
    keep = np.array([0.1, 0.5, 1.0], dtype=np.float32)
    ids = np.array([0, 1, 2, 0, 1, 2], dtype=np.int32)
    reps = 20_000
    kept = _kept_counts(ids, keep, reps, 5)
    np.testing.assert_allclose(kept / (2 * reps), keep, atol=0.01)
    assert kept[2] == 2 * reps


def test_reduced_window_is_uniform_in_one_to_window():
    w = _windows(5, 100_000, 7)
    assert w.min() == 1 and w.max() == 5
    np.testing.assert_allclose(np.bincount(w, minlength=6)[1:] / len(w), 0.2, atol=0.006)
    assert set(_windows(1, 100, 1)) == {1}


def test_linear_alpha_decays_linearly_to_min_alpha():
    assert linear_alpha(0.025, 1e-4, 0, 1000) == pytest.approx(0.025)
    assert linear_alpha(0.025, 1e-4, 500, 1000) == pytest.approx((0.025 + 1e-4) / 2)
    assert linear_alpha(0.025, 1e-4, 250, 1000) - linear_alpha(0.025, 1e-4, 500, 1000) == pytest.approx(
        linear_alpha(0.025, 1e-4, 500, 1000) - linear_alpha(0.025, 1e-4, 750, 1000)
    )
    assert linear_alpha(0.025, 1e-4, 1000, 1000) == pytest.approx(1e-4)
    assert linear_alpha(0.025, 1e-4, 5000, 1000) == pytest.approx(1e-4)


def test_chunk_bounds_cover_all_sentences_in_order():
    starts = np.array([0, 3, 10, 11, 30, 31, 32], dtype=np.int64)
    b = chunk_bounds(starts, chunk_words=10)
    assert b[0] == 0 and b[-1] == 6 and np.all(np.diff(b) > 0)
    np.testing.assert_array_equal(b, [0, 2, 4, 6])


@pytest.mark.parametrize(("n", "threads"), [(10, 1), (10, 2), (11, 3), (2, 4)])
def test_chunk_order_interleaves_threads_over_numbas_static_blocks(n, threads):
    order = chunk_order(n, threads)
    assert sorted(order.tolist()) == list(range(n))
    blocks = np.split(order, np.cumsum([len(b) for b in np.array_split(np.arange(n), threads)])[:-1])
    for t, block in enumerate(blocks):  # worker t walks chunks t, t+threads, ... in corpus order
        np.testing.assert_array_equal(block, np.arange(t, n, threads))


def test_seed_states_differ_by_seed_epoch_and_chunk():
    states = {int(seed_state(s, e, c)) for s in (1, 2) for e in (0, 1) for c in (0, 1, 2)}
    assert len(states) == 12


def _ns_loss(h, out, targets):
    """-log s(h.v_t0) - sum_k log s(-h.v_tk) in float64."""
    f = out[targets] @ h
    sign = np.where(np.arange(len(targets)) == 0, 1.0, -1.0)
    return float(np.sum(np.log1p(np.exp(-sign * f))))


def test_ns_update_is_a_gradient_step_on_the_sgns_loss():
    rng = np.random.default_rng(0)
    h = rng.normal(0, 0.5, 6).astype(np.float32)
    out = rng.normal(0, 0.5, (5, 6)).astype(np.float32)
    targets = np.array([1, 3, 4], dtype=np.int32)
    alpha = 0.1
    h64, out64 = h.astype(np.float64), out.astype(np.float64)
    eps = 1e-6
    grad_h = np.array(
        [
            (_ns_loss(h64 + eps * e, out64, targets) - _ns_loss(h64 - eps * e, out64, targets)) / (2 * eps)
            for e in np.eye(6)
        ]
    )
    grad_out = np.zeros_like(out64)
    for r in targets:
        for d in range(6):
            bump = np.zeros_like(out64)
            bump[r, d] = eps
            grad_out[r, d] = (_ns_loss(h64, out64 + bump, targets) - _ns_loss(h64, out64 - bump, targets)) / (
                2 * eps
            )
    grad = np.empty(6, dtype=np.float32)
    syn1 = out.copy()
    loss = ns_update(h, syn1, targets, 3, alpha, grad, True)
    assert loss == pytest.approx(_ns_loss(h64, out64, targets), rel=1e-5)
    np.testing.assert_allclose(grad, -alpha * grad_h, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(syn1 - out, -alpha * grad_out, rtol=1e-4, atol=1e-6)
    assert ns_update(h, out.copy(), targets, 3, alpha, grad, False) == 0.0


def test_config_rejects_bad_values():
    with pytest.raises(UserError, match="--window 0 must be at least 1"):
        Word2VecConfig(window=0)
    with pytest.raises(UserError, match="--min-lr 1.0 must be between 0 and lr"):
        Word2VecConfig(min_lr=1.0)
