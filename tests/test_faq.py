"""The FAQ quotes the tool's own error lines: each case here runs the command and finds its line there.

When a message changes, this fails and names the line to copy into ``docs/faq.md``.
"""

from pathlib import Path

import pytest

FAQ = Path(__file__).resolve().parents[1] / "docs" / "faq.md"

CASES = {  # arguments as the FAQ's example ran them (relative names, in an empty folder)
    "a misspelt teacher": ["extract", "--corpus", "{corpus}", "--teacher", "minlm", "--out", "c"],
    "a missing corpus": ["extract", "--corpus", "nothere.txt", "--teacher", "{teacher}", "--out", "c"],
    "an empty corpus": ["extract", "--corpus", "empty.txt", "--teacher", "{teacher}", "--out", "c"],
    "a misspelt student": ["fit-student", "-s", "x2statc", "--cache", "cache", "-o", "b/"],
    "no input": ["fit-student", "-s", "x2static", "-o", "b/"],
    "not a cache": ["fit-student", "-s", "x2static", "--cache", "nocache", "-o", "b/"],
    "a missing lexicon": ["retrofit", "s.txt", "-l", "nolex", "-o", "r.txt"],
    "a format that is not one": ["export", "s.txt", "--format", "gensim", "-o", "e.txt"],
    "a teacher by its model's name": [
        "extract",
        "--corpus",
        "{corpus}",
        "--teacher",
        "MiniLM-L6",
        "--out",
        "c",
    ],
    "a folder of lexicons": ["retrofit", "s.txt", "-l", "lexicons", "-o", "r.txt"],
    "a second table as a word": ["neighbours", "s.txt", "ase+ar/", "good"],
    "words to add without a composer": [
        "export",
        "s.txt",
        "--format",
        "word2vec",
        "--add-words",
        "w.txt",
        "-o",
        "e",
    ],
}


@pytest.mark.parametrize("case", CASES)
def test_the_faq_quotes_the_line_printed(case, cli_main, tiny_models, mini_corpus, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "cache").mkdir()
    (tmp_path / "lexicons").mkdir()
    (tmp_path / "ase+ar").mkdir()
    (tmp_path / "s.txt").write_text("2 3\nking 1 0 0\nqueen 0 1 0\n")
    (tmp_path / "w.txt").write_text("king\nriverbank\n")
    fill = {"{corpus}": str(mini_corpus), "{teacher}": str(tiny_models["bert"])}
    code, _, err = cli_main(*(fill.get(a, a) for a in CASES[case]))
    line = err.strip().splitlines()[-1]
    assert code == 2, err
    assert f"**`{line}`**" in FAQ.read_text(), f"docs/faq.md lacks the line now printed: {line}"


def test_the_faq_quotes_the_refused_replacement(cli_main, tiny_caches, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli_main("fit-student", "-s", "ase", "--cache", tiny_caches["bert"], "-o", "v/")[0] == 0
    code, _, err = cli_main("fit-student", "-s", "x2static", "--cache", tiny_caches["bert"], "-o", "v/")
    line = err.strip().splitlines()[-1]
    assert code == 2 and f"**`{line}`**" in FAQ.read_text(), f"docs/faq.md lacks the line now printed: {line}"


def test_a_folder_given_to_gensim_is_in_the_faq_with_a_fix_that_loads(cli_main, tmp_path, monkeypatch):
    gensim = pytest.importorskip("gensim.models")
    import numpy as np

    from ctx2static.vectors import Vectors

    monkeypatch.chdir(tmp_path)
    rows = np.array([[1.0, 0.0, 0.2], [0.9, 0.1, 0.3], [0.0, 1.0, 0.0]], np.float32)
    Vectors(["king", "queen", "road"], rows).save("ase")
    with pytest.raises(IsADirectoryError) as raised:
        gensim.KeyedVectors.load_word2vec_format("ase")
    shown = f"IsADirectoryError: {raised.value}".replace("'ase'", "'ase-m2v'")
    assert f"`{shown}`" in FAQ.read_text(), f"docs/faq.md lacks gensim's line: {shown}"
    code, _, err = cli_main("export", "ase/", "--format", "word2vec", "--no-eval", "--out", "ase.txt")
    assert code == 0, err
    assert "`ctx2static export ase/ --format word2vec --out ase.txt`" in FAQ.read_text()
    assert gensim.KeyedVectors.load_word2vec_format("ase.txt").most_similar("king")[0][0] == "queen"
