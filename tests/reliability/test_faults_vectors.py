"""NaN and infinity in vectors and benchmarks: refused in one line naming the first word, or dropped.

No stage writes a non-finite vector, and retrofitting cannot spread one: the issue's case was a
clean word ("past") whose NaN neighbour ("former") turned it NaN, with exit 0.
"""

import numpy as np
import pytest

from ctx2static.errors import UserError
from ctx2static.eval.benchmarks import read_similarity
from ctx2static.retrofit.config import Method, RetrofitConfig
from ctx2static.retrofit.solver import retrofit_vectors
from ctx2static.vectors import Vectors
from ctx2static.vectors.table import nonfinite_rows

WORDS = ["king", "queen", "past", "former", "man", "woman", "later", "ago"]


def _matrix():
    return np.random.default_rng(0).normal(size=(len(WORDS), 3)).astype(np.float32)


def _write_text(path, rows):
    lines = [f"{len(rows)} 3"] + [f"{w} {' '.join(v)}" for w, v in rows]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def poisoned(tmp_path):
    """word2vec text with a NaN row (former), an inf row (later) and a value that overflows float32 (ago)."""
    m = _matrix()
    rows = [(w, [f"{x:.6g}" for x in m[i]]) for i, w in enumerate(WORDS)]
    rows[3] = ("former", ["nan", "1", "1"])
    rows[6] = ("later", ["0", "-inf", "0"])
    rows[7] = ("ago", ["1e39", "0", "0"])
    path = tmp_path / "v.txt"
    _write_text(path, rows)
    return path


def test_loading_refuses_nonfinite_rows_naming_the_first_word(poisoned):
    with pytest.raises(UserError) as err:
        Vectors.load(poisoned)
    assert str(err.value) == (
        f"{poisoned}: the vector of 'former' holds NaN or infinity (3 such words); "
        "pass --nonfinite drop to leave them out, or make them again"
    )


@pytest.mark.parametrize("suffix", [".txt", ".bin", ""])
def test_drop_leaves_those_words_out_in_every_format(tmp_path, suffix, caplog, monkeypatch):
    m = _matrix()
    m[3, 1], m[6, 0] = np.nan, -np.inf
    v = Vectors.__new__(Vectors)  # a matrix made elsewhere (save refuses to write one)
    v.words, v.matrix, v.counts, v.meta = WORDS, m, np.arange(8, 0, -1), {}
    v.index = {w: i for i, w in enumerate(WORDS)}
    path = tmp_path / f"v{suffix}"
    monkeypatch.setattr("ctx2static.vectors.table.require_finite", lambda *a: None)
    v.save(path)
    monkeypatch.undo()
    with pytest.raises(UserError, match="'former' holds NaN"):
        Vectors.load(path, mmap=True)
    dropped = Vectors.load(path, nonfinite="drop")
    keep = [0, 1, 2, 4, 5, 7]
    assert dropped.words == [WORDS[i] for i in keep]
    np.testing.assert_allclose(dropped.matrix, m[keep], rtol=1e-5)  # text keeps 6 digits
    np.testing.assert_array_equal(dropped.counts, np.arange(8, 0, -1)[keep])
    assert "left out 2 words whose vectors hold NaN or infinity (first: 'former')" in caplog.text


def test_saving_refuses_nonfinite_vectors_and_keeps_the_old_file(tmp_path):
    good = Vectors(WORDS, _matrix())
    good.save(tmp_path / "v.txt")
    before = (tmp_path / "v.txt").read_bytes()
    bad = _matrix()
    bad[2, 0] = np.nan
    with pytest.raises(
        UserError, match=r"v.txt: not written: the vector of 'past' holds NaN or infinity \(1 such"
    ):
        Vectors(WORDS, bad).save(tmp_path / "v.txt")
    assert (tmp_path / "v.txt").read_bytes() == before
    with pytest.raises(UserError, match="not written"):
        Vectors(WORDS, bad).save(tmp_path / "native")
    assert not (tmp_path / "native").exists()


def test_retrofit_refuses_nan_input_and_never_spreads_it(poisoned, tmp_path, cli_main):
    lexicon = tmp_path / "lex.txt"
    lexicon.write_text("past former ago later\nking queen\n")
    with pytest.raises(UserError, match="retrofit input: the vector of 'former' holds NaN"):
        retrofit_vectors(Vectors(WORDS, _nan_at(3)), [lexicon], RetrofitConfig())
    with pytest.raises(UserError, match="retrofit input: the vector of 'former' holds NaN"):  # every method
        ar = RetrofitConfig(method=Method.ATTRACT_REPEL)
        retrofit_vectors(Vectors(WORDS, _nan_at(3)), [lexicon], ar, ["wordnet-antonyms"])
    code, _, err = cli_main("retrofit", poisoned, "-l", lexicon, "-o", tmp_path / "r.txt")
    assert code == 2 and "'former' holds NaN or infinity" in err and not (tmp_path / "r.txt").exists()
    code, _, err = cli_main(
        "retrofit", poisoned, "-l", lexicon, "-o", tmp_path / "r.txt", "--nonfinite", "drop"
    )
    assert code == 0, err
    out = Vectors.load(tmp_path / "r.txt")
    assert "past" in out and "former" not in out and len(nonfinite_rows(out.matrix)) == 0
    assert "objective nan" not in err and "-> nan" not in err


def _nan_at(row):
    m = _matrix()
    m[row, 0] = np.nan
    return m


def test_eval_refuses_or_drops_nonfinite_vectors(poisoned, tmp_path, cli_main):
    (tmp_path / "cat.csv").write_text(
        ",category,word\n0,a,king\n1,a,queen\n2,b,past\n3,b,former\n4,b,later\n"
    )
    args = ["eval", poisoned, "--no-bundled", "--categorization", tmp_path / "cat.csv"]
    code, _, err = cli_main(*args)
    assert code == 2 and err.strip() == (
        f"error: {poisoned}: the vector of 'former' holds NaN or infinity (3 such words); "
        "pass --nonfinite drop to leave them out, or make them again"
    )
    code, out, err = cli_main(*args, "--nonfinite", "drop")
    assert code == 0, err
    assert "(60%)" in out  # king, queen, past covered; former and later dropped


@pytest.mark.parametrize("score", ["nan", "NaN", "inf", "-inf", "1e400"])
def test_a_nonfinite_gold_score_is_refused(tmp_path, score):
    path = tmp_path / "sim.txt"
    path.write_text(f"a\tb\t1\nc\td\t{score}\n")
    with pytest.raises(
        UserError, match=rf"sim.txt: line 2: score '{score}' is not finite; fix or drop the line"
    ):
        read_similarity(path)


@pytest.mark.parametrize(
    "head, body, message",
    [
        ("-1 3", "", "the header says -1 words of 3 values"),
        ("2 0", "a\nb\n", "the header says 2 words of 0 values"),
        ("100000000 300", "a 1 2 3\n", "which this .*-byte file cannot hold"),
    ],
)
def test_an_impossible_header_is_one_line_not_a_memory_error(tmp_path, head, body, message):
    for suffix in (".txt", ".bin"):
        path = tmp_path / f"v{suffix}"
        path.write_text(f"{head}\n{body}")
        with pytest.raises(UserError, match=message):
            Vectors.load(path)


def test_damaged_sidecars_and_native_parts_are_one_line(tmp_path):
    Vectors(WORDS, _matrix(), np.arange(8)).save(tmp_path / "v.txt")
    side = tmp_path / "v.txt.meta.json"
    side.write_text("{not json")
    with pytest.raises(UserError, match="v.txt.meta.json: not valid JSON"):
        Vectors.load(tmp_path / "v.txt")
    side.write_text('{"meta": [1], "counts": [1, 2]}')  # wrong types: ignored, the vectors load
    assert Vectors.load(tmp_path / "v.txt").counts is None
    Vectors(WORDS, _matrix()).save(tmp_path / "n")
    (tmp_path / "n" / "vectors.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(UserError, match="vectors.npy: not a readable .npy matrix"):
        Vectors.load(tmp_path / "n")
    np.save(tmp_path / "n" / "vectors.npy", np.arange(8))
    with pytest.raises(UserError, match="not a 2-d float matrix"):
        Vectors.load(tmp_path / "n")
