import numpy as np
import pytest

from ctx2static.cache import Cache
from ctx2static.students import semglove
from ctx2static.students.registry import fit_cache_student
from ctx2static.students.semglove import PairWeighting, pair_weights

from ..synthetic_cache import write_cache


def test_pair_weights_divide_and_reciprocal_by_hand():
    group = np.array([0, 0, 0, 1, 1])
    score = np.array([2.0, 4.0, 1.0, 3.0, 6.0])
    np.testing.assert_allclose(pair_weights(group, score, PairWeighting.DIVIDE), [0.5, 1, 0.25, 0.5, 1])
    reciprocal = pair_weights(group, score, PairWeighting.RECIPROCAL)
    np.testing.assert_allclose(reciprocal, [1 / 2, 1, 1 / 3, 1 / 2, 1])


def test_attention_cooccurrence_by_hand(tmp_path):
    # sentences: [0 1 2] [1 2]; occurrences 0..4 (global); attention rows (occ, ctx word, weight)
    att = {
        "occ": np.array([0, 0, 1, 3, 4], np.int32),
        "ctx": np.array([1, 2, 0, 2, 1], np.int32),
        "offset": np.array([1, 2, -1, 1, -1], np.int16),
        "weight": np.array([0.8, 0.4, 0.5, 0.9, 0.3], np.float32),
    }
    folder = write_cache(
        tmp_path / "c", ["a", "b", "c"], [[0, 1, 2], [1, 2]], 1, np.zeros((2, 2)), attention=att
    )
    x = semglove.attention_cooccurrence(Cache.open(folder), PairWeighting.DIVIDE).toarray()
    want = np.zeros((3, 3))
    want[0, 1] += 1.0  # occ 0 (a): 0.8/0.8
    want[0, 2] += 0.5  # occ 0 (a): 0.4/0.8
    want[1, 0] += 1.0  # occ 1 (b)
    want[1, 2] += 1.0  # occ 3 (b, second sentence)
    want[2, 1] += 1.0  # occ 4 (c)
    np.testing.assert_allclose(x, want, rtol=1e-6)


def test_lm_cooccurrence_maps_tokens_to_words_and_drops_the_target(tmp_path):
    # 3 occurrences (words 0, 1, 0); top-3 substitute tokens; token 3 is no static word
    ids = np.array([[0, 1, 3], [2, 0, 1], [1, 2, 0]])
    scores = np.array([[5.0, 4.0, 3.0], [-1.0, -2.0, -3.0], [0.0, 0.0, -np.log(2)]])
    folder = write_cache(
        tmp_path / "c", ["a", "b", "c"], [[0, 1, 0]], 4, np.zeros((1, 2)),
        topk=(ids, scores), token_words=np.array([0, 1, 2, -1]),
    )  # fmt: skip
    x = semglove.lm_cooccurrence(Cache.open(folder), PairWeighting.DIVIDE).toarray()
    want = np.zeros((3, 3))
    want[0, 1] += np.exp(-1)  # occ 0: token 0 is the target (dropped), token 1 -> e^{4-5}
    want[1, 2] += 1.0  # occ 1: token 2 top
    want[1, 0] += np.exp(-1)
    want[0, 1] += 1.0  # occ 2: token 1 top (tie), token 2 tie, token 0 = target dropped
    want[0, 2] += 1.0
    np.testing.assert_allclose(x, want, rtol=1e-6)


@pytest.mark.parametrize("cooc", ["window", "attention"])
def test_semglove_learns_topics(tmp_path, cooc):
    rng = np.random.default_rng(0)
    sents = [list(rng.integers(0, 4, size=8) + 4 * (s % 2)) for s in range(400)]
    occ_word = np.concatenate(sents)
    rows = {"occ": [], "ctx": [], "offset": [], "weight": []}
    base = 0
    for s in sents:
        for i in range(len(s)):
            for j in range(len(s)):
                if i != j and abs(i - j) <= 2:
                    rows["occ"].append(base + i)
                    rows["ctx"].append(s[j])
                    rows["offset"].append(j - i)
                    rows["weight"].append(1.0 / abs(i - j))
        base += len(s)
    att = {
        k: np.asarray(v, dtype=t)
        for (k, v), t in zip(rows.items(), [np.int32, np.int32, np.int16, np.float32], strict=True)
    }
    assert base == len(occ_word)
    words = [f"w{i}" for i in range(8)]
    folder = write_cache(tmp_path / "c", words, sents, 100, np.zeros((400, 2)), attention=att)
    v = fit_cache_student(
        "semglove",
        folder,
        {"cooc": cooc, "dim": "8", "epochs": "30", "threads": "1", "abtt": "none"},
    )
    unit = v.unit()
    sims = unit @ unit.T
    same = np.array([[(i < 4) == (j < 4) for j in range(8)] for i in range(8)])
    assert sims[same & ~np.eye(8, dtype=bool)].min() > sims[~same].max()
