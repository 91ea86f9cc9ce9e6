"""bench/probes/words_split.py: the PCA that projects a concatenation finds the data's main axes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .loading import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "probes" / "words_split.py"


def test_pca_map_keeps_the_axes_of_largest_variance_and_centres():
    rng = np.random.default_rng(0)
    # variance 25 along (1, 1, 0)/sqrt 2, 1 along z, 0.01 along (1, -1, 0)/sqrt 2; offset 5
    a = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
    b = np.array([1.0, -1.0, 0.0]) / np.sqrt(2)
    z = np.array([0.0, 0.0, 1.0])
    coef = rng.standard_normal((4000, 3)) * [5.0, 1.0, 0.1]
    fit = 5.0 + coef[:, :1] * a + coef[:, 1:2] * z + coef[:, 2:] * b
    mean, axes = load_script(SCRIPT).pca_map(fit, 2)
    assert axes.shape == (3, 2)
    np.testing.assert_allclose(mean, 5.0, atol=0.2)
    assert abs(axes[:, 0] @ a) > 0.999
    assert abs(axes[:, 1] @ z) > 0.999
    projected = (fit - mean) @ axes
    np.testing.assert_allclose(projected.var(0), [25.0, 1.0], rtol=0.1)


def test_a_weight_below_one_on_a_noisy_input_scores_higher_than_the_plain_concat():
    """The weighted rows are each unit table scaled before the concat, as ``combine --weights`` does."""
    from ctx2static.eval.benchmarks import SimilaritySet

    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(60)]
    signal = rng.standard_normal((60, 8))
    signal /= np.linalg.norm(signal, axis=1, keepdims=True)
    noise = rng.standard_normal((60, 8))
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    pairs = [(words[i], words[j]) for i in range(60) for j in range(i + 1, 60, 7)]
    gold = np.array([signal[int(a[1:])] @ signal[int(b[1:])] for a, b in pairs])
    halves = {"dev": [SimilaritySet("toy", pairs, gold)], "report": [SimilaritySet("toy", pairs, gold)]}
    rows = dict(
        load_script(SCRIPT).combined(("s", "n"), {"s": signal, "n": noise}, words, halves, [0.25, 2.0])
    )
    plain, low, high = (
        rows[f"s + n (concat{w})"]["dev"][-1] for w in ("", ", weights 1:0.25", ", weights 1:2")
    )
    assert low > plain > high
    assert rows["s + n (rotated mean)"]["dev"][-1] < low
