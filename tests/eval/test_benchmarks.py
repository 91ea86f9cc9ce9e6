import re
from collections import Counter

import pytest

from ctx2static.errors import UserError
from ctx2static.eval.benchmarks import (
    SEMEVAL2012,
    Family,
    load_benchmarks,
    read_analogy,
    read_categorization,
    read_similarity,
)


def test_bundled_sets_load_with_their_documented_sizes():
    sizes = {b.name: b for b in load_benchmarks()}
    assert {n: len(sizes[n].pairs) for n in ("ws353", "simlex999", "men3k", "rw", "rg65", "mturk287")} == {
        "ws353": 353,
        "simlex999": 999,
        "men3k": 3000,
        "rw": 2034,
        "rg65": 65,
        "mturk287": 287,
    }
    google = sizes["google"]
    assert len(google.questions) == 19544 and len(set(google.sections)) == 14
    assert Counter(google.sections)["gram8-plural"] == 1332
    assert len(sizes["msr"].questions) == 8000
    assert "semeval2012" not in sizes  # no gold ratings in this copy: out of the default suite
    semeval = read_analogy(SEMEVAL2012)
    assert semeval.per_section and len(semeval.questions) == 10014 and len(set(semeval.sections)) == 79
    assert ("capture", "elusive", "consume", "edible") in semeval.questions  # field whitespace stripped
    # AP has one empty word per category in the bundled copy: 423 rows, 402 items, 21 classes
    assert (len(sizes["ap"].items), len(set(sizes["ap"].labels))) == (402, 21)
    assert (len(sizes["battig"].items), len(set(sizes["battig"].labels))) == (5231, 56)
    assert (len(sizes["essli2008"].items), len(set(sizes["essli2008"].labels))) == (45, 9)
    assert "lapis lazuli" in sizes["battig"].items


def test_families_and_extra_files(tmp_path):
    (tmp_path / "mine.txt").write_text("a b 1\nc d 2.5\n")
    benches = load_benchmarks((Family.CATEGORIZATION,), {Family.SIMILARITY: [tmp_path / "mine.txt"]})
    assert [b.name for b in benches] == ["mine", "ap", "battig", "essli2008"]
    assert [
        b.name for b in load_benchmarks(extra={Family.SIMILARITY: [tmp_path / "mine.txt"]}, bundled=False)
    ] == ["mine"]


@pytest.mark.parametrize(
    "reader,name,text,message",
    [
        (read_similarity, "s.txt", "a\tb\t1\nc\td\n", "s.txt: line 2 has 2 fields"),
        (read_similarity, "s.txt", "a\tb\t1\n\nc\td\thigh\n", "s.txt: line 3: score 'high' is not a number"),
        (read_similarity, "s.txt", "\n\n", "s.txt: no word pairs found"),
        (read_analogy, "g.txt", ": sec\na b c d\na b c\n", "g.txt: line 3 has 3 words"),
        (
            read_analogy,
            "e.csv",
            ",type,word1,word2,word3\n0,1a,a,b,c\n",
            "e.csv: line 1: CSV header lacks column(s) target",
        ),
        (read_analogy, "e.csv", ",type,word1,word2,word3,target\n0,1a,a,b,c\n", "e.csv: line 2 has 5 fields"),
        (
            read_analogy,
            "e.csv",
            ",type,word1,word2,word3,target\n0,1a,a,,c,d\n",
            "e.csv: line 2 has an empty word2",
        ),
        (
            read_categorization,
            "c.csv",
            ",category,word\n0,x,a\n1,,b\n",
            "c.csv: line 3 has an empty category",
        ),
        (
            read_categorization,
            "c.csv",
            "category;word\nx;a\n",
            "c.csv: line 1: CSV header lacks column(s) category, word",
        ),
    ],
)
def test_malformed_files_name_the_file_and_line(tmp_path, reader, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(UserError, match=re.escape(message)):
        reader(tmp_path / name)


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(UserError, match="nope.txt: no such benchmark file"):
        read_similarity(tmp_path / "nope.txt")
    (tmp_path / "bin.txt").write_bytes(b"a b \xff\n")
    with pytest.raises(UserError, match="bin.txt: line 1 is not valid UTF-8"):
        read_similarity(tmp_path / "bin.txt")


def test_duplicate_benchmark_names_are_refused(tmp_path):
    (tmp_path / "ws353.txt").write_text("a b 1\n")
    with pytest.raises(UserError, match="ws353.txt: a benchmark named 'ws353' is already loaded"):
        load_benchmarks((Family.SIMILARITY,), {Family.SIMILARITY: [tmp_path / "ws353.txt"]})
