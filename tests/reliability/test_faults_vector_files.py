"""Hostile vectors files: a word listed twice, a damaged composer, metadata of the wrong types.

Each is settled when the vectors are opened: a repeated word keeps its first row (as gensim) in
every format, and a damaged composer or a mistyped ``meta.json`` key is one line naming the file,
so neither ``neighbours``, ``eval --compose``, ``export`` nor ``retrofit`` (which would copy the
composer into its output) ever meets them.
"""

import json
import logging

import numpy as np
import pytest
from gensim.models import KeyedVectors
from tokenizers import Tokenizer
from tokenizers.models import WordPiece
from tokenizers.pre_tokenizers import Whitespace

from ctx2static.composer import Composer
from ctx2static.errors import UserError
from ctx2static.vectors import Vectors

TOKENS = {"[UNK]": 0, "king": 1, "queen": 2, "man": 3, "##s": 4, "wo": 5, "##man": 6}


def tokenizer_json() -> str:
    """A tiny WordPiece tokenizer (offline, no teacher needed)."""
    tok = Tokenizer(WordPiece(TOKENS, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    return tok.to_str()


def with_composer(words=("king", "queen", "man"), dim=4) -> Vectors:
    rng = np.random.default_rng(0)
    v = Vectors(list(words), rng.normal(size=(len(words), dim)).astype(np.float32), np.arange(len(words)))
    v.composer = Composer(rng.normal(size=(len(TOKENS), dim)).astype(np.float16), tokenizer_json(), True)
    return v


# --- a word listed twice -------------------------------------------------------------------------


def _write_with_repeats(path):
    """'king' twice (its second row the copy of 'man'), 'queen' three times: 6 rows, 3 words."""
    rows = [("king", [1, 0]), ("queen", [0, 1]), ("king", [-1, 0]), ("man", [-1, 0])]
    rows += [("queen", [5, 5]), ("queen", [0, -1])]
    with open(path, "wb") as fh:
        fh.write(f"{len(rows)} 2\n".encode())
        for w, r in rows:
            if path.suffix == ".bin":
                fh.write(w.encode() + b" " + np.array(r, "<f4").tobytes() + b"\n")
            else:
                fh.write(f"{w} {r[0]} {r[1]}\n".encode())


@pytest.mark.parametrize("suffix", [".txt", ".bin"])
def test_a_repeated_word_keeps_its_first_row_as_gensim_does(tmp_path, suffix, caplog):
    path = tmp_path / f"v{suffix}"
    _write_with_repeats(path)
    with caplog.at_level(logging.WARNING):
        v = Vectors.load(path)
    kv = KeyedVectors.load_word2vec_format(str(path), binary=suffix == ".bin")
    assert v.words == ["king", "queen", "man"] == [w for w in kv.index_to_key if w is not None]
    for w in v.words:
        np.testing.assert_array_equal(v[w], kv[w])
    assert len(v.matrix) == 3 and v.index == {"king": 0, "queen": 1, "man": 2}
    ours = [r.getMessage() for r in caplog.records if r.name == "ctx2static.vectors.table"]
    assert ours == [
        f"{path}: a word listed more than once keeps its first row, as in gensim "
        "(3 later rows left out; the first repeated word: 'king')"
    ]


def test_a_repeated_word_in_a_native_folder_keeps_its_first_row_and_count(tmp_path, caplog):
    Vectors(["a", "b", "c", "d"], np.eye(4, dtype=np.float32), np.array([9, 8, 7, 6])).save(tmp_path / "n")
    (tmp_path / "n" / "vocab.tsv").write_text("a\t9\nb\t8\na\t7\nc\t6\n")
    for mmap in (False, True):
        v = Vectors.load(tmp_path / "n", mmap=mmap)
        assert v.words == ["a", "b", "c"] and v.counts.tolist() == [9, 8, 6]
        np.testing.assert_array_equal(v.matrix, np.eye(4)[[0, 1, 3]])
    assert "left out; the first repeated word: 'a'" in caplog.text


def test_the_sidecar_counts_follow_the_kept_rows(tmp_path):
    path = tmp_path / "v.txt"
    _write_with_repeats(path)
    (tmp_path / "v.txt.meta.json").write_text(json.dumps({"meta": {}, "counts": [60, 50, 40, 30, 20, 10]}))
    assert Vectors.load(path).counts.tolist() == [60, 50, 30]


def test_no_stage_sees_a_repeated_word(tmp_path, cli_main):
    path = tmp_path / "v.txt"
    _write_with_repeats(path)
    code, out, err = cli_main("neighbours", path, "king", "-n", "2")
    assert code == 0, err
    assert "king 1.000" not in out and out.split("\n")[1].split()[0] == "queen"
    (tmp_path / "lex.txt").write_text("king queen\n")
    code, _, err = cli_main("retrofit", path, "-l", tmp_path / "lex.txt", "-o", tmp_path / "r.bin")
    assert code == 0, err
    with open(tmp_path / "r.bin", "rb") as fh:
        assert fh.readline() == b"3 2\n"
    assert Vectors.load(tmp_path / "r.bin").words == ["king", "queen", "man"]
    with pytest.raises(UserError, match="the words hold 'a' more than once; a table has one row per word"):
        Vectors(["a", "b", "a"], np.eye(3))


# --- a damaged composer --------------------------------------------------------------------------


def _object_array(path):
    np.save(path, np.array([{"rows": 1}, None], dtype=object), allow_pickle=True)


DAMAGE = {
    "truncated": ("subwords.npy", lambda p: p.write_bytes(p.read_bytes()[:-10]), "not a readable .npy array"),
    "pickled objects": ("subwords.npy", _object_array, "Object arrays cannot be loaded"),
    "other width": ("subwords.npy", lambda p: np.save(p, np.ones((7, 3), np.float16)), r"shape \(7, 3\)"),
    "integers": ("subwords.npy", lambda p: np.save(p, np.ones((7, 4), np.int16)), "int16 array"),
    "one dimension": ("subwords.npy", lambda p: np.save(p, np.ones(28, np.float16)), r"shape \(28,\)"),
    "too few rows": ("subwords.npy", lambda p: np.save(p, np.ones((5, 4), np.float16)), "5 rows for the 7"),
    "float64": ("subwords.npy", lambda p: np.save(p, np.ones((7, 4))), "float64 array of shape"),
    "NaN": (
        "subwords.npy",
        lambda p: np.save(p, np.full((7, 4), np.nan, np.float16)),
        "holds NaN, infinity or values beyond",
    ),
    "not JSON": ("tokenizer.json", lambda p: p.write_text("{not json"), "not a tokenizers JSON file"),
    "not a tokenizer": ("tokenizer.json", lambda p: p.write_text('{"a": 1}'), "not a tokenizers JSON"),
    "not UTF-8": ("tokenizer.json", lambda p: p.write_bytes(b"\xff\xfe{}"), "cannot be read as UTF-8"),
}


@pytest.mark.parametrize("prefix", ["", "v.txt."])
@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_damaged_composer_is_one_line_when_opened(tmp_path, case, prefix):
    path = with_composer().save(tmp_path / (prefix.rstrip(".") or "n"))
    folder = path if path.is_dir() else path.parent
    name, damage, message = DAMAGE[case]
    damage(folder / f"{prefix}{name}")
    with pytest.raises(UserError, match=message) as err:
        Vectors.load(path)
    text = str(err.value)
    assert "\n" not in text and text.startswith(str(folder / f"{prefix}"))
    assert text.endswith(
        f"delete {prefix}subwords.npy and {prefix}tokenizer.json "
        "(the table loads without them; `ctx2static compose` fits a new composer)"
    )
    for other in ("subwords.npy", "tokenizer.json"):
        (folder / f"{prefix}{other}").unlink()
    assert Vectors.load(path).composer is None  # the fix given works


def test_a_composer_that_would_not_load_again_is_not_written(tmp_path):
    v = with_composer()
    v.composer.rows = v.composer.rows.astype(np.float32) * 1e5  # beyond float16
    with pytest.raises(UserError, match="subwords.npy: not written: the composer's rows hold NaN or values"):
        v.save(tmp_path / "n")
    assert not (tmp_path / "n").exists()


def test_a_sound_composer_opens_and_composes_as_the_saved_one(tmp_path):
    v = with_composer()
    back = Vectors.load(v.save(tmp_path / "n"))
    np.testing.assert_array_equal(back.query(["women"]), v.query(["women"]))


@pytest.mark.parametrize("command", ["neighbours", "eval", "export", "retrofit"])
def test_every_command_refuses_a_damaged_composer_before_writing(tmp_path, cli_main, command):
    path = with_composer().save(tmp_path / "n")
    np.save(path / "subwords.npy", np.ones((7, 3), np.float16))
    (tmp_path / "lex.txt").write_text("king queen\n")
    out = tmp_path / "out"
    args = {
        "neighbours": ["womans"],
        "eval": ["--compose"],
        "export": ["--format", "model2vec", "--no-eval", "--out", out],
        "retrofit": ["-l", tmp_path / "lex.txt", "-o", out],
    }[command]
    code, _, err = cli_main(command, path, *args)
    last = err.strip().splitlines()[-1]  # retrofit says its configuration first
    assert code == 2 and last.startswith(f"error: {path / 'subwords.npy'}: holds a float16 array")
    assert "Traceback" not in err and not out.exists()


# --- metadata of the wrong types -----------------------------------------------------------------

BAD_META = {
    "composer": (5, "'composer' must be an object, not 5"),
    "teacher": (["x"], "'teacher' must be a string or null, not [\"x\"]"),
    "corpus": (7, "'corpus' must be a list of strings, not 7"),
    "student": (False, "'student' must be a string, not false"),
    "train_seconds": ("3 s", "'train_seconds' must be a number, not \"3 s\""),
    "tokens_per_second": (True, "'tokens_per_second' must be a number, not true"),
    "train": ({"loss_per_epoch": [None]}, "'train.loss_per_epoch' must be a list of numbers, not [null]"),
    "corpus_config": ({"lowercase": "no"}, "'corpus_config.lowercase' must be true or false, not \"no\""),
    "study": ({"seconds": [1]}, "'study.seconds' must be a number, not [1]"),
    "retrofit": ([{"lexicons": "x"}], "'retrofit.lexicons' must be a list of strings, not \"x\""),
    "config": ("x" * 50, "'config' must be an object, not \"" + "x" * 36 + "..."),
}


@pytest.mark.parametrize("key", list(BAD_META))
def test_a_mistyped_meta_key_is_one_line_naming_file_and_key(tmp_path, key):
    path = with_composer().save(tmp_path / "n")
    meta = json.loads((path / "meta.json").read_text())
    value, problem = BAD_META[key]
    (path / "meta.json").write_text(json.dumps({**meta, key: value}))
    with pytest.raises(UserError) as err:
        Vectors.load(path)
    assert str(err.value) == f"{path / 'meta.json'}: {problem}; correct it or delete the key"
    Vectors(["a"], np.ones((1, 2))).save(tmp_path / "v.txt")  # the word2vec sidecar: the same schema
    (tmp_path / "v.txt.meta.json").write_text(json.dumps({"meta": {key: value}, "counts": None}))
    with pytest.raises(UserError, match=f"v.txt.meta.json: '{key}"):
        Vectors.load(tmp_path / "v.txt")


def test_the_composer_lowercase_flag_must_be_a_bool(tmp_path, cli_main):
    path = with_composer().save(tmp_path / "n")
    meta = json.loads((path / "meta.json").read_text())
    meta["composer"]["lowercase"] = "no"  # a non-empty string would read as true
    (path / "meta.json").write_text(json.dumps(meta))
    code, _, err = cli_main("neighbours", path, "Kings")
    assert code == 2 and err.strip() == (
        f"error: {path / 'meta.json'}: 'composer.lowercase' must be true or false, not \"no\"; "
        "correct it or delete the key"
    )


def test_unknown_keys_and_what_the_tool_writes_pass(tmp_path):
    v = with_composer()
    step = {"method": "faruqui", "lexicons": ["wordnet"], "edges": 3, "objective": [1.0]}
    v.meta = {"student": "sgns", "teacher": None, "corpus": ["c.txt"], "corpus_config": {"lowercase": True},
              "seconds": 1, "train_seconds": 0.5, "train": {"loss_per_epoch": [2, 1.5], "adam_steps": 3},
              "mine": {"any": [1, "x"]},
              "retrofit": [step]}  # fmt: skip
    assert Vectors.load(v.save(tmp_path / "n")).meta == {**v.meta, "composer": {"lowercase": True}}


# --- words a format cannot hold ------------------------------------------------------------------

ODD = {
    "space": "grand jury",
    "tab": "a\tb",
    "newline": "a\nb",
    "leading newline": "\na",
    "empty": "",
    "nul": "a\0b",
    "cr": "a\rb",
    "non-bmp": "\U0001d11e\U0001f600",
    "backslash": "a\\b",
    "escape-like": "a\\tb\\\\n\\",
}
W2V_CANNOT = {"space": "holds a space", "newline": "a line break", "leading newline": "a line break",
              "empty": "a word is empty"}  # fmt: skip


@pytest.mark.parametrize("kind", list(ODD))
@pytest.mark.parametrize("name", ["v.txt", "v.bin", "v"])
def test_every_writer_writes_what_its_reader_reads_or_refuses_the_word(tmp_path, name, kind):
    words = ["king", ODD[kind], "queen"]
    v = Vectors(words, np.arange(12, dtype=np.float32).reshape(3, 4) / 7, np.array([3, 2, 1]))
    path = tmp_path / name
    if name != "v" and kind in W2V_CANNOT:
        with pytest.raises(UserError) as info:
            v.save(path)
        line = str(info.value)
        assert "\n" not in line and W2V_CANNOT[kind] in line and "save to a folder" in line
        assert kind == "empty" or repr(ODD[kind]) in line
        assert list(tmp_path.iterdir()) == []  # nothing written, no temp left
        return
    v.save(path)
    back = Vectors.load(path)
    assert back.words == words
    np.testing.assert_allclose(back.matrix, v.matrix, rtol=1e-5)
    if name != "v":  # and gensim reads the word2vec files the same
        kv = KeyedVectors.load_word2vec_format(path, binary=name.endswith(".bin"))
        assert kv.index_to_key == words


def test_a_folder_s_vocab_tsv_escapes_what_a_line_cannot_hold(tmp_path):
    Vectors(["a\tb", "c\nd", "e\\f", "g\0h"], np.eye(4, dtype=np.float32)).save(tmp_path / "v")
    text = (tmp_path / "v" / "vocab.tsv").read_text()
    assert text == "a\\tb\t0\nc\\nd\t0\ne\\\\f\t0\ng\\0h\t0\n"


def test_odd_words_through_the_commands(tmp_path, cli_main):
    from gensim.models import KeyedVectors as KV

    kv = KV(4)
    kv.add_vectors(["king", "a\tb", "c\nd", "queen"], np.eye(4, dtype=np.float32))
    kv.save_word2vec_format(str(tmp_path / "v.bin"), binary=True)  # gensim writes and reads it
    code, _, err = cli_main("export", tmp_path / "v.bin", "--format", "word2vec", "-o", tmp_path / "x.txt")
    assert code == 2 and err.startswith(f"error: {tmp_path / 'x.txt'}: not written: the word 'c\\nd' holds")
    assert not (tmp_path / "x.txt").exists()
    (tmp_path / "lex.txt").write_text("king queen\n")
    code, _, err = cli_main("retrofit", tmp_path / "v.bin", "-l", tmp_path / "lex.txt", "-o", tmp_path / "r")
    assert code == 0, err
    assert Vectors.load(tmp_path / "r").words == ["king", "a\tb", "c\nd", "queen"]


def test_a_cache_whose_vocabulary_holds_a_spaced_or_empty_word_is_refused_not_written_ragged(
    tmp_path, cli_main
):
    """No corpus word holds a blank, and --vocab lists refuse one, so such a cache is damaged: it is
    refused when read, before a student could write a word2vec file with a ragged line."""
    from ..synthetic_cache import write_cache

    rng = np.random.default_rng(0)
    words = ["king", "grand jury", "queen", "", "man", "woman"]
    sents = [list(rng.integers(0, 6, size=5)) for _ in range(8)]
    write_cache(tmp_path / "cache", words, sents, 4, rng.normal(size=(8, 4)).astype(np.float32))
    fit = ["fit-student", "-s", "x2static", "--cache", tmp_path / "cache", "--set", "epochs=1", "-o"]
    code, _, err = cli_main(*fit, tmp_path / "x.txt")
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert f"{tmp_path / 'cache' / 'vocab.tsv'}: line 2 holds 'grand jury', a word with a blank" in err
    assert not (tmp_path / "x.txt").exists()
