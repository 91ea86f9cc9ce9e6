"""Corpora as a careless or hostile user hands them over: memory bounded by the budget, not the file;
records that would swallow a file, corrupt archives and unreadable JSON refused in one line naming
the file and row; NFD text read as NFC; upper-case suffixes, byte order marks, a file named twice."""

from __future__ import annotations

import bz2
import gzip
import json
import logging
import lzma
import os
import tracemalloc
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from ctx2static.errors import UserError
from ctx2static.fileio.reading import read_lines
from ctx2static.text.corpus import PARAGRAPH_LINES, Bounds, Corpus, CorpusConfig
from ctx2static.text.encoded import encode_corpus
from ctx2static.text.sources import find_sources
from ctx2static.text.split import Split
from ctx2static.text.vocab import Vocab, VocabConfig

SMALL = Bounds(chars=1 << 16, words=256)  # a 64 KiB budget, so that a few MiB of text is "huge"


def _peak(run) -> tuple[object, int]:
    """``run()``'s result and the most bytes Python held while it ran (tracemalloc)."""
    tracemalloc.start()
    try:
        out = run()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _count(corpus: Corpus) -> tuple[int, int, set[int]]:
    """Sentences, words and paragraph ids, without keeping the sentences."""
    n = words = 0
    pids = set()
    for pid, toks in corpus.sentences():
        n, words = n + 1, words + len(toks)
        pids.add(pid)
    return n, words, pids


# ------------------------------------------------------------------ memory: bounded by the budget


def test_lines_without_blank_lines_are_not_held_whole(tmp_path):
    path = tmp_path / "short.txt"
    lines = 60_000  # 1.4 MB; held whole, the paragraph's tuples alone take about 12 MB
    path.write_text("".join(f"line {i} is here .\n" for i in range(lines)))
    corpus = Corpus([path], CorpusConfig(split=Split.LINES), SMALL)
    (n, words, pids), peak = _peak(lambda: _count(corpus))
    assert (n, words, pids) == (lines, 5 * lines, {0})  # one paragraph, every sentence, one id
    assert peak < 3 << 20, f"{peak:,} bytes held"
    pieces = [len(para) for _, para in corpus._paragraphs(corpus.readings[0])]
    assert len(pieces) > 1 and max(pieces) <= PARAGRAPH_LINES and sum(pieces) == lines


def test_one_line_without_a_newline_is_read_in_pieces_of_the_budget(tmp_path, caplog):
    path = tmp_path / "one.txt"
    path.write_text("word " * 400_000)  # 2 MB, no newline: 31 pieces of 64 KiB
    corpus = Corpus([path], bounds=SMALL)
    with caplog.at_level(logging.WARNING, logger="ctx2static"):
        (_, words, _), peak = _peak(lambda: _count(corpus))
    assert words == 400_000 and peak < 3 << 20, f"{peak:,} bytes held"
    assert "1 line(s) or document(s) longer than 65,536 characters" in caplog.text


class _Sentences:
    """Stands for a Corpus in encode_corpus: ``n`` one-word sentences, 10 to a paragraph."""

    def __init__(self, n: int) -> None:
        self.n = n

    def sentences(self):
        return ((i // 10, ["w"]) for i in range(self.n))


def test_encoding_keeps_sentence_offsets_out_of_python_lists(tmp_path):
    n = 400_000  # in lists, offsets and paragraph ids took about 28 MB
    vocab = Vocab(["w"], np.array([n]))
    enc, peak = _peak(lambda: encode_corpus(_Sentences(n), vocab, tmp_path))  # type: ignore[arg-type]
    assert peak < 10 << 20, f"{peak:,} bytes held"
    assert enc.n_sentences == n and enc.sent_starts[-1] == n and enc.sent_starts.dtype == np.int64
    assert np.array_equal(enc.para_ids[:25], np.arange(25) // 10) and enc.para_ids[-1] == (n - 1) // 10


# ------------------------------------------------------------------ records that are not records


def test_a_csv_quote_never_closed_is_refused_at_its_row(tmp_path):
    path = tmp_path / "q.csv"
    rows = [f"{i},sentence number {i} ." for i in range(1, 40)]
    rows[2] = '3,"an opening quote never closed .'
    path.write_text("id,text\n" + "\n".join(rows) + "\n")
    with pytest.raises(UserError) as err:
        _count(Corpus([path]))
    assert str(err.value).startswith(f"{path}: row 3 (from line 4) is not CSV (unexpected end of data)")
    assert "\n" not in str(err.value)


def test_a_stray_quote_closing_a_field_early_is_refused_at_its_row(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('id,text\n1,fine .\n2,"he said\n3,"hi" there\n')
    with pytest.raises(UserError, match=r"q.csv: row 2 \(from line 3\) is not CSV"):
        _count(Corpus([path]))


def _broken(data: bytes) -> bytes:
    return data[:20] + bytes(b ^ 0x55 for b in data[20:60]) + data[60:]


@pytest.mark.parametrize(
    "suffix,compress", [(".xz", lzma.compress), (".gz", gzip.compress), (".bz2", bz2.compress)]
)
@pytest.mark.parametrize("fmt", ["csv", "txt", "jsonl"])
def test_a_corrupt_archive_is_one_line_naming_the_file(tmp_path, suffix, compress, fmt):
    rows = {"csv": "id,text\n", "txt": "", "jsonl": ""}[fmt]
    rows += "".join(
        {
            "csv": f"{i},row {i} text .\n",
            "txt": f"row {i} text .\n",
            "jsonl": json.dumps({"text": f"row {i}"}) + "\n",
        }[fmt]
        for i in range(3000)
    )
    path = tmp_path / f"c.{fmt}{suffix}"
    path.write_bytes(_broken(compress(rows.encode())))
    with pytest.raises(UserError) as err:
        _count(Corpus([path]))
    assert str(err.value).startswith(f"{path}: cannot ") and "\n" not in str(err.value)
    assert "row" in str(err.value) or "line" in str(err.value)


@pytest.mark.parametrize(
    "line,message",
    [
        ('{"text": ' + "[" * 200_000 + "]" * 200_000 + "}", "row 2 is nested too deep to read"),
        ('{"n": ' + "9" * 100_000 + ', "text": "a"}', "row 2 holds a number of over 4,300 digits"),
        ('{"text": "half a pair \\ud800 ."}', "row 2 holds a lone surrogate (\\ud800)"),
    ],
    ids=["nested", "digits", "surrogate"],
)
def test_unreadable_json_lines_are_one_line_naming_the_row(tmp_path, line, message):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "fine ."}\n' + line + "\n")
    for split in Split:
        with pytest.raises(UserError) as err:
            list(Corpus([path], CorpusConfig(split=split)).paragraphs())
        assert str(err.value).startswith(f"{path}: {message}") and "\n" not in str(err.value)


def test_a_surrogate_pair_is_one_character(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "smile \\ud83d\\ude00 ."}\n')
    assert [toks for _, toks in Corpus([path], CorpusConfig(split=Split.NONE)).sentences()] == [
        ["smile", "\U0001f600", "."]
    ]


# ------------------------------------------------------------------ one word, one string: NFC


def test_nfd_and_nfc_corpora_give_one_vocabulary(tmp_path):
    text = "Le résumé du café. Un café crème, über naïve.\nÅngström et résumé.\n"
    vocabs = {}
    for form in ("NFC", "NFD"):
        for fmt in ("txt", "jsonl", "csv"):
            path = tmp_path / f"{form}.{fmt}"
            doc = unicodedata.normalize(form, text)
            path.write_text(
                {
                    "txt": doc,
                    "jsonl": json.dumps({"text": doc}) + "\n",
                    "csv": 'text\n"' + doc + '"\n',
                }[fmt]
            )
            vocabs[form, fmt] = Vocab.build(Corpus([path]), VocabConfig(min_count=1)).words
    assert "résumé" in vocabs["NFC", "txt"] and "\u0301" not in "".join(vocabs["NFC", "txt"])
    assert len({tuple(v) for v in vocabs.values()}) == 1, vocabs


def test_a_vocabulary_list_is_read_in_nfc_and_a_repeated_word_refused(tmp_path):
    path = tmp_path / "v.tsv"
    path.write_text(unicodedata.normalize("NFD", "café\t3\nrésumé\t2\n"))
    assert Vocab.load(path).words == ["café", "résumé"]
    path.write_text("café\t3\nthe\t2\n" + unicodedata.normalize("NFD", "café\t1\n"))
    with pytest.raises(
        UserError, match=r"v.tsv: line 3 repeats the word 'café' of line 1 \(in Unicode NFC\)"
    ):
        Vocab.load(path)
    path.write_text("café\t3\ngrand jury\t2\n")
    with pytest.raises(UserError, match=r"v.tsv: line 2 holds 'grand jury', a word with a blank"):
        Vocab.load(path)
    path.write_text("café\t3\n\t2\n")
    with pytest.raises(UserError, match=r"v.tsv: line 2 holds an empty word"):
        Vocab.load(path)
    path.write_text("café\t3\n" + "x" * 100_000 + "\t2\n")  # read in pieces, never whole
    with pytest.raises(UserError, match=r"v.tsv: line 2 is not 'word<TAB>count'"):
        Vocab.load(path)


# ------------------------------------------------------------------ names, marks, repeats


def test_upper_case_compression_suffixes_are_decompressed(tmp_path):
    (tmp_path / "c.TXT.GZ").write_bytes(gzip.compress(b"the cat sat .\n"))
    (tmp_path / "d.csv.GZ").write_bytes(gzip.compress(b"id,text\n1,the dog ran .\n"))
    got = [toks for _, toks in Corpus([tmp_path / "c.TXT.GZ", tmp_path / "d.csv.GZ"]).sentences()]
    assert got == [["the", "cat", "sat", "."], ["the", "dog", "ran", "."]]


def test_a_byte_order_mark_is_no_text(tmp_path):
    bom = "\ufeff"
    (tmp_path / "b.csv").write_text(bom + "text,id\nthe cat sat .,1\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(bom + json.dumps({"text": "the dog ran ."}) + "\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text(bom + "the end .\n", encoding="utf-8")
    got = [toks for _, toks in Corpus([tmp_path / n for n in ("b.csv", "b.jsonl", "b.txt")]).sentences()]
    assert got == [["the", "cat", "sat", "."], ["the", "dog", "ran", "."], ["the", "end", "."]]


def test_a_file_named_twice_is_read_once_with_one_warning(tmp_path, caplog):
    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "c.txt"
    path.write_text("the cat sat .\n")
    (folder / "d.txt").write_text("a dog ran .\n")
    os.symlink(path, tmp_path / "link.txt")
    names = [path, tmp_path / "data" / ".." / "data" / "c.txt", tmp_path / "link.txt", folder]
    with caplog.at_level(logging.WARNING, logger="ctx2static"):
        corpus = Corpus(names)
    assert [r.source.path for r in corpus.readings] == [path, folder / "d.txt"]
    assert [toks for toks in corpus] == [["the", "cat", "sat", "."], ["a", "dog", "ran", "."]]
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    more = "(and 2 more file(s) given twice)"
    assert warned == [f"{names[1]}: the same file as {path}, given twice as corpus; read once {more}"]


@pytest.mark.parametrize("kind", ["named pipe", "character device"])
def test_a_pipe_or_a_device_as_corpus_is_named_as_what_it_is(tmp_path, kind):
    if kind == "named pipe":
        path = tmp_path / "corpus.txt"
        os.mkfifo(path)  # opening it to read would wait for a writer forever
    else:
        path = Path("/dev/zero")  # reading it would never end
    for read in (lambda: find_sources([path]), lambda: list(read_lines(path, "text"))):
        with pytest.raises(UserError, match=rf"^{path}: is a {kind}, not a file .*; pass "):
            read()
