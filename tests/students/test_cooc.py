import numpy as np
import pytest

from ctx2static.errors import UserError
from ctx2static.students.cooc import pairs_per_sentence, window_cooccurrence
from ctx2static.text.encoded import EncodedCorpus


def encoded(sentences):
    ids = np.concatenate([np.asarray(s, dtype=np.int32) for s in sentences])
    starts = np.concatenate(([0], np.cumsum([len(s) for s in sentences]))).astype(np.int64)
    return EncodedCorpus(ids, starts, np.zeros(len(sentences), dtype=np.int32))


def brute_force(sentences, vocab_size, window):
    x = np.zeros((vocab_size, vocab_size))
    for s in sentences:
        for p in range(len(s)):
            for q in range(len(s)):
                if 0 < abs(p - q) <= window:
                    x[s[p], s[q]] += 1.0 / abs(p - q)
    return x


def test_hand_computed_counts_symmetric_and_within_sentences():
    # sentence 1: 0 1 2 3 (window 2: 0-1, 1-2, 2-3 at d=1; 0-2, 1-3 at d=2; 0-3 out of window)
    # sentence 2: 3 0     (d=1). Sentence 3: 4 4 (a repeat counts both ways: X_44 = 2).
    x = window_cooccurrence(encoded([[0, 1, 2, 3], [3, 0], [4, 4]]), 5, window=2).toarray()
    want = np.zeros((5, 5))
    for i, j, v in [(0, 1, 1), (1, 2, 1), (2, 3, 1), (0, 2, 0.5), (1, 3, 0.5), (0, 3, 1)]:
        want[i, j] = want[j, i] = v
    want[4, 4] = 2.0
    np.testing.assert_allclose(x, want)
    # the last word of sentence 1 (3) and the first of sentence 2 (3) are adjacent in the stream,
    # but windows stop at sentence ends, so there is no 3-3 count; likewise 0 (end of s2) - 4
    assert x[3, 3] == 0 and x[0, 4] == 0


@pytest.mark.parametrize("chunk_pairs", [1, 7, 1 << 20])
def test_matches_brute_force_for_any_chunking(chunk_pairs):
    rng = np.random.default_rng(0)
    sentences = [rng.integers(0, 12, size=rng.integers(1, 25)).tolist() for _ in range(60)]
    x = window_cooccurrence(encoded(sentences), 12, window=4, chunk_pairs=chunk_pairs)
    assert x.dtype == np.float64 and x.shape == (12, 12)
    np.testing.assert_allclose(x.toarray(), brute_force(sentences, 12, 4), rtol=1e-12)


def test_pairs_per_sentence():
    for length in range(0, 12):
        want = sum(1 for p in range(length) for q in range(p) if p - q <= 3)
        assert pairs_per_sentence(np.array([length]), 3)[0] == want


def test_bad_window():
    with pytest.raises(UserError, match="window=0"):
        window_cooccurrence(encoded([[0, 1]]), 2, window=0)
