"""Looking vectors up: most_similar for words, vectors and analogies, similarity, gensim, `neighbours`."""

import numpy as np
import pytest

from ctx2static.students.registry import fit_cache_student
from ctx2static.vectors import Vectors

# dimensions: royal, male, female, fruit
TABLE = {
    "king": [1, 1, 0, 0],
    "queen": [1, 0, 1, 0],
    "man": [0, 1, 0, 0],
    "woman": [0, 0, 1, 0],
    "apple": [0, 0, 0, 1],
    "pear": [0, 0.1, 0, 1],
}


@pytest.fixture
def table() -> Vectors:
    return Vectors(list(TABLE), np.array(list(TABLE.values()), dtype=np.float32) * 3)


def test_analogy_by_hand(table):
    (word, score), *_ = table.most_similar(["king", "woman"], topn=3, negative=["man"])
    t = np.array([1, 1, 0, 0]) / np.sqrt(2) + np.array([0, 0, 1, 0]) - np.array([0, 1, 0, 0])
    assert word == "queen"
    assert score == pytest.approx(t @ np.array([1, 0, 1, 0]) / np.sqrt(2) / np.linalg.norm(t), rel=1e-6)


def test_a_word_a_vector_and_exclusions(table):
    assert [w for w, _ in table.most_similar("apple", 2)] == ["pear", "king"]  # ties: in table order
    assert table.most_similar(np.array([0, 0, 0, 1.0]), 1) == [("apple", pytest.approx(1.0))]
    got = table.most_similar([np.array([1.0, 0, 0, 0]), "man"], 6)
    assert "man" not in [w for w, _ in got] and len(got) == 5  # the word given is never an answer
    assert table.similarity("king", "queen") == pytest.approx(0.5)
    with pytest.raises(KeyError, match="prince"):
        table.most_similar("prince")
    with pytest.raises(ValueError, match="shape"):
        table.most_similar(np.ones(3))


def test_most_similar_agrees_with_gensim():
    pytest.importorskip("gensim")
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(200)]
    v = Vectors(words, rng.normal(size=(200, 12)), np.arange(200, 0, -1))
    kv = v.to_gensim()
    assert kv.index_to_key == words and kv.get_vecattr("w3", "count") == 197
    np.testing.assert_array_equal(kv["w7"], v["w7"])
    for pos, neg in [(["w1"], []), (["w1", "w2"], ["w3"]), (["w5", "w9"], ["w4", "w8"])]:
        ours = v.most_similar(pos, 5, negative=neg)
        theirs = kv.most_similar(positive=pos, negative=neg, topn=5)
        assert [w for w, _ in ours] == [w for w, _ in theirs]
        np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], rtol=1e-5)


def test_neighbours_command(table, tmp_path, cli_main):
    path = table.save(tmp_path / "t.txt")
    code, out, err = cli_main("neighbours", path, "apple", "--analogy", "man", "king", "woman", "-n", "2")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["apple", "man:king::woman:?"]
    assert lines[1].split()[0] == "pear" and lines[1].split()[2] == "queen"
    assert len(lines) == 3 and "*" not in out
    code, out, err = cli_main("neighbours", path, "prince")
    assert code == 2 and err.count("\n") == 1 and "'prince' is not among its 6 words" in err
    assert cli_main("neighbours", path)[0] == 2


def test_neighbours_composes_unknown_words_and_marks_them(tiny_caches, tmp_path, cli_main):
    path = fit_cache_student("ase", tiny_caches["bert"]).save(tmp_path / "v")
    code, out, err = cli_main("neighbours", path, "catsed", "cat", "-n", "3")
    assert code == 0, err
    assert out.splitlines()[0].split() == ["catsed*", "cat"]
    assert out.rstrip().endswith("* not in the table: composed from the teacher's subwords")


def test_a_second_table_given_as_a_word_is_one_line_naming_its_own_command(
    tiny_caches, tmp_path, cli_main, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    ase = fit_cache_student("ase", tiny_caches["bert"])
    ase.save(tmp_path / "ase")
    ase.save(tmp_path / "ase+ar")
    capsys.readouterr()  # the fit's log lines
    code, out, err = cli_main("neighbours", "ase/", "ase+ar/", "cat")  # a name that composes
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: ase+ar/: a path where a word is expected")
    assert err.rstrip().endswith("run ctx2static neighbours ase+ar/ cat")
    assert cli_main("neighbours", "ase/", "ase+ar", "cat")[0] == 2  # an existing folder, no slash
