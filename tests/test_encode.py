"""`Vectors.encode`: a text's vector is the weighted mean of its words' vectors, computed here by hand."""

import numpy as np
import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordPiece
from tokenizers.pre_tokenizers import Whitespace

from ctx2static.composer import Composer
from ctx2static.errors import UserError
from ctx2static.vectors import Vectors

PIECES = {"[UNK]": 0, "zy": 1, "##x": 2}


def tiny(counts=(6, 3, 1)) -> Vectors:
    matrix = np.array([[1, 0, 0], [0, 2, 0], [0, 0, 4]], dtype=np.float32)
    return Vectors(["the", "cat", "mat"], matrix, None if counts is None else np.array(counts))


def with_composer() -> Vectors:
    tok = Tokenizer(WordPiece(PIECES, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    v = tiny()
    v.composer = Composer(np.array([[0, 0, 0], [2, 2, 0], [0, 2, 2]], np.float16), tok.to_str(), True)
    return v


def unit(x):
    return x / np.linalg.norm(x)


def test_plain_mean_of_the_words_split_as_the_corpus_is():
    v = tiny()
    # "The" is lower-cased (the table is), "," and "dog" have no vector and are left out
    got = v.encode(["The cat, the dog.", "mat"], normalize=False)
    np.testing.assert_allclose(got[0], (2 * v["the"] + v["cat"]) / 3, rtol=1e-6)
    np.testing.assert_allclose(got[1], v["mat"], rtol=1e-6)
    np.testing.assert_allclose(v.encode(["The cat, the dog."])[0], unit([2, 2, 0]), rtol=1e-6)


def test_sif_weights_come_from_the_counts():
    v, a = tiny(), 0.1
    p = np.array([6, 3, 1]) / 10
    w = a / (a + p)
    got = v.encode(["the cat cat mat"], weighting="sif", sif_a=a, normalize=False)[0]
    want = (w[0] * v["the"] + 2 * w[1] * v["cat"] + w[2] * v["mat"]) / 4
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_zipf_weights_come_from_the_rank_as_model2vec():
    v, a = tiny(counts=None), 0.01
    p = np.array([1 / 2, 1 / 3, 1 / 4]) / (1 / 2 + 1 / 3 + 1 / 4)
    w = a / (a + p)
    got = v.encode(["mat the"], weighting="zipf", sif_a=a, normalize=False)[0]
    np.testing.assert_allclose(got, (w[2] * v["mat"] + w[0] * v["the"]) / 2, rtol=1e-6)
    np.testing.assert_allclose(v.encode(["mat the"], weighting="zipf", sif_a=a)[0], unit(got), rtol=1e-6)


def test_an_unknown_word_enters_as_its_composer_pieces_with_weight_one():
    v = with_composer()
    w = v.row_weights("sif")
    got = v.encode(["the zyx"], weighting="sif", normalize=False)[0]
    pieces = np.array([[2, 2, 0], [0, 2, 2]])  # the rows of zy and ##x, as a token bag counts them
    np.testing.assert_allclose(got, (w[0] * v["the"] + pieces.sum(0)) / 3, rtol=1e-3)
    np.testing.assert_allclose(v.encode(["zyx"], normalize=False)[0], v.query(["zyx"])[0], rtol=1e-3)


def test_a_text_without_a_known_word_is_a_zero_row_and_batches_do_not_change_rows():
    v = tiny()
    texts = ["", "dog !", "cat", "the mat", "cat the"] * 3
    got = v.encode(texts, batch=2)
    assert not got[0].any() and not got[1].any()
    np.testing.assert_array_equal(got, v.encode(texts))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"weighting": "tfidf"}, "weighting='tfidf': choose one of none, sif, zipf"),
        ({"sif_a": 0.0}, "sif_a=0.0 must be between 0 and 1"),
        ({"batch": 0}, "batch=0 must be at least 1"),
    ],
)
def test_bad_settings_are_one_line(kwargs, message):
    with pytest.raises(UserError, match=message):
        tiny().encode(["cat"], **kwargs)


def test_sif_without_counts_and_a_single_string_are_refused():
    with pytest.raises(UserError, match="weighting 'sif' needs word counts"):
        tiny(counts=None).encode(["cat"], weighting="sif")
    with pytest.raises(UserError, match="pass a list of texts"):
        tiny().encode("the cat")


def test_composed_says_which_words_query_composes():
    v = with_composer()
    assert v.composed(["cat", "CAT", "zyx"]) == [False, False, True]
    np.testing.assert_allclose(v.query(["zyx"])[0], [1, 2, 1])  # the mean of zy's and ##x's rows


def test_a_word2vec_file_read_through_a_link_keeps_the_sidecars_beside_the_file_it_names(tmp_path):
    v = with_composer()
    v.meta["student"] = "ase"
    real = v.save(tmp_path / "real" / "v.txt")
    (tmp_path / "runs").mkdir()
    link = tmp_path / "runs" / "best"  # no sidecars of its own: they are the target's
    link.symlink_to(real)
    back = Vectors.load(link)
    assert back.meta["student"] == "ase" and back.composer is not None
    np.testing.assert_allclose(back.query(["zyx"]), v.query(["zyx"]), rtol=1e-3)
    np.testing.assert_array_equal(back.counts, v.counts)


def test_a_links_sidecars_count_among_a_commands_inputs(tmp_path):
    from ctx2static.vectors.outputs import vector_files

    real = with_composer().save(tmp_path / "real" / "v.txt")
    link = tmp_path / "best"
    link.symlink_to(real)
    listed = {p.name for p in vector_files(link)}
    assert {"v.txt.meta.json", "v.txt.subwords.npy", "v.txt.tokenizer.json"} <= listed


def test_a_name_with_a_version_number_is_a_folder_not_a_word2vec_file(tmp_path):
    v = tiny()
    assert (v.save(tmp_path / "kd-0.07-10")).is_dir()
    assert (v.save(tmp_path / "v1.2")).is_dir()
    assert (v.save(tmp_path / "w.vec")).is_file()
    np.testing.assert_array_equal(Vectors.load(tmp_path / "kd-0.07-10").matrix, v.matrix)


def test_a_link_loop_is_one_line_not_a_traceback(tmp_path):
    from ctx2static.vectors.outputs import vector_files

    loop = tmp_path / "loop.txt"
    loop.symlink_to(loop)
    assert vector_files(loop)[0] == loop
    with pytest.raises(UserError, match="no such vectors file"):
        Vectors.load(loop)
