"""Corpora as users have them: folders, JSONL, CSV, Parquet, saved datasets; the split; the bounds."""

from __future__ import annotations

import gzip
import json
import logging
import random
import re
import shlex
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctx2static.errors import UserError
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Bounds, Corpus, CorpusConfig
from ctx2static.text.split import Split, sentences_of
from ctx2static.text.vocab import Vocab, VocabConfig

CORPORA_PAGE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "corpora.md"
DOCS = ["Dr. Smith paid $3.14 for it. He left.", "The U.S. Army came, e.g. on Monday. It rained!"]
DOC_SENTENCES = [
    ["dr", ".", "smith", "paid", "$", "3", ".", "14", "for", "it", "."],
    ["he", "left", "."],
    ["the", "u", ".", "s", ".", "army", "came", ",", "e", ".", "g", ".", "on", "monday", "."],
    ["it", "rained", "!"],
]


def _sentences(corpus: Corpus) -> list[list[str]]:
    return [toks for _, toks in corpus.sentences()]


def _write_records(folder: Path, docs: list[str], field: str = "text") -> dict[str, Path]:
    """The same documents as JSONL (gzipped), CSV, TSV and Parquet files."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "jsonl": folder / "d.jsonl.gz",
        "csv": folder / "d.csv",
        "tsv": folder / "d.tsv",
        "parquet": folder / "d.parquet",
    }
    with gzip.open(paths["jsonl"], "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"id": i, field: d}) + "\n" for i, d in enumerate(docs))
    quoted = ['"' + d.replace('"', '""') + '"' for d in docs]
    paths["csv"].write_text(f"id,{field}\n" + "".join(f"{i},{q}\n" for i, q in enumerate(quoted)))
    paths["tsv"].write_text(f"id\t{field}\n" + "".join(f"{i}\t{d}\n" for i, d in enumerate(docs)))
    pq.write_table(pa.table({"id": list(range(len(docs))), field: docs}), paths["parquet"])
    return paths


def test_record_formats_read_documents_split_into_sentences(tmp_path):
    for fmt, path in _write_records(tmp_path, DOCS, field="body").items():
        corpus = Corpus([path], CorpusConfig(text_field="body"))
        assert _sentences(corpus) == DOC_SENTENCES, fmt
        pids = [pid for pid, _ in corpus.sentences()]
        assert pids == [0, 0, 1, 1], fmt  # a record is a paragraph
        (entry,) = corpus.identity()
        assert entry["split"] == "sentences" and entry["text_field"] == "body", fmt


def test_split_as_a_person_would():
    text = (
        'Dr. Smith met Mrs. Jones in the U.S. capital. She said "Pi is 3.14." He nodded, e.g. twice. '
        "They left at 5 p.m. on Friday. Was it late? Yes!"
    )
    assert sentences_of(text) == [
        "Dr. Smith met Mrs. Jones in the U.S. capital.",
        'She said "Pi is 3.14."',
        "He nodded, e.g. twice.",
        "They left at 5 p.m. on Friday.",
        "Was it late?",
        "Yes!",
    ]


def test_folder_mixed_formats_in_name_order(tmp_path):
    d = tmp_path / "docs"
    (d / "sub").mkdir(parents=True)
    (d / "a.txt").write_text("the first line .\nthe second line .\n\na new paragraph .\n")
    with gzip.open(d / "sub" / "b.txt.gz", "wt") as fh:
        fh.write("a gzipped line .\n")
    (d / "c.jsonl").write_text(json.dumps({"text": DOCS[0]}) + "\n")
    (d / "notes.md").write_text("not a corpus file .\n")
    (d / ".hidden.txt").write_text("hidden .\n")
    corpus = Corpus([d])
    assert [Path(e["path"]).name for e in corpus.identity()] == ["a.txt", "c.jsonl", "b.txt.gz"]
    assert [e["split"] for e in corpus.identity()] == ["lines", "sentences", "lines"]
    got = list(corpus.sentences())
    assert [" ".join(t) for _, t in got] == [
        "the first line .", "the second line .", "a new paragraph .", *map(" ".join, DOC_SENTENCES[:2]),
        "a gzipped line .",
    ]  # fmt: skip
    assert [pid for pid, _ in got] == [0, 0, 1, 2, 2, 3]


def test_format_from_the_option_when_the_name_says_nothing(tmp_path):
    p = tmp_path / "dump.json"
    p.write_text(json.dumps({"text": DOCS[1]}) + "\n")
    with pytest.raises(UserError, match=r"dump\.json.*--corpus-format jsonl"):
        Corpus([p])
    assert _sentences(Corpus([p], CorpusConfig(corpus_format="jsonl"))) == DOC_SENTENCES[2:]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_missing_field_names_file_row_and_field(tmp_path, fmt):
    path = tmp_path / f"d.{fmt}"
    if fmt == "jsonl":
        path.write_text('{"text": "A doc."}\n{"title": "no text"}\n')
    elif fmt == "csv":
        path.write_text("id,text\n1,A doc.\n2\n")
    else:
        pq.write_table(pa.table({"text": ["A doc.", None]}), path)
    with pytest.raises(UserError) as exc:
        _sentences(Corpus([path]))
    msg = str(exc.value)
    assert str(path) in msg and "row 2" in msg and "'text'" in msg and "\n" not in msg


def _save_like_datasets(folder: Path, docs: list[str]) -> None:
    """The layout ``datasets``' save_to_disk writes: state.json naming Arrow stream files."""
    folder.mkdir()
    table = pa.table({"text": docs, "n": list(range(len(docs)))})
    with (
        pa.OSFile(str(folder / "data-00000-of-00001.arrow"), "wb") as fh,
        pa.ipc.new_stream(fh, table.schema) as w,
    ):
        w.write_table(table, max_chunksize=1)
    (folder / "state.json").write_text(
        json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}]})
    )
    (folder / "dataset_info.json").write_text("{}")


def test_saved_dataset_folder_read_without_datasets(tmp_path):
    _save_like_datasets(tmp_path / "ds", DOCS)
    assert _sentences(Corpus([tmp_path / "ds"])) == DOC_SENTENCES
    with pytest.raises(UserError, match=r"field 'n' holds int64"):
        _sentences(Corpus([tmp_path / "ds"], CorpusConfig(text_field="n")))


def test_save_to_disk_dataset(tmp_path):
    datasets = pytest.importorskip("datasets", reason="datasets (optional) is not installed")
    ds = datasets.Dataset.from_dict({"text": DOCS * 2}).select([3, 2])  # an index mapping, flattened on save
    ds.save_to_disk(str(tmp_path / "ds"))
    assert _sentences(Corpus([tmp_path / "ds"])) == DOC_SENTENCES[2:] + DOC_SENTENCES[:2]
    datasets.DatasetDict({"train": ds, "test": ds}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(UserError, match=r"DatasetDict \(splits: test, train\).*--corpus .*dd/test"):
        Corpus([tmp_path / "dd"])


def _prose(n: int, rng: random.Random) -> list[str]:
    words = "river stone village morning garden planet letter window council market".split()
    return [
        " ".join(rng.choice(words) for _ in range(rng.randint(6, 20))).capitalize() + "." for _ in range(n)
    ]


def test_auto_split_lines_for_split_text_sentences_otherwise(tmp_path):
    rng = random.Random(0)
    sents = _prose(300, rng)
    split = tmp_path / "split.txt"
    split.write_text("\n".join(sents) + "\n")
    raw = tmp_path / "raw.txt"  # a paragraph a line
    raw.write_text("\n".join(" ".join(sents[i : i + 5]) for i in range(0, 300, 5)) + "\n")
    wrapped = tmp_path / "wrapped.txt"  # prose wrapped at 60 characters, paragraphs between blank lines
    text = " ".join(sents[:40])
    wrapped.write_text(textwrap.fill(text, 60) + "\n\n" + textwrap.fill(text, 60) + "\n")
    bare = tmp_path / "bare.txt"  # no sentence punctuation at all: nothing to split on, so lines
    bare.write_text("\n".join(s.rstrip(".").lower() for s in sents) + "\n")
    got = {p.stem: Corpus([p]).identity()[0]["split"] for p in (split, raw, wrapped, bare)}
    assert got == {"split": "lines", "raw": "sentences", "wrapped": "sentences", "bare": "lines"}
    assert len(_sentences(Corpus([raw]))) == 300  # the documents split back into their sentences
    wrapped_sents = _sentences(Corpus([wrapped]))
    assert len(wrapped_sents) == 80 and all(t[-1] == "." for t in wrapped_sents)
    assert [pid for pid, _ in Corpus([wrapped]).sentences()][39:41] == [0, 1]  # the blank line


def test_split_none_keeps_a_document_whole_and_lines_reads_a_records_lines(tmp_path):
    path = _write_records(tmp_path, DOCS)["jsonl"]
    got = _sentences(Corpus([path], CorpusConfig(split=Split.NONE)))
    assert got == [DOC_SENTENCES[0] + DOC_SENTENCES[1], DOC_SENTENCES[2] + DOC_SENTENCES[3]]
    path = tmp_path / "lines.jsonl"
    path.write_text(json.dumps({"text": "one line .\ntwo line .\n\nnew paragraph ."}) + "\n")
    got = list(Corpus([path], CorpusConfig(split=Split.LINES)).sentences())
    want = [(0, "one line ."), (0, "two line ."), (1, "new paragraph .")]
    assert [(pid, " ".join(t)) for pid, t in got] == want


def test_long_line_is_cut_with_a_warning_and_sentences_are_bounded(tmp_path, caplog):
    rng = random.Random(1)
    words = [rng.choice(["alpha", "beta", "gamma", "delta", "river"]) for _ in range(600_000)]  # 3.8 MB
    path = tmp_path / "big.txt"
    path.write_text("a short first line .\n" + " ".join(words) + "\nthe end .\n")
    corpus = Corpus([path], CorpusConfig(split=Split.LINES))
    with caplog.at_level(logging.WARNING, logger="ctx2static"):
        got = _sentences(corpus)
        _sentences(corpus)  # reported once per corpus, not per pass
    assert max(map(len, got)) == 256
    assert sum(map(len, got)) == len(words) + 8  # every word kept
    assert got[0] == "a short first line .".split() and got[-1] == "the end .".split()
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 2
    assert f"{path}: 1 line(s) or document(s) longer than 1,048,576 characters" in warned[0]
    assert "(first at line 2)" in warned[0]
    cut = int(re.search(r": (\d+) sentence\(s\) longer than 256 words", warned[1]).group(1))
    pieces = -(-len(" ".join(words)) // (1 << 20))
    assert pieces <= cut <= 2 * pieces and "(first at line 2)" in warned[1]  # each piece of the line


def test_long_record_is_cut_and_each_piece_split(tmp_path, caplog):
    doc = " ".join(["This is one sentence of a long document."] * 40_000)  # 1.7 MB in one JSON row
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps({"text": "Short one."}) + "\n" + json.dumps({"text": doc}) + "\n")
    with caplog.at_level(logging.WARNING, logger="ctx2static"):
        got = _sentences(Corpus([path], bounds=Bounds(chars=1 << 20, words=256)))
    assert len(got) == 40_001 and max(map(len, got)) <= 9
    assert "row(s) longer than 1,048,576 characters" in caplog.text and "first at row 2" in caplog.text


# ------------------------------------------------------------------ the split in the cache identity


@pytest.fixture
def bert(tiny_models):
    return Teacher.load(str(tiny_models["bert"]))


def _extract(corpus: Corpus, teacher: Teacher, out: Path) -> dict:
    return extract(
        corpus, Vocab.build(corpus, VocabConfig(min_count=1)), teacher, out, ExtractConfig(shard_size=2)
    )


def _raw(tmp_path: Path) -> Path:
    path = tmp_path / "raw.txt"
    path.write_text("the cat sat on the mat . the dog chased the cat .\nthe river flows past the village .\n")
    return path


def test_split_is_in_the_identity_and_another_split_is_refused(bert, tmp_path):
    path = _raw(tmp_path)
    m = _extract(Corpus([path], CorpusConfig(split=Split.SENTENCES)), bert, tmp_path / "c")
    assert m["identity"]["corpus"][0]["split"] == "sentences" and m["totals"]["n_sentences"] == 3
    with pytest.raises(UserError, match=r"differs in corpus\.0\.split"):
        _extract(Corpus([path], CorpusConfig(split=Split.LINES)), bert, tmp_path / "c")
    assert _extract(Corpus([path], CorpusConfig(split=Split.SENTENCES)), bert, tmp_path / "c")["complete"]


def test_shards_are_bounded_in_words(bert, tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("".join(f"the cat sat on mat number {i} .\n" for i in range(9)))  # 8 words a line
    corpus = Corpus([path])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    m = extract(corpus, vocab, bert, tmp_path / "c", ExtractConfig(shard_size=100, shard_words=20))
    assert [r["n_words"] for r in m["shards"]] == [16, 16, 16, 16, 8]


def test_a_cache_of_the_previous_format_is_not_continued(bert, tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("".join(f"The cat sat on mat {i}. It was fine.\n" for i in range(6)))
    _extract(Corpus([path]), bert, tmp_path / "old")
    manifest = tmp_path / "old" / "manifest.json"
    saved = json.loads(manifest.read_text())
    saved["identity"]["format"] = 2  # written before the corpus reading and shard bounds were recorded
    manifest.write_text(json.dumps(saved))
    with pytest.raises(UserError, match=r"old: cache format 2 \(this ctx2static reads format 3\); re-run"):
        _extract(Corpus([path]), bert, tmp_path / "old")


# ------------------------------------------------------------------ the documentation's examples


def _documented_examples() -> list[list[str]]:
    lines = [ln for ln in CORPORA_PAGE.read_text().splitlines() if ln.startswith("ctx2static extract")]
    return [shlex.split(ln)[1:] for ln in lines]


def test_documented_corpus_examples_run(cli_main, tiny_models, tmp_path, monkeypatch):
    examples = _documented_examples()
    assert len(examples) >= 5
    monkeypatch.chdir(tmp_path)
    Path("books").mkdir()
    Path("books/a.txt").write_text("Call me Ishmael. Some years ago I went to sea.\n\nIt was cold.\n")
    with gzip.open("books/b.txt.gz", "wt") as fh:
        fh.write("one sentence a line .\nanother one .\n")
    paths = _write_records(Path("dumps"), DOCS, field="body")
    for fmt, p in paths.items():
        p.rename(Path(f"dump.{fmt}" + (".gz" if fmt == "jsonl" else "")))
    Path("posts.json").write_text(json.dumps({"text": DOCS[0]}) + "\n")
    _save_like_datasets(Path("saved_dataset"), DOCS)
    for args in examples:
        args = [str(tiny_models["bert"]) if a == "minilm" else a for a in args]
        args += ["--min-count", "1", "--threads", "1"]
        code, out, err = cli_main(*args)
        assert code == 0, (args, err)
        assert "sentences" in out
