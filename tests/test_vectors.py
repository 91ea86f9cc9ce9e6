import numpy as np
import pytest

from ctx2static.errors import UserError
from ctx2static.vectors import Vectors


def _vecs():
    rng = np.random.default_rng(0)
    return Vectors(
        ["the", "cat", "naïve"],
        rng.normal(size=(3, 5)).astype(np.float32),
        np.array([9, 4, 2]),
        {"student": "x"},
    )


@pytest.mark.parametrize("name", ["v.txt", "v.bin", "native"])
def test_roundtrip_all_formats(tmp_path, name):
    v = _vecs()
    v.save(tmp_path / name)
    w = Vectors.load(tmp_path / name)
    assert w.words == v.words
    np.testing.assert_allclose(w.matrix, v.matrix, rtol=1e-5)
    assert w.counts.tolist() == [9, 4, 2] and w.meta == {"student": "x"}


@pytest.mark.parametrize("name,binary", [("v.txt", False), ("v.bin", True)])
def test_gensim_loads_our_files(tmp_path, name, binary):
    gensim_models = pytest.importorskip("gensim.models")
    v = _vecs()
    v.save(tmp_path / name)
    kv = gensim_models.KeyedVectors.load_word2vec_format(str(tmp_path / name), binary=binary)
    assert list(kv.index_to_key) == v.words
    np.testing.assert_allclose(kv["naïve"], v["naïve"], rtol=1e-5)


def test_we_load_gensim_files(tmp_path):
    gensim_models = pytest.importorskip("gensim.models")
    kv = gensim_models.KeyedVectors(4)
    kv.add_vectors(["a", "b"], np.eye(2, 4, dtype=np.float32))
    kv.save_word2vec_format(str(tmp_path / "g.bin"), binary=True)
    w = Vectors.load(tmp_path / "g.bin")
    assert w.words == ["a", "b"] and w.matrix[1, 1] == 1.0


def test_ragged_row_truncated_and_bad_header(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("2 3\na 1 2 3\nb 1 2\n")
    with pytest.raises(UserError, match="line 3 has 2 values, expected 3"):
        Vectors.load(p)
    p.write_text("3 3\na 1 2 3\n")
    with pytest.raises(UserError, match="truncated"):
        Vectors.load(p)
    p.write_text("a 1 2 3\n")
    with pytest.raises(UserError, match="header"):
        Vectors.load(p)
    with pytest.raises(UserError, match="no such"):
        Vectors.load(tmp_path / "nope.txt")


def test_failed_save_keeps_old_file(tmp_path, monkeypatch):
    p = tmp_path / "v.bin"
    _vecs().save(p)
    before = p.read_bytes()

    class Exploding(np.ndarray):
        def astype(self, *a, **k):
            raise RuntimeError("disk full")

    bad = Vectors(["x", "y"], np.zeros((2, 5)))
    bad.matrix = bad.matrix.view(Exploding)
    with pytest.raises(RuntimeError, match="disk full"):
        bad.save(p)
    assert p.read_bytes() == before
    assert [f.name for f in tmp_path.iterdir() if f.name.endswith(".tmp")] == []


def test_most_similar():
    v = Vectors(["a", "b", "c"], np.array([[1, 0], [0.9, 0.1], [0, 1]], dtype=np.float32))
    assert v.most_similar("a", 1)[0][0] == "b"
