import errno
import os

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


@pytest.mark.parametrize("name", ["v.txt", "v.bin", "native"])
def test_a_save_that_fails_keeps_the_old_vectors_and_leaves_no_temp(tmp_path, monkeypatch, name):
    _vecs().save(tmp_path / name)
    before = _tree(tmp_path)

    def disk_full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)  # the disk fills up while the new vectors are written
    with pytest.raises(UserError, match="no space left on the device"):
        Vectors(["x", "y"], np.zeros((2, 5))).save(tmp_path / name)
    monkeypatch.undo()
    assert _tree(tmp_path) == before
    assert Vectors.load(tmp_path / name).words == _vecs().words


def _tree(root):
    """Every file under ``root`` and its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_most_similar():
    v = Vectors(["a", "b", "c"], np.array([[1, 0], [0.9, 0.1], [0, 1]], dtype=np.float32))
    assert v.most_similar("a", 1)[0][0] == "b"


@pytest.mark.parametrize(
    "name,stored,mmap",
    [("v.txt", None, False), ("v.bin", None, False), ("native", None, False), ("native", None, True),
     ("native", np.float64, False), ("native", np.float64, True), ("native", np.dtype(">f4"), True)],
)  # fmt: skip
def test_every_load_path_gives_float32(tmp_path, name, stored, mmap):
    v = _vecs()
    v.save(tmp_path / name)
    if stored is not None:  # a .npy of another dtype (written by numpy or by hand)
        np.save(tmp_path / name / "vectors.npy", v.matrix.astype(stored))
    w = Vectors.load(tmp_path / name, mmap=mmap)
    assert w.matrix.dtype == np.float32
    np.testing.assert_allclose(w.matrix, v.matrix, rtol=1e-5)
    assert isinstance(w.matrix, np.memmap) == (mmap and stored is None)  # a float32 file stays mapped


def test_an_assigned_matrix_is_float32():
    v = _vecs()
    v.matrix = np.ones((3, 5), dtype=np.float64)
    assert v.matrix.dtype == np.float32


def test_most_similar_computes_the_unit_rows_once_until_the_matrix_is_assigned(monkeypatch):
    v = _vecs()
    first = v.most_similar("the", 2)
    calls = []
    norm = np.linalg.norm

    def counted(x, *args, **kwargs):
        calls.append(np.shape(x))
        return norm(x, *args, **kwargs)

    monkeypatch.setattr(np.linalg, "norm", counted)
    assert v.most_similar("the", 2) == first  # unchanged results
    assert (3, 5) not in calls  # the whole matrix was not normalised again
    v.matrix = v.matrix * -1.0  # a new matrix: its unit rows are computed afresh
    assert [w for w, _ in v.most_similar("the", 2)] == [w for w, _ in first]
    assert (3, 5) in calls
    with pytest.raises(ValueError, match="read-only"):
        v.unit()[0, 0] = 1.0  # the cached rows cannot be changed behind the table's back


def test_a_repr_is_one_short_line():
    v = Vectors(
        [f"w{i}" for i in range(9494)], np.zeros((9494, 4)), meta={"student": "x2static", "teacher": "minilm"}
    )
    assert repr(v) == "Vectors(9,494 words x 4, student 'x2static', teacher 'minilm')"
    assert repr(_vecs()) == "Vectors(3 words x 5, student 'x')"
