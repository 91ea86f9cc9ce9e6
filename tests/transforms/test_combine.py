"""`combine`: several tables made one (unit rows concatenated, or averaged after a Procrustes rotation)."""

import logging
import re

import numpy as np
import pytest

import ctx2static
from ctx2static.errors import UserError
from ctx2static.export.card import Card
from ctx2static.transforms.combine import CombineConfig, combine_vectors, procrustes
from ctx2static.vectors import Vectors
from ctx2static.vectors.outputs import made_by


def _combine(*tables: Vectors, **options) -> Vectors:
    return combine_vectors([(f"t{i}", v) for i, v in enumerate(tables)], CombineConfig(**options))


def test_concat_cosine_is_the_mean_of_the_inputs_cosines():
    """cos_a(x, y) = 1/sqrt(2), cos_b(x, y) = 0: equal weights give their mean, weights 1 and 2 give
    (1 * 0.7071 + 4 * 0) / 5; every row has unit length whatever the inputs' norms."""
    a = Vectors(["x", "y"], np.array([[3.0, 0.0], [1.0, 1.0]]))
    b = Vectors(["x", "y"], np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 5.0]]))
    equal = _combine(a, b)
    assert equal.dim == 5 and equal.meta["combine"]["method"] == "concat"
    assert equal.similarity("x", "y") == pytest.approx(0.5 / np.sqrt(2), abs=1e-6)  # 0.35355
    np.testing.assert_allclose(np.linalg.norm(equal.matrix, axis=1), 1.0, atol=1e-6)
    weighted = _combine(a, b, weights=(1, 2))
    assert weighted.similarity("x", "y") == pytest.approx(0.14142, abs=1e-5)
    assert weighted.meta["combine"]["weights"] == [1.0, 2.0]


@pytest.mark.parametrize("method", ["concat", "mean"])
@pytest.mark.parametrize(
    ("extreme", "plain"), [((1e300, 1e300), (1, 1)), ((1e-200, 1e-200), (1, 1)), ((1e300, 3e299), (10, 3))]
)
def test_weights_at_the_ends_of_float_give_what_their_ratios_give(method, extreme, plain):
    a = Vectors(["x", "y", "z"], np.array([[3.0, 0.0], [1.0, 1.0], [0.0, 2.0]]))
    b = Vectors(["x", "y", "z"], np.array([[1.0, 0.0], [0.0, 5.0], [1.0, 1.0]]))
    got = _combine(a, b, weights=extreme, method=method).matrix
    np.testing.assert_allclose(got, _combine(a, b, weights=plain, method=method).matrix, atol=1e-6)
    assert np.abs(got).max() > 0.1


def test_a_weight_that_drowns_the_others_keeps_its_block_at_unit_rows():
    a = Vectors(["x", "y"], np.array([[3.0, 0.0], [1.0, 1.0]]))
    b = Vectors(["x", "y"], np.array([[1.0, 0.0], [0.0, 5.0]]))
    got = _combine(a, b, weights=(1e300, 1)).matrix  # the squares overflowed: every value was 0.0
    np.testing.assert_allclose(got[:, :2], a.unit(), atol=1e-6)


def test_mean_recovers_a_known_rotation(caplog):
    """B = A R for an orthogonal R (its words in another order): the map rotates B back onto A, so the
    mean of A and B aligned is A's unit rows, and the fit's mean cosine is 1."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(60, 8)).astype(np.float32)
    r, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    words = [f"w{i}" for i in range(60)]
    first = Vectors(words, a)
    second = Vectors(words[::-1], (a @ r)[::-1])
    np.testing.assert_allclose(procrustes(second.unit()[::-1], first.unit()), r.T, atol=1e-5)
    with caplog.at_level(logging.INFO, logger="ctx2static"):
        mean = _combine(first, second, method="mean")
    assert caplog.messages == [
        "combine: 60 words in every input; none left out",
        "combine: rotated onto t0, mean cosine with its rows: t1 1.000",
    ]
    assert mean.words == words and mean.dim == 8
    np.testing.assert_allclose(mean.matrix, first.unit(), atol=1e-5)
    assert mean.meta["combine"]["inputs"][1]["fit_cosine"] == pytest.approx(1.0)


def test_the_words_are_those_every_input_holds_in_the_first_inputs_order(caplog):
    a = Vectors(["the", "bank", "river", "money"], np.eye(4), np.array([9, 5, 3, 1]))
    b = Vectors(["money", "loan", "bank", "the"], np.ones((4, 2)) + np.eye(4, 2))
    c = Vectors(["bank", "the", "money", "tree", "x"], np.arange(10.0).reshape(5, 2) + 1)
    with caplog.at_level(logging.INFO, logger="ctx2static"):
        out = _combine(a, b, c)
    assert out.words == ["the", "bank", "money"] and out.counts.tolist() == [9, 5, 1]
    assert caplog.messages == ["combine: 3 words in every input; left out: t0 1 of 4, t1 1 of 4, t2 2 of 5"]


def test_a_composer_left_out_is_a_warning_naming_the_command_that_gives_one(caplog):
    from ctx2static.composer import Composer

    a = Vectors(["the", "bank", "river"], np.eye(3))
    b = Vectors(["the", "bank", "river"], np.ones((3, 2)) + np.eye(3, 2))
    with caplog.at_level(logging.WARNING, logger="ctx2static"):
        _combine(a, b)
    assert caplog.messages == []  # no input composes: nothing is lost
    a.composer = Composer(np.zeros((4, 3), np.float16), "{}", True)
    with caplog.at_level(logging.WARNING, logger="ctx2static"):
        out = _combine(a, b)
    assert out.composer is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert "ctx2static compose OUT --cache CACHE --out NEW" in caplog.messages[0]


def test_inputs_read_with_different_casing_are_matched_on_lower_cased_words(caplog):
    """A cased table's lower-cased form takes its first spelling's row (the most frequent) and the sum of
    the spellings' counts; the result is looked up lower-cased."""
    cased = Vectors(["Bank", "bank", "The", "river"], np.eye(4), np.array([7, 3, 2, 1]))
    lower = Vectors(["bank", "the", "loan"], np.eye(3), None, {"corpus_config": {"lowercase": True}})
    assert not cased.lowercase and lower.lowercase
    with caplog.at_level(logging.INFO, logger="ctx2static"):
        out = _combine(cased, lower)
    assert out.words == ["bank", "the"] and out.counts.tolist() == [10, 2] and out.lowercase
    np.testing.assert_allclose(out["bank"][:4], np.array([1, 0, 0, 0]) / np.sqrt(2), atol=1e-6)
    assert "(matched lower-cased: the inputs differ in case)" in caplog.messages[0]


def test_the_result_records_its_inputs_and_survives_a_save(tmp_path):
    a = Vectors(["x", "y", "z"], np.eye(3), None, {"student": "ase", "teacher": "nomic", "corpus": ["c.txt"]})
    b = Vectors(
        ["x", "y", "z"],
        np.eye(3)[::-1],
        None,
        {"student": "ase", "teacher": "mpnet", "corpus": ["c.txt"], "retrofit": [{"method": "faruqui"}]},
    )
    out = _combine(a, b, dim=2)
    inputs = out.meta["combine"]["inputs"]
    assert [(i["path"], i["teacher"], i["dim"]) for i in inputs] == [("t0", "nomic", 3), ("t1", "mpnet", 3)]
    assert inputs[1]["retrofit"] == ["faruqui"] and "retrofit" not in out.meta  # the input's alone
    assert (
        out.dim == 2
        and out.meta["pca"] == {"dims": 2, "of": 6, "drop": 0, "texts": 0}
        and out.meta["corpus"] == ["c.txt"]
    )
    loaded = Vectors.load(out.save(tmp_path / "c"))
    assert loaded.meta["combine"] == out.meta["combine"]
    assert made_by(loaded.meta) == "combine (concat)"
    assert ("combined", "concat of `ase` (nomic), `ase` (mpnet)") in Card.of(loaded).provenance()


@pytest.mark.parametrize(
    "options,message",
    [
        ({"method": "mean"}, "--method mean averages aligned rows, so it needs inputs of one dimension, not "
         "2 (t0), 3 (t1): use --method concat (and --dim D to bring the result down to D dimensions)"),
        ({"dim": 6}, "--dim 6: the combined table has 5 dimensions; use --dim 5 or less"),
        ({"weights": (1, 2, 3)}, "--weights 1,2,3 gives 3 weights for 2 inputs; give one per input"),
    ],
)  # fmt: skip
def test_impossible_combinations_are_one_line(options, message):
    a = Vectors(["x", "y"], np.eye(2))
    b = Vectors(["x", "y"], np.eye(2, 3))
    with pytest.raises(UserError, match="^" + re.escape(message)) as err:
        _combine(a, b, **options)
    assert "\n" not in str(err.value)


def test_one_input_or_no_shared_word_is_one_line():
    a = Vectors(["x", "y"], np.eye(2))
    with pytest.raises(UserError, match=r"^combine needs at least two vectors inputs, got 1 \(t0\)"):
        _combine(a)
    with pytest.raises(UserError, match="^no word is in every input \\(words: t0 2, t1 1\\); combine tables"):
        _combine(a, Vectors(["z"], np.eye(1)))


def test_the_api_takes_paths_and_vectors(tmp_path):
    a = Vectors(["x", "y"], np.array([[1.0, 0.0], [1.0, 1.0]]))
    a.save(tmp_path / "a.txt")
    out = ctx2static.combine([tmp_path / "a.txt", Vectors(["y", "x"], np.eye(2))], weights=[1, 1])
    assert out.words == ["x", "y"] and [i["path"] for i in out.meta["combine"]["inputs"]] == [
        str(tmp_path / "a.txt"),
        "vectors[1]",
    ]
    with pytest.raises(UserError, match=r"^vectors='a.txt': pass a list of Vectors"):
        ctx2static.combine("a.txt")


def _two_files(tmp_path):
    (tmp_path / "a.txt").write_text("3 2\ncat 1 0\ndog 0 1\ncar 1 1\n")
    (tmp_path / "b.txt").write_text("3 3\ndog 1 0 0\ncat 0 1 0\nbus 1 1 1\n")
    return tmp_path / "a.txt", tmp_path / "b.txt"


def test_the_command_writes_the_combination_and_says_so(tmp_path, cli_main):
    a, b = _two_files(tmp_path)
    out = tmp_path / "c"
    code, stdout, err = cli_main("combine", a, b, "--out", out, "--weights", "1,2")
    assert code == 0, err
    assert stdout == f"combine: 2 words x 5 from 2 inputs (concat) -> {out}\n"
    assert err == f"combine: 2 words in every input; left out: {a} 1 of 3, {b} 1 of 3\n"
    assert Vectors.load(out).words == ["cat", "dog"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["A", "--out", "c.txt"], "combine needs at least two vectors inputs, got 1 (A); give two or more"),
        (["A", "missing.txt", "--out", "c.txt"], "missing.txt: no such vectors file or folder"),
        (["A", "A", "--out", "c.txt"], "A: given twice; combine different tables"),
        (["A", "B", "--out", "c.txt", "--weights", "1"], "--weights 1 gives 1 weight for 2 inputs"),
        (["A", "B", "--out", "c.txt", "--method", "mean"], "--method mean averages aligned rows"),
        (["A", "B", "--out", "c.txt", "--weights", "1,0"], "--weights 1.0,0.0 must be positive"),
        (["A", "B", "-o", "c", "--weights", "inf,1"], "--weights inf,1.0 must be positive finite"),
        (["A", "B", "-o", "c", "--weights", "nan,1"], "--weights nan,1.0 must be positive finite"),
    ],
)
def test_bad_input_is_one_line(tmp_path, monkeypatch, cli_main, args, message):
    monkeypatch.chdir(tmp_path)
    _two_files(tmp_path)
    args = [{"A": "a.txt", "B": "b.txt"}.get(x, x) for x in args]
    code, _, err = cli_main("combine", *args)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: " + message.replace("(A)", "(a.txt)").replace("A:", "a.txt:")), err
    assert not (tmp_path / "c.txt").exists()


def test_an_output_that_is_an_input_or_other_vectors_is_refused(tmp_path, cli_main):
    """An input is never replaced; vectors another step made need --overwrite; a rerun replaces its own."""
    a, b = _two_files(tmp_path)
    before = a.read_bytes()
    code, _, err = cli_main("combine", a, b, "--out", a)
    assert code == 2 and "an output never replaces an input" in err and a.read_bytes() == before
    code, _, err = cli_main("combine", a, b, "--out", a, "--overwrite")
    assert code == 2 and a.read_bytes() == before
    out = tmp_path / "s.txt"
    Vectors(["cat"], np.ones((1, 2)), None, {"student": "sgns"}).save(out)
    kept = out.read_bytes()
    code, _, err = cli_main("combine", a, b, "--out", out)
    assert code == 2 and err == (
        f"error: {out}: holds the vectors of student 'sgns'; this run writes combine (concat): pass "
        "--overwrite to replace them, or choose another output\n"
    )
    assert out.read_bytes() == kept
    assert cli_main("combine", a, b, "--out", out, "--overwrite")[0] == 0
    assert cli_main("combine", a, b, "--out", out)[0] == 0  # its own output, made again
    code, _, err = cli_main("combine", a, b, "--out", out, "--method", "mean", "--dim", "2")
    assert code == 2 and "holds the vectors of combine (concat); this run writes combine (mean)" in err
