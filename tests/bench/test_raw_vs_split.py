"""bench/studies/raw_vs_split.py on a tiny shared folder: raw rows, the two studies, counts, table."""

from __future__ import annotations

import importlib.util
import json
import lzma
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from ctx2static.study.loader import load_study
from ctx2static.text.split import Split

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "studies" / "raw_vs_split.py"
LONG = " ".join(f"w{i}" for i in range(300)) + " ."  # over the reader's 256-word bound
SHARED = {
    "brown": "The jury said it did find that .\nMr. Smith won 3.5 dollars .\n\nA new paragraph here .\n",
    "sotu": "Fellow citizens of the Senate. We meet today.\n",
    "gcide": f"A small dog.\n\n{LONG}\n",
}


@pytest.fixture(scope="module")
def rvs():
    spec = importlib.util.spec_from_file_location("raw_vs_split", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def prepared(rvs, tmp_path) -> Path:
    shared, out = tmp_path / "shared", tmp_path / "out"
    shared.mkdir()
    for name, text in SHARED.items():
        with lzma.open(shared / f"{name}.txt.xz", "wt", encoding="utf-8") as f:
            f.write(text)
    rvs.prepare(Namespace(shared=shared, out=out))
    return out


def test_prepare_writes_a_row_per_paragraph_with_its_lines_joined(prepared):
    with lzma.open(prepared / "raw.jsonl.xz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert rows == [
        {"source": "brown", "text": "The jury said it did find that . Mr. Smith won 3.5 dollars ."},
        {"source": "brown", "text": "A new paragraph here ."},
        {"source": "sotu", "text": "Fellow citizens of the Senate. We meet today."},
        {"source": "gcide", "text": "A small dog."},
        {"source": "gcide", "text": LONG},
    ]


def test_the_two_studies_differ_only_in_how_the_corpus_is_read(prepared):
    lines, sentences = (load_study(prepared / f"{split}.toml") for split in ("lines", "sentences"))
    shared = prepared.parent / "shared"
    assert lines.corpus.files == tuple((shared / f"{n}.txt.xz").resolve() for n in ("brown", "sotu", "gcide"))
    assert sentences.corpus.files == ((prepared / "raw.jsonl.xz").resolve(),)
    assert (lines.corpus.text.split, sentences.corpus.text.split) == (Split.LINES, Split.SENTENCES)
    assert lines.teachers == sentences.teachers and lines.students == sentences.students
    assert lines.eval == sentences.eval
    teacher = lines.teachers["minilm"]
    assert (teacher.model, teacher.teacher.precision, teacher.teacher.threads) == ("minilm", "int8", 2)
    assert teacher.extract.paragraph
    contexts = {s.name: (s.student, getattr(s.config, "context", None)) for s in lines.students}
    assert contexts == {"ase": ("ase", None), "x2static-sent": ("x2static", "sent"),
                        "x2static-para": ("x2static", "para")}  # fmt: skip


def test_count_reads_both_ways_as_the_cache_would(rvs, prepared):
    counts = rvs.count_sources(prepared)
    sotu, gcide = counts["sotu"], counts["gcide"]
    assert (sotu.lines.sentences, sotu.split.sentences, sotu.same, sotu.shipped) == (1, 2, 0, 1)
    assert sotu.lines.tokens == sotu.split.tokens == 10
    assert gcide.paragraphs == 2 and gcide.lines.long == gcide.split.long == 1
    assert gcide.lines.sentences == 1 + 2  # the long sentence counts as its two pieces
    table = rvs.count_table(counts)
    assert "| sotu | 1 | 1 | 2 | +1 (+100.00%) | 0.0% | 10 | 10 | +0 (+0.00%) |" in table
    assert "| all | 5 |" in table


def _scores(folder: Path, name: str, avg5: float, simlex: float) -> None:
    record = folder / "eval" / f"{name}.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    rows = [("simlex999", "similarity", "spearman", simlex), ("avg5", "similarity", "mean spearman", avg5)]
    scores = [dict(benchmark=b, family=f, metric=m, score=s, covered=9, total=10) for b, f, m, s in rows]
    record.write_text(json.dumps({"hash": "x", "scores": scores}))


def test_table_sets_the_studies_side_by_side_in_its_own_section(rvs, tmp_path):
    for name in rvs.STUDENTS:
        _scores(tmp_path / "lines", name, 70.0, 40.0)
        _scores(tmp_path / "sentences", name, 69.6, 41.3)
    md = tmp_path / "results.md"
    md.write_text("# Title\n\nintro\n\n## Scores\n\nold table\n\n## Reader speed on raw.jsonl.xz\n\nkept\n")
    rvs.table(Namespace(out=tmp_path, md=md))
    text = md.read_text()
    assert "| ase | 70.0 | 69.6 | -0.4 |" in text
    assert "| simlex999 | spearman | 40.0 | 41.3 | +1.3 |" in text
    assert "old table" not in text and text.count("## Scores") == 1
    assert text.startswith("# Title\n\nintro\n") and text.endswith(
        "## Reader speed on raw.jsonl.xz\n\nkept\n"
    )


def test_speed_reads_the_raw_rows_and_writes_its_section(rvs, prepared):
    md = prepared / "results.md"
    rvs.speed(Namespace(out=prepared, md=md, repeat=1))
    text = md.read_text()
    words = sum(len(t.split()) for t in SHARED.values())
    assert f"{words:,} whitespace words" in text and "words/s wall" in text
