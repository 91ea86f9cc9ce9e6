"""Attract-Repel (Mrksic et al. 2017) and post-specialisation: costs by hand, gradients by finite
differences, a toy vocabulary where the answer is known, the CLI and study paths."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from ctx2static.composer import Composer
from ctx2static.errors import UserError
from ctx2static.retrofit.attract_repel import (
    ATTRACT,
    REPEL,
    AttractRepel,
    Constraints,
    _unit,
    batch_cost,
    build_constraints,
    expand_through_synonyms,
    hardest_negatives,
    mix_negatives,
    row_gradient,
    unordered_pairs,
)
from ctx2static.retrofit.config import Method, RetrofitConfig
from ctx2static.retrofit.lexicon import read_lexicon
from ctx2static.retrofit.propagate import fit_map, propagate
from ctx2static.retrofit.solver import retrofit_vectors
from ctx2static.study.loader import load_study
from ctx2static.vectors import Vectors

AR = Method.ATTRACT_REPEL

# Two attract pairs (a, b), (c, d) on the unit circle; slots are [a, c, b, d] (lefts, then rights).
A, B, C, D = (1.0, 0.0), (0.8, 0.6), (0.0, 1.0), (0.6, 0.8)
X4 = np.array([A, C, B, D])
IDS4 = np.array([0, 2, 1, 3])


def test_hardest_negatives_by_hand():
    # similarities: a.b .8, c.d .8, a.c 0, a.d .6, b.c .6, b.d .96
    neg, valid = hardest_negatives(X4, IDS4, ATTRACT)  # closest word outside the pair
    assert valid.all() and list(IDS4[neg]) == [3, 1, 3, 1]  # a->d, c->b, b->d, d->b
    neg, valid = hardest_negatives(X4, IDS4, REPEL)  # farthest word outside the pair
    assert list(IDS4[neg]) == [2, 0, 2, 0]  # a->c, c->a, b->c, d->a


def test_hardest_negative_skips_other_occurrences_of_the_word_and_its_partner():
    # pairs (0,1), (0,2), (3,4): word 0 appears twice; its closest other slot is itself
    x = _unit(np.array([[1, 0], [0, 1], [1, 0.1], [1, 0.01], [-1, 0], [1, 0.02]], float))[0]
    ids = np.array([0, 0, 3, 1, 2, 4])
    neg, valid = hardest_negatives(x, ids, ATTRACT)
    assert valid.all()
    for k, n in enumerate(neg):
        partner = ids[(k + 3) % 6]
        assert ids[n] not in (ids[k], partner)
    # a batch of one pair has no negative
    assert not hardest_negatives(X4[[0, 2]], np.array([0, 1]), ATTRACT)[1].any()


def test_attract_and_repel_cost_by_hand():
    neg, valid = hardest_negatives(X4, IDS4, ATTRACT)
    # a: tau(.6 + .6 - .8) = .4, c: tau(.6 + .6 - .8) = .4, b: tau(.6 + .96 - .8) = .76, d: .76
    cost, _ = batch_cost(X4, X4, neg, valid, ATTRACT, 0.6, 1e-9)
    assert cost == pytest.approx(2.32)
    neg, valid = hardest_negatives(X4, IDS4, REPEL)
    # a: tau(0 + .8 - 0) = .8, c: .8, b: tau(.8 - .6) = .2, d: tau(.8 - .6) = .2
    cost, _ = batch_cost(X4, X4, neg, valid, REPEL, 0.0, 1e-9)
    assert cost == pytest.approx(2.0)
    # the regulariser: lambda * sum over the slots of ||x - x0||^2 (each of the 4 slots off by (0, 0.1))
    x0 = X4 + np.array([0.0, 0.1])
    cost_reg, _ = batch_cost(X4, x0, neg, valid, REPEL, 0.0, 0.5)
    assert cost_reg == pytest.approx(2.0 + 0.5 * 4 * 0.01)


def _cost_of_rows(w, ids, x0, neg, valid, sign, margin, lam):
    x, _ = _unit(w[ids])
    return batch_cost(x, x0[ids], neg, valid, sign, margin, lam)[0]


@pytest.mark.parametrize("sign,margin", [(ATTRACT, 0.6), (REPEL, 0.1)])
def test_row_gradient_matches_finite_differences(sign, margin):
    rng = np.random.default_rng(5)
    w = rng.normal(size=(6, 5)) * rng.uniform(0.5, 2, size=(6, 1))  # rows not at unit length
    x0 = _unit(rng.normal(size=(6, 5)))[0]
    pairs = np.array([[0, 1], [0, 2], [3, 4], [5, 2]])  # words 0 and 2 in two pairs each
    ids = np.concatenate([pairs[:, 0], pairs[:, 1]])
    x, _ = _unit(w[ids])
    neg, valid = hardest_negatives(x, ids, sign)
    neg = mix_negatives(neg, 0.5, np.random.default_rng(1))
    cost, grad = batch_cost(x, x0[ids], neg, valid, sign, margin, 0.3)
    assert cost > 0
    rows, g = row_gradient(w, ids, grad)
    assert list(rows) == [0, 1, 2, 3, 4, 5]
    h = 1e-6
    numeric = np.zeros_like(w)
    for i in range(w.shape[0]):
        for k in range(w.shape[1]):
            e = np.zeros_like(w)
            e[i, k] = h
            up = _cost_of_rows(w + e, ids, x0, neg, valid, sign, margin, 0.3)
            down = _cost_of_rows(w - e, ids, x0, neg, valid, sign, margin, 0.3)
            numeric[i, k] = (up - down) / (2 * h)
    np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-7)


def test_mixed_negatives_come_from_other_pairs():
    rng = np.random.default_rng(0)
    hard = np.arange(10)[::-1].copy()
    assert np.array_equal(mix_negatives(hard, 0.0, rng), hard)
    mixed = mix_negatives(hard, 1.0, rng)
    assert np.all(mixed % 5 != np.arange(10) % 5)  # never a slot of the same pair
    share = np.mean([np.mean(mix_negatives(hard, 0.5, rng) != hard) for _ in range(400)])
    assert 0.35 < share < 0.5  # replaced with probability 1/2 (a random slot may equal the hard one)


def test_pairs_unordered_and_antonym_expansion():
    adj = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 0, 0]], np.float32))
    assert unordered_pairs(adj).tolist() == [[0, 1], [1, 2]]
    # synonyms 0~1, 3~4; antonyms 0-3 -> also 1-3, 0-4 (one synonym step either side), not 1-4
    syn = sp.csr_matrix(([1, 1], ([0, 3], [1, 4])), shape=(5, 5))
    ant = sp.csr_matrix(([1], ([0], [3])), shape=(5, 5))
    assert unordered_pairs(expand_through_synonyms(ant, syn)).tolist() == [[0, 3], [0, 4], [1, 3]]


def test_constraints_drop_synonyms_that_are_antonyms(tmp_path):
    (tmp_path / "syn.txt").write_text("hot warm cold\nwarm hot\n")
    (tmp_path / "ant.txt").write_text("hot cold\ncold hot\n")
    words = ["hot", "warm", "cold", "tepid"]
    cons, info = build_constraints(words, [tmp_path / "syn.txt"], [tmp_path / "ant.txt"])
    assert cons.attract.tolist() == [[0, 1]] and cons.repel.tolist() == [[0, 2]]
    assert list(cons.words) == [0, 1, 2] and info["edges"] == 3 + 2


def _toy(tmp_path):
    words = ["happy", "glad", "sad", "big", "large", "small", "fast", "quick", "slow", "table", "tree"]
    rng = np.random.default_rng(0)
    vectors = Vectors(words, rng.normal(size=(len(words), 6)), None, {"student": "toy"})
    syn = tmp_path / "syn.txt"
    syn.write_text("happy glad\nbig large\nfast quick\n")
    ant = tmp_path / "ant.txt"
    ant.write_text("happy sad\nglad sad\nbig small\nlarge small\nfast slow\nquick slow\n")
    return vectors, syn, ant


def _cos(v, a, b):
    return float(v[a] @ v[b] / np.linalg.norm(v[a]) / np.linalg.norm(v[b]))


def test_toy_vocabulary_synonyms_closer_antonyms_farther_loners_untouched(tmp_path):
    v, syn, ant = _toy(tmp_path)
    cfg = RetrofitConfig(method=AR, epochs=50, batch_size=3, normalize=False)
    out, trace = retrofit_vectors(v, [syn], cfg, [ant])
    for a, b in [("happy", "glad"), ("big", "large"), ("fast", "quick")]:  # cosines near 0 before
        assert _cos(out, a, b) > _cos(v, a, b) + 0.5
    for a, b in [("happy", "sad"), ("big", "small"), ("fast", "slow"), ("quick", "slow")]:
        assert _cos(out, a, b) < min(0.0, _cos(v, a, b))
    for loner in ("table", "tree"):  # in no pair: bit-identical, not even normalised
        assert np.array_equal(out[loner], v[loner])
    moved = [w for w in v.words if w not in ("table", "tree")]
    np.testing.assert_allclose([np.linalg.norm(out[w]) for w in moved], [np.linalg.norm(v[w]) for w in moved])
    info = out.meta["retrofit"][-1]
    assert info["attract_pairs"] == 3 and info["repel_pairs"] == 6 and info["words_with_neighbours"] == 9
    assert trace == info["objective"] and len(trace) == 51
    assert trace[-1] < 0.1 * trace[0]
    assert all(b < a for a, b in itertools.pairwise(trace[:11]))  # falls every early epoch


def test_cost_decreases_on_random_constraints():
    rng = np.random.default_rng(2)
    n = 300
    q0 = _unit(rng.normal(size=(n, 16)).astype(np.float32))[0]
    pairs = np.unique(np.sort(rng.integers(0, 250, (600, 2)), axis=1), axis=0)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    model = AttractRepel(q0, Constraints(pairs[:450], pairs[450:]), RetrofitConfig(method=AR))
    costs = model.run()
    totals = [c["total"] for c in costs]
    assert len(totals) == 6 and all(b < a for a, b in itertools.pairwise(totals))
    assert costs[-1]["attract"] < costs[0]["attract"] and costs[-1]["repel"] < costs[0]["repel"]
    q = model.vectors(q0)
    untouched = np.setdiff1d(np.arange(n), model.rows)
    assert len(untouched) > 0 and np.array_equal(q[untouched], q0[untouched])


def test_deterministic_with_a_seed(tmp_path):
    v, syn, ant = _toy(tmp_path)
    runs = [
        retrofit_vectors(v, [syn], RetrofitConfig(method=AR, batch_size=2, seed=s), [ant])[0].matrix
        for s in (7, 7, 8)
    ]
    assert np.array_equal(runs[0], runs[1]) and not np.array_equal(runs[0], runs[2])


def test_propagate_moves_the_words_without_pairs(tmp_path):
    v, syn, ant = _toy(tmp_path)
    cfg = RetrofitConfig(method=AR, batch_size=3, epochs=10)
    plain, _ = retrofit_vectors(v, [syn], cfg, [ant])
    spread, _ = retrofit_vectors(v, [syn], RetrofitConfig(**{**cfg.to_dict(), "propagate": True}), [ant])
    moved = [w for w in v.words if w not in ("table", "tree")]
    np.testing.assert_array_equal(plain.matrix[:9], spread.matrix[:9])  # specialised words as before
    for loner in ("table", "tree"):
        assert not np.allclose(spread[loner], plain[loner])
    q0 = v.unit()
    m = fit_map(q0[:9], plain.matrix[:9], cfg.ridge)
    np.testing.assert_allclose(spread.matrix[9:], q0[9:] @ m, rtol=1e-5)
    assert spread.meta["retrofit"][-1]["propagate"]["fitted_on"] == len(moved)


def test_ridge_map_recovers_a_linear_map_and_tends_to_identity():
    rng = np.random.default_rng(1)
    x0 = rng.normal(size=(200, 5))
    a = rng.normal(size=(5, 5))
    np.testing.assert_allclose(fit_map(x0, x0 @ a, 0.0), a, atol=1e-10)
    np.testing.assert_allclose(fit_map(x0, x0 @ a, 1e9), np.eye(5), atol=1e-5)
    # words that were not moved get q0 M; with nothing moved the vectors are returned as they were
    q, info, m = propagate(x0, x0 @ a, np.arange(200) < 150, 0.0)
    np.testing.assert_allclose(q[150:], x0[150:] @ a, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(m, a, atol=1e-8)
    assert info["fitted_on"] == 150 and info["fit_cosine"] == pytest.approx(1.0)
    q, info, m = propagate(x0, x0, np.zeros(200, bool), 1.0)
    assert np.array_equal(q, x0.astype(np.float32)) and np.array_equal(m, np.eye(5))


def test_the_composer_stays_and_propagate_maps_it(tmp_path):
    v, syn, ant = _toy(tmp_path)
    rows = np.random.default_rng(2).normal(size=(7, 6)).astype(np.float16)
    v.composer = Composer(rows, "{}", True)
    cfg = RetrofitConfig(method=AR, batch_size=3, epochs=10)
    plain, _ = retrofit_vectors(v, [syn], cfg, [ant])
    assert np.array_equal(plain.composer.rows, rows)  # unknown words do not move, as the loners
    spread, _ = retrofit_vectors(v, [syn], RetrofitConfig(**{**cfg.to_dict(), "propagate": True}), [ant])
    m = fit_map(v.unit()[:9], plain.matrix[:9], cfg.ridge)
    assert spread.composer.rows.dtype == np.float16 and not np.allclose(spread.composer.rows, rows)
    np.testing.assert_allclose(spread.composer.rows, rows.astype(np.float64) @ m, rtol=2e-3, atol=2e-3)
    assert v.composer.rows is rows  # the input's composer is left as it was


def test_propagate_works_for_faruqui_too(tmp_path):
    v, syn, _ = _toy(tmp_path)
    out, _ = retrofit_vectors(v, [syn], RetrofitConfig(propagate=True))
    # faruqui moves the headwords only: happy, big, fast
    assert out.meta["retrofit"][-1]["propagate"]["fitted_on"] == 3
    assert not np.allclose(out["table"], v.unit()[v.index["table"]])


def test_antonyms_need_attract_repel(tmp_path):
    v, syn, ant = _toy(tmp_path)
    with pytest.raises(UserError, match="attract-repel only"):
        retrofit_vectors(v, [syn], RetrofitConfig(method=Method.GRAPH), [ant])


def test_bundled_antonyms():
    pairs = dict(read_lexicon("wordnet-antonyms"))
    assert len(pairs) == 6161 and "bad" in pairs["good"] and "good" in pairs["bad"]


def test_cli_end_to_end(tmp_path, cli_main):
    v, syn, ant = _toy(tmp_path)
    v.save(tmp_path / "in.txt")
    out = tmp_path / "out.txt"
    args = [
        "retrofit",
        tmp_path / "in.txt",
        "-l",
        syn,
        "--antonyms",
        ant,
        "-o",
        out,
        "--method",
        "attract-repel",
    ]
    code, _, err = cli_main(*args, "--batch-size", "2", "--epochs", "3")
    assert code == 0, err
    assert "cost" in err and "9 of 11 words moved" in err
    res = Vectors.load(out)
    entry = res.meta["retrofit"][-1]
    assert entry["antonyms"] == [str(ant)] and len(entry["objective"]) == 4
    assert entry["config"]["batch_size"] == 2 and entry["config"]["delta_att"] == 0.6
    assert np.allclose(res["table"], v.unit()[v.index["table"]], atol=1e-6)  # text format rounds
    code, _, err = cli_main(*args, "--propagate")
    assert code == 0 and "propagate: map fitted on 9 words" in err


@pytest.mark.parametrize(
    "content,method,expected",
    [
        (
            None,
            "attract-repel",
            "nope.txt: no such lexicon file; give a path or one of: wordnet, wordnet-antonyms",
        ),
        (b"happy sad\n\x00x y\n", "attract-repel", "line 2"),
        (b"\xff\xfe bad\n", "attract-repel", "UTF-8"),
        (b"happy sad\n", "faruqui", "attract-repel only"),
    ],
)
def test_bad_antonym_file_is_one_line_error(tmp_path, cli_main, content, method, expected):
    v, syn, _ = _toy(tmp_path)
    v.save(tmp_path / "in.txt")
    ant = tmp_path / "nope.txt"
    if content is not None:
        ant.write_bytes(content)
    code, _, err = cli_main("retrofit", tmp_path / "in.txt", "-l", syn, "-a", ant, "-o", tmp_path / "o.txt",
                            "--method", method)  # fmt: skip
    assert code == 2 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and expected in lines[0], err
    assert not (tmp_path / "o.txt").exists()


def test_study_reads_antonyms(tmp_path):
    (tmp_path / "c.txt").write_text("a b c\n")
    (tmp_path / "ant.txt").write_text("big small\n")
    head = '[corpus]\nfiles = ["c.txt"]\n[students.sgns]\n[[retrofit]]\nvectors = "sgns"\n'
    study = tmp_path / "s.toml"
    study.write_text(head + 'method = "attract-repel"\nantonyms = ["ant.txt", "wordnet-antonyms"]\n')
    run = load_study(study).retrofits[0]
    assert run.antonyms == (str(tmp_path / "ant.txt"), "wordnet-antonyms")
    assert run.name == "sgns+wordnet+ant+wordnet-antonyms" and run.config.method is AR
    study.write_text(head + 'antonyms = ["ant.txt"]\n')
    with pytest.raises(UserError, match=r"retrofit\[0\].antonyms: antonym lexicons are used by"):
        load_study(study)
    study.write_text(head + 'method = "attract-repel"\nantonyms = ["missing.txt"]\n')
    with pytest.raises(UserError, match=r"retrofit\[0\].antonyms: missing.txt: no such lexicon file"):
        load_study(study)


def test_api_passes_antonyms(tmp_path):
    from ctx2static import api

    v, syn, ant = _toy(tmp_path)
    out = api.retrofit(v, str(syn), antonyms=str(ant), method="attract-repel", batch_size=3, epochs=10)
    direct, _ = retrofit_vectors(v, [syn], RetrofitConfig(method=AR, batch_size=3, epochs=10), [ant])
    assert out.meta["retrofit"][-1]["antonyms"] == [str(ant)]
    np.testing.assert_array_equal(out.matrix, direct.matrix)
