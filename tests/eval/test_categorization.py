import numpy as np
import pytest

from ctx2static.eval.benchmarks import CategorizationSet
from ctx2static.eval.categorization import evaluate_categorization, item_vector, purity, ward_clusters
from ctx2static.vectors import Vectors


def test_purity_by_hand():
    gold = ["a", "a", "a", "b", "b", "c"]
    # cluster 1 = {a, a, b} -> 2; cluster 2 = {a, b} -> 1; cluster 3 = {c} -> 1: (2 + 1 + 1) / 6
    assert purity(gold, [1, 1, 2, 1, 2, 3]) == pytest.approx(4 / 6)
    assert purity(gold, [7, 7, 7, 8, 8, 9]) == 1.0
    assert purity(gold, [1] * 6) == pytest.approx(3 / 6)


def test_ward_recovers_separated_directions_whatever_the_norm():
    rng = np.random.default_rng(0)
    centres = np.eye(3) * 5
    x = np.concatenate([centres[k] + rng.normal(scale=0.3, size=(4, 3)) for k in range(3)])
    x *= rng.uniform(0.1, 10, size=(12, 1))  # norms vary wildly; clustering is on unit vectors
    clusters = ward_clusters(x, 3)
    assert len(set(clusters.tolist())) == 3
    assert [len(set(clusters[k * 4 : k * 4 + 4].tolist())) for k in range(3)] == [1, 1, 1]


def _vecs():
    words = ["dog", "cat", "lion", "car", "bus", "truck", "red", "wine"]
    m = np.array(
        [[1, 0, 0], [0.9, 0.1, 0], [1, 0, 0.1], [0, 1, 0], [0.1, 1, 0], [0, 1, 0.1], [0, 0, 1], [0, 0.2, 1]],
        dtype=np.float32,
    )
    return Vectors(words, m)


def test_multiword_items_and_coverage():
    vecs = _vecs()
    np.testing.assert_allclose(item_vector(vecs, "red wine"), [0, 0.1, 1])
    assert item_vector(vecs, "red zebra") is None and item_vector(vecs, "zebra") is None
    np.testing.assert_allclose(item_vector(vecs, "Dog"), [1, 0, 0])
    bench = CategorizationSet(
        "toy",
        ["dog", "Cat", "lion", "zebra", "car", "bus", "truck", "red wine", "white wine"],
        ["animal"] * 4 + ["vehicle"] * 3 + ["drink"] * 2,
    )
    score = evaluate_categorization(vecs, bench)
    assert (score.covered, score.total) == (7, 9)
    assert score.score == pytest.approx(100.0)
    assert score.metric == "purity (Ward)"


def test_wrong_labels_lower_purity():
    vecs = _vecs()
    bench = CategorizationSet("toy", ["dog", "cat", "car", "bus"], ["x", "y", "x", "y"])
    # two clusters {dog, cat} and {car, bus}, each half x half y
    assert evaluate_categorization(vecs, bench).score == pytest.approx(50.0)
