import gzip
import lzma

import numpy as np
import pytest

from ctx2static.errors import UserError
from ctx2static.retrofit.config import Method, RetrofitConfig
from ctx2static.retrofit.lexicon import (
    BUNDLED,
    LEXICON_FORMAT,
    build_graph,
    check_links,
    read_lexicon,
    resolve_lexicon,
)
from ctx2static.retrofit.solver import retrofit_vectors
from ctx2static.vectors import Vectors


def _edges(graph, words):
    a = graph.adjacency.tocoo()
    return sorted((words[i], words[j]) for i, j in zip(a.row, a.col, strict=True))


@pytest.mark.parametrize("suffix,opener", [(".txt", open), (".txt.gz", gzip.open), (".txt.xz", lzma.open)])
def test_reads_plain_and_compressed(tmp_path, suffix, opener):
    p = tmp_path / f"lex{suffix}"
    with opener(p, "wb") as fh:
        fh.write("big large  huge \n \t\nlonely\nnaïve simple\tartless\r\n\x1d \x16\n".encode())
    assert list(read_lexicon(p)) == [
        ("big", ["large", "huge"]),
        ("lonely", []),
        ("naïve", ["simple", "artless"]),
        ("\x1d", ["\x16"]),  # PPDB-XL line 19503: control characters are words, not separators
    ]


@pytest.mark.parametrize(
    "content,message",
    [
        (b"big large\n\xff\xfe bad\n", "line 2 is not valid UTF-8"),
        (b"big large\nok fine\n\x00\x01\x02\n", "line 3 holds a NUL byte"),
        (b"big large\n  large big\n", "line 2 has an empty headword"),
    ],
)
def test_malformed_lines_name_the_line(tmp_path, content, message):
    p = tmp_path / "bad.txt"
    p.write_bytes(content)
    with pytest.raises(UserError, match=message):
        list(read_lexicon(p))


def test_corrupt_archive_and_missing_file(tmp_path):
    p = tmp_path / "bad.xz"
    p.write_bytes(b"not xz at all")
    with pytest.raises(UserError, match="cannot decompress"):
        list(read_lexicon(p))
    with pytest.raises(UserError, match="no such lexicon file; give a path or one of: wordnet"):
        resolve_lexicon(tmp_path / "nope.txt")


def test_a_folder_as_a_lexicon_says_to_give_its_files(tmp_path, cli_main):
    (tmp_path / "lexicons").mkdir()
    (tmp_path / "v.txt").write_text("2 2\nking 1 0\nqueen 0 1\n")
    code, _, err = cli_main(
        "retrofit", tmp_path / "v.txt", "-l", tmp_path / "lexicons", "-o", tmp_path / "r.txt"
    )
    assert code == 2 and err.count("\n") == 1
    assert (
        "lexicons: is a folder, not a lexicon file; give each lexicon file by itself, one option per" in err
    )


def test_bundled_wordnet_short_name():
    assert resolve_lexicon("wordnet") == BUNDLED["wordnet"]
    head, nbrs = next(iter(read_lexicon("wordnet")))
    assert head == "'s_gravenhage" and "the_hague" in nbrs


def test_graph_union_directed_and_filtered(tmp_path):
    one = tmp_path / "one.txt"
    one.write_text("big large huge big\nsmall little\nzzz big\n")
    two = tmp_path / "two.txt"
    two.write_text("big large\nlarge big\n")
    words = ["big", "large", "small", "little"]
    g = build_graph(words, [one, two])
    # union, deduplicated; 'huge'/'zzz' out of vocabulary, self-loop dropped; directed as given
    assert _edges(g, words) == [("big", "large"), ("large", "big"), ("small", "little")]
    assert g.moving.tolist() == [True, True, True, False]
    assert g.stats() == {"edges": 3, "words_with_neighbours": 3}


def test_case_folding_only_for_lowercased_vocabulary(tmp_path):
    lex = tmp_path / "lex.txt"
    lex.write_text("Big Large\n")
    lower = build_graph(["big", "large"], [lex])
    assert lower.lowercase and lower.adjacency.nnz == 1
    cased = build_graph(["big", "large", "Paris"], [lex])
    assert not cased.lowercase and cased.adjacency.nnz == 0
    exact = build_graph(["Big", "Large"], [lex])
    assert np.array_equal(exact.adjacency.toarray(), [[0, 1], [0, 0]])


PASSWD = (
    "root:x:0:0:root:/root:/bin/bash\n"
    "gnats:x:41:41:Gnats Bug-Reporting System (admin):/var/lib/gnats:/usr/sbin/nologin\n"
)


def test_a_lexicon_that_links_no_two_words_is_named_and_all_such_are_refused(tmp_path, cli_main, caplog):
    words = ["big", "large", "small", "root", "bin"]
    Vectors(words, np.random.default_rng(0).normal(size=(5, 3))).save(tmp_path / "v")
    (tmp_path / "passwd").write_text(PASSWD)  # as /etc/passwd: no 'word nbr' line of the vocabulary
    (tmp_path / "lex.txt").write_text("big large\n")
    out = tmp_path / "r"
    code, _, err = cli_main("retrofit", tmp_path / "v", "-l", tmp_path / "passwd", "-o", out)
    assert code == 2 and not out.exists()
    assert err.strip().splitlines()[-1] == (
        f"error: {tmp_path / 'passwd'}: no line links two words of the vectors, so nothing would move; "
        f"a lexicon is {LEXICON_FORMAT}; matching is exact unless the vocabulary is all lower case"
    )
    code, _, err = cli_main("retrofit", tmp_path / "v", "-l", tmp_path / "passwd", "-l", tmp_path / "lex.txt",
                            "-o", out)  # fmt: skip
    assert code == 0 and out.is_dir()
    assert f"{tmp_path / 'passwd'}: no line links two words of the vectors; it adds nothing" in caplog.text
    assert f"{tmp_path / 'lex.txt'}: no line" not in caplog.text
    # attract-repel: synonyms and antonyms are checked together; an antonym lexicon linking nothing is named
    syn, ant = tmp_path / "lex.txt", tmp_path / "passwd"
    caplog.clear()
    check_links([build_graph(words, [syn]), build_graph(words, [ant])])
    assert [m.split(";")[0] for m in caplog.messages] == [f"{ant}: no line links two words of the vectors"]
    with pytest.raises(UserError, match="passwd, .*passwd: no line links two words"):
        check_links([build_graph(words, [ant]), build_graph(words, [ant])])
    with pytest.raises(UserError, match="passwd: no line links two words"):
        retrofit_vectors(
            Vectors.load(tmp_path / "v"), [ant], RetrofitConfig(method=Method.ATTRACT_REPEL), [ant]
        )


def test_lexicon_words_in_nfd_link_the_nfc_vocabulary(tmp_path):
    import unicodedata

    path = tmp_path / "nfd.txt"
    path.write_text(unicodedata.normalize("NFD", "café thé\nété hiver\n"), encoding="utf-8")
    assert list(read_lexicon(path)) == [("café", ["thé"]), ("été", ["hiver"])]


def test_a_table_too_large_to_retrofit_is_refused_before_the_lexicon_is_read(monkeypatch):
    from ctx2static import memory

    monkeypatch.setattr(memory, "available_bytes", lambda: 1 << 20)
    vecs = Vectors([f"w{i}" for i in range(1000)], np.ones((1000, 100), np.float32))
    with pytest.raises(
        UserError, match=r"^retrofitting 1,000 words x 100 dims needs about 1.53 MiB .*export --dims"
    ):
        retrofit_vectors(vecs, ["no-such-lexicon"], RetrofitConfig())
