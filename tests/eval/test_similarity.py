import numpy as np
import pytest

from ctx2static.eval.benchmarks import SimilaritySet
from ctx2static.eval.similarity import evaluate_similarity, pair_cosines, rank_average, spearman
from ctx2static.vectors import Vectors

scipy_stats = pytest.importorskip("scipy.stats")


def test_rank_average_ties_by_hand():
    # sorted: 1 (rank 1), 2, 2 (ranks 2,3 -> 2.5), 5 (rank 4), 7, 7, 7 (ranks 5,6,7 -> 6)
    assert rank_average(np.array([7, 2, 5, 7, 1, 2, 7])).tolist() == [6, 2.5, 4, 6, 1, 2.5, 6]


def test_spearman_by_hand():
    # ranks (1,2,3) vs (1,3,2): sum d^2 = 2 -> rho = 1 - 6*2 / (3*8) = 0.5
    assert spearman(np.array([0.1, 0.2, 0.3]), np.array([10.0, 30.0, 20.0])) == pytest.approx(0.5, abs=1e-15)
    assert np.isnan(spearman(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0])))
    assert np.isnan(spearman(np.array([1.0]), np.array([2.0])))


def test_spearman_matches_scipy_exactly_on_a_saved_vectors_file(tmp_path):
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(30)]
    Vectors(words, rng.normal(size=(30, 16)).astype(np.float32)).save(tmp_path / "v.txt")
    vecs = Vectors.load(tmp_path / "v.txt")
    pairs = [(words[i], words[j]) for i, j in rng.integers(0, 30, size=(60, 2)) if i != j]
    pairs += [pairs[0], pairs[1], (words[0], "oov")]  # duplicate pairs tie in cosine; one OOV pair
    gold = rng.integers(0, 5, size=len(pairs)).astype(float)  # 5 distinct values: many ties
    score = evaluate_similarity(vecs, SimilaritySet("toy", pairs, gold))
    cos, covered = pair_cosines(vecs, pairs)
    assert covered.sum() == len(pairs) - 1 and not covered[-1]
    m = vecs.matrix.astype(np.float64)
    a, b = (np.array([m[vecs.index[p[k]]] for p in pairs[:-1]]) for k in (0, 1))
    np.testing.assert_allclose(cos, (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1))
    expected = scipy_stats.spearmanr(cos, gold[covered]).correlation
    assert abs(score.score / 100 - expected) < 1e-12
    assert (score.covered, score.total) == (len(pairs) - 1, len(pairs))


def test_coverage_with_oov_and_lowercase_lookup():
    vecs = Vectors(["paris", "france", "rome"], np.array([[1, 0], [0.9, 0.1], [0, 1]], dtype=np.float32))
    pairs = [("Paris", "France"), ("paris", "rome"), ("rome", "Italy"), ("london", "uk"), ("France", "rome")]
    gold = np.array([9.0, 3.0, 8.0, 7.0, 1.0])
    score = evaluate_similarity(vecs, SimilaritySet("toy", pairs, gold))
    assert (score.covered, score.total) == (3, 5)
    # covered: cos(paris,france)=.99, cos(paris,rome)=0, cos(france,rome)=.11 vs gold 9, 3, 1 -> rho 0.5
    assert score.score == pytest.approx(50.0)
