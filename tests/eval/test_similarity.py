import unicodedata

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


def test_a_large_similarity_file_costs_memory_in_proportion_to_its_pairs(tmp_path):
    """A 50 MB file peaked at 6 GB: the file was held whole and every pair's float64 rows at once."""
    from ctx2static.eval.similarity import read_similarity
    from ctx2static.memory import PeakRss, current_rss, release_freed

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(2000)]
    vecs = Vectors(words, rng.normal(size=(2000, 300)).astype(np.float32))
    n = 150_000  # 2.2 MB of pairs; their rows at once in float64 were 720 MB
    ids = rng.integers(0, 2000, size=(n, 2))
    path = tmp_path / "big.tsv"
    path.write_text("".join(f"w{a}\tw{b}\t{a % 7}.5\n" for a, b in ids))
    release_freed()
    with PeakRss(interval=0.005) as peak:
        before = current_rss()
        score = evaluate_similarity(vecs, read_similarity(path))
    assert score.covered == n
    assert peak.bytes - before < 500 * n  # a pair: its tuple of shared words, scores, ranks (was 4,800+)


def test_a_pair_saved_in_nfd_scores_as_the_nfc_pair(tmp_path):
    from ctx2static.eval.similarity import read_similarity

    vecs = Vectors(["café", "thé", "eau"], np.array([[1, 0], [0.8, 0.6], [0, 1]], dtype=np.float32))
    nfc = "café\tthé\t9\ncafé\teau\t2\nthé\teau\t5\n"
    (tmp_path / "nfc.txt").write_text(nfc, encoding="utf-8")
    (tmp_path / "nfd.txt").write_text(unicodedata.normalize("NFD", nfc), encoding="utf-8")
    assert (tmp_path / "nfd.txt").read_bytes() != (tmp_path / "nfc.txt").read_bytes()
    one, other = (evaluate_similarity(vecs, read_similarity(tmp_path / f)) for f in ("nfc.txt", "nfd.txt"))
    assert (other.score, other.covered) == (one.score, one.covered) == (pytest.approx(100.0), 3)
