"""`export`: word2vec text/binary and a Model2Vec folder that model2vec itself loads."""

import numpy as np
import pytest

from ctx2static.errors import UserError
from ctx2static.export import ExportConfig, Format, export_vectors
from ctx2static.vectors import Vectors

RAW = ExportConfig(normalize=False)  # the mean itself, comparable with the rows


@pytest.fixture
def vectors() -> Vectors:
    words = ["the", "cat", "don't", "half-brothers", ","]
    return Vectors(words, np.arange(15, dtype=np.float32).reshape(5, 3) + 1, np.arange(5, 0, -1))


@pytest.mark.parametrize("fmt,name", [(Format.WORD2VEC, "v.txt"), (Format.WORD2VEC_BIN, "v.bin")])
def test_word2vec_formats_round_trip(tmp_path, vectors, fmt, name):
    path = export_vectors(vectors, fmt, tmp_path / name)
    back = Vectors.load(path)
    assert back.words == vectors.words
    np.testing.assert_allclose(back.matrix, vectors.matrix)


def test_a_suffix_that_contradicts_the_format_is_refused(tmp_path, vectors):
    with pytest.raises(UserError, match="writes a .bin file"):
        export_vectors(vectors, Format.WORD2VEC_BIN, tmp_path / "v.txt")
    with pytest.raises(UserError, match="not ending in .bin"):
        export_vectors(vectors, Format.WORD2VEC, tmp_path / "v.bin")


def test_model2vec_folder_loads_in_model2vec_and_encodes_our_vectors(tmp_path, vectors):
    model2vec = pytest.importorskip("model2vec")
    out = export_vectors(vectors, Format.MODEL2VEC, tmp_path / "m2v", config=RAW)
    model = model2vec.StaticModel.from_pretrained(out)
    np.testing.assert_allclose(model.encode(["cat"])[0], vectors["cat"])
    # split as our corpus reader: case folded, punctuation apart, inner apostrophes and hyphens kept;
    # unknown words are dropped, so the sentence vector is the mean of the known words
    got = model.encode(["The CAT, don't half-brothers zebra!"])[0]
    want = np.mean([vectors[w] for w in ["the", "cat", ",", "don't", "half-brothers"]], axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_model2vec_keeps_case_when_the_vocabulary_has_upper_case(tmp_path):
    model2vec = pytest.importorskip("model2vec")
    v = Vectors(["Paris", "paris"], np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32))
    out = export_vectors(v, Format.MODEL2VEC, tmp_path / "m", config=RAW)
    model = model2vec.StaticModel.from_pretrained(out)
    np.testing.assert_allclose(model.encode(["Paris"])[0], [1.0, 0.0])
    np.testing.assert_allclose(model.encode(["paris"])[0], [0.0, 1.0])


def test_export_command(tmp_path, vectors, cli_main):
    src = vectors.save(tmp_path / "v.txt")
    args = ["export", src, "--format", "word2vec-bin"]
    code, _, err = cli_main(*args, "--out", tmp_path / "v.bin")
    assert code == 0, err
    assert Vectors.load(tmp_path / "v.bin").words == vectors.words
    code, _, err = cli_main(*args, "--out", tmp_path / "w.txt")
    assert code == 2 and err.count("\n") == 1 and "writes a .bin file" in err
