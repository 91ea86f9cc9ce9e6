"""Streaming corpus reader: text, JSON lines, CSV, Parquet or saved datasets in; tokenised sentences out.

Where the text comes from is :mod:`~ctx2static.text.sources`; how it becomes sentences is the
``split`` option (:class:`~ctx2static.text.split.Split`): ``lines`` reads one sentence a line, a
blank line between paragraphs (the layout of the bundled corpora); ``sentences`` runs the
sentence splitter over each document; ``none`` keeps a document as one sentence. A document is a
record of a JSON-lines, CSV, Parquet or datasets file, or a paragraph of a text file (lines up to
a blank line, or each line when the file has no blank lines). ``auto`` (the default) reads text
files that look split as lines and everything else as documents (:mod:`~ctx2static.text.split`
says how it decides); the choice is logged, one line per ``--corpus`` path, and recorded per file
in a cache's identity.

A file named twice (by another path, a link, or inside a folder also named) is read once, with
one warning: counting it twice would silently double its words, and naming a folder and a file in
it is an easy slip, not a wish to weight the file (a refusal would stop a run for nothing).

Every text is read in Unicode normal form C (:func:`~ctx2static.text.normal.nfc`), so a word
saved decomposed (NFD) is the same word as saved composed.

No input costs memory that grows with the file (:class:`Bounds`). The budget: one read, one line
and one document hold at most 1 MiB of text (:attr:`Bounds.chars`): a longer line is read in
pieces of at most 1 MiB, cut after a blank where the piece has one in its second half, and a
longer document (of the sentence split) is cut at line boundaries. A paragraph read one sentence a
line is held at most :data:`PARAGRAPH_LINES` lines and 1 MiB at a time: a longer one (a file
without blank lines) is passed on in pieces under one paragraph id, which changes no sentence. A
record (JSON line, CSV field) is refused over 64 MiB (:data:`~ctx2static.text.sources.RECORD_BYTES`)
and cut into 1 MiB pieces like a document. A sentence longer than 256 words is cut into pieces of
about equal length (the teacher reads 256 words in one window of 512 pieces at up to two pieces a
word). So reading holds a few MiB whatever the file's size or layout
(measured: Results page, memory_corpus); each file's cuts are reported once, with their number and
the first place.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ctx2static.errors import UserError, spell
from ctx2static.fileio.reading import read_lines
from ctx2static.options import Options, Rule, opt
from ctx2static.text.normal import nfc
from ctx2static.text.sources import TEXT_EXPECT, CorpusFormat, Source, find_sources, records
from ctx2static.text.split import Sniff, Split, pieces, sentences_of, sniff
from ctx2static.words import tokenize

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CorpusConfig(Options):
    """How raw text becomes token lists (defaults as the papers, length filters off for small corpora)."""

    lowercase: bool = opt(True, "Lower-case the text, or keep its case.", off="keep-case")
    min_sentence_len: int = opt(
        0, "Drop sentences with fewer words (0 = off; the BERT+Skip-gram and Context-to-Vec papers: 10)."
    )
    max_sentence_len: int = opt(
        0, "Drop sentences with more words (0 = off; the BERT+Skip-gram and Context-to-Vec papers: 40)."
    )
    split: Split = opt(
        Split.AUTO,
        "How text becomes sentences: lines (one sentence a line), sentences (split each document), "
        "none (a document is one sentence); auto: lines for text files that look split, else sentences.",
    )
    text_field: str = opt("text", "The field holding the text in JSONL, CSV, Parquet and saved datasets.")
    corpus_format: CorpusFormat = opt(
        CorpusFormat.AUTO, "How the --corpus files are read; auto: from their names (a folder: recursively)."
    )

    def rules(self) -> Iterable[Rule]:
        """Lengths are 0 (off) or positive; a text field is named."""
        return [
            ("min_sentence_len", self.min_sentence_len >= 0, "0 (off) or more"),
            ("max_sentence_len", self.max_sentence_len >= 0, "0 (off) or more"),
            ("text_field", bool(self.text_field), "a field name"),
        ]

    def tokens(self) -> dict[str, Any]:
        """The options that shape sentences into tokens (how each file is read is recorded per file)."""
        return {
            "lowercase": self.lowercase,
            "min_sentence_len": self.min_sentence_len,
            "max_sentence_len": self.max_sentence_len,
        }


@dataclass(frozen=True)
class Bounds:
    """The most characters of a line or document, and words of a sentence, read at once."""

    chars: int = 1 << 20
    words: int = 256


PARAGRAPH_LINES = 4096
"""Lines of a paragraph read one sentence a line held at once; a longer one comes in pieces."""


@dataclass(frozen=True)
class Reading:
    """How one source is read: its split (resolved), and for text whether each line is a document."""

    source: Source
    split: Split
    by_line: bool = False
    why: str = ""

    def identity(self, field: str) -> dict[str, Any]:
        """What a cache records of it (path, digest, format, split and, for records, the field)."""
        out = {
            "path": str(self.source.path.resolve()),
            "sha256": self.source.digest(),
            "format": self.source.format.value,
            "split": self.split.value,
        }
        return {**out, "text_field": field} if self.source.records else out


Located = tuple[int, str]
"""A sentence and the line (of a text file) or row (of records) it comes from."""

Piece = tuple[bool, list[Located]]
"""Sentences of a paragraph, and whether they continue the paragraph of the piece before."""


@dataclass
class _Cuts:
    """How often one source needed a bound, and where first (reported once per corpus)."""

    what: str
    count: int = 0
    first: int = 0

    def add(self, where: int) -> None:
        self.count += 1
        self.first = self.first or where


@dataclass
class Corpus:
    """A re-iterable view of corpus files and folders as tokenised sentences.

    Iterating yields ``list[str]`` per sentence (gensim-compatible); :meth:`sentences` also
    yields the paragraph id. Memory stays flat: sources are streamed on every pass.
    """

    paths: Sequence[str | os.PathLike]
    config: CorpusConfig = CorpusConfig()
    bounds: Bounds = Bounds()
    readings: list[Reading] = field(init=False)

    def __post_init__(self) -> None:
        if not self.paths:
            raise UserError(f"no corpus files given; pass at least one with {spell('corpus')}")
        self.readings = []
        seen: dict[tuple[int, int], Path] = {}
        repeats: list[tuple[Path, Path]] = []  # a file named again, and its first name
        for p in self.paths:
            found = []
            for source in find_sources([p], self.config.corpus_format):
                first = seen.setdefault(source.key, source.path)
                if first is source.path:
                    found.append(self._reading(source))
                else:
                    repeats.append((source.path, first))
            if found:
                log.info("corpus %s: %s", p, _summary(found))
            self.readings += found
        if repeats:
            (again, first), more = repeats[0], len(repeats) - 1
            log.warning(
                "%s: the same file as %s, given twice as corpus; read once%s",
                again,
                first,
                f" (and {more} more file(s) given twice)" if more else "",
            )
        self._reported: set[tuple[Path, str]] = set()

    def _reading(self, source: Source) -> Reading:
        """``source``'s split: as asked, or (auto) lines for text that looks split, else sentences."""
        asked = self.config.split
        if source.records:
            split = Split.SENTENCES if asked is Split.AUTO else asked
            return Reading(source, split, why=f"documents: field '{self.config.text_field}' of each row")
        if asked is Split.LINES:
            return Reading(source, asked, why="as asked")
        lines = read_lines(source.path, TEXT_EXPECT, self.bounds.chars)
        try:
            seen = sniff(line for _, line in lines)
        finally:
            lines.close()
        if asked is not Split.AUTO:
            return Reading(source, asked, not seen.blank, "as asked")
        split = Split.LINES if seen.looks_split else Split.SENTENCES
        return Reading(source, split, not seen.blank, _why(seen))

    def identity(self) -> list[dict[str, Any]]:
        """Each source as a cache's identity records it."""
        return [r.identity(self.config.text_field) for r in self.readings]

    def config_identity(self) -> dict[str, Any]:
        """The token options and bounds as a cache's identity records them."""
        return {**self.config.tokens(), "bounds": asdict(self.bounds)}

    def paragraphs(self) -> Iterator[list[str]]:
        """Yield each paragraph as its list of raw sentences (empty paragraphs skipped).

        A paragraph over the budget (module docstring) comes in pieces, each yielded alone.
        """
        for reading in self.readings:
            for _, para in self._paragraphs(reading):
                yield [s for _, s in para]

    def _paragraphs(self, reading: Reading) -> Iterator[Piece]:
        cut = _Cuts(f"longer than {self.bounds.chars:,} characters were cut into pieces")
        if not reading.source.records:
            yield from self._text(reading, cut)
        else:
            for row, text in records(reading.source, self.config.text_field):
                chunks = _chunks(nfc(text), self.bounds.chars)
                if len(chunks) > 1:
                    cut.add(row)
                for chunk in chunks:
                    if reading.split is Split.LINES:
                        yield from _record_lines(row, chunk)
                    else:
                        yield from _split(reading.split, [(row, chunk)])
        self._report(reading, cut, "row(s)" if reading.source.records else "line(s) or document(s)")

    def _text(self, reading: Reading, cut: _Cuts) -> Iterator[Piece]:
        """A text file's paragraphs: its lines (split lines), else its documents split or kept whole.

        Nothing is held past the budget (module docstring): a paragraph of lines is passed on every
        :data:`PARAGRAPH_LINES` lines or ``chars`` characters, a document is cut there.
        """
        path, budget = reading.source.path, self.bounds.chars
        lines = read_lines(path, TEXT_EXPECT, budget)
        by_lines = reading.split is Split.LINES
        block: list[Located] = []
        size, last, counted, more = 0, 0, 0, False
        for n, line in lines:
            if n == last and n != counted:  # a line's second piece: the line is counted once
                cut.add(n)
                counted = n
            last = n
            if not line.strip():
                yield from _split(reading.split, block, more)
                block, size, more = [], 0, False
                continue
            if block:
                full = size + len(line) > budget
                if by_lines and (full or len(block) >= PARAGRAPH_LINES):
                    yield from _split(reading.split, block, more)
                    block, size, more = [], 0, True
                elif not by_lines and (full or reading.by_line):
                    if full and not reading.by_line:
                        cut.add(block[0][0])
                    yield from _split(reading.split, block)
                    block, size = [], 0
            block.append((n, nfc(line)))
            size += len(line) + 1
        yield from _split(reading.split, block, more)

    def _report(self, reading: Reading, cut: _Cuts, what: str) -> None:
        key = (reading.source.path, cut.what)
        if cut.count and key not in self._reported:
            self._reported.add(key)
            where = "row" if reading.source.records else "line"
            log.warning("%s: %d %s %s (first at %s %d)", reading.source.path, cut.count, what, cut.what,
                        where, cut.first)  # fmt: skip

    def sentences(self) -> Iterator[tuple[int, list[str]]]:
        """Yield ``(paragraph_id, tokens)`` for every sentence that passes the length filter."""
        cfg, limit = self.config, self.bounds.words
        pid = -1
        for reading in self.readings:
            long = _Cuts(f"longer than {limit} words were cut into pieces")
            for more, para in self._paragraphs(reading):
                pid += not more
                for where, sentence in para:
                    toks = tokenize(sentence, cfg.lowercase)
                    if not toks:
                        continue
                    if cfg.min_sentence_len and len(toks) < cfg.min_sentence_len:
                        continue
                    if cfg.max_sentence_len and len(toks) > cfg.max_sentence_len:
                        continue
                    if len(toks) > limit:
                        long.add(where)
                        for piece in pieces(toks, limit):
                            yield pid, piece
                    else:
                        yield pid, toks
            self._report(reading, long, "sentence(s)")

    def __iter__(self) -> Iterator[list[str]]:
        for _, toks in self.sentences():
            yield toks


def _split(split: Split, block: list[Located], more: bool = False) -> Iterator[Piece]:
    """A block of lines as a paragraph: its lines as they are (lines), else one document split or whole.

    ``more``: the block continues the paragraph before it (lines only: a document is never continued).
    """
    if not block:
        return
    if split is Split.LINES:
        yield more, block
        return
    where, text = block[0][0], " ".join(line for _, line in block)
    para = [(where, s) for s in sentences_of(text)] if split is Split.SENTENCES else [(where, text.strip())]
    if para and para[0][1]:
        yield False, para


def _record_lines(row: int, text: str) -> Iterator[Piece]:
    """A record's lines as sentences, a blank line between paragraphs (in pieces of PARAGRAPH_LINES)."""
    for blank, group in itertools.groupby(text.splitlines(), key=lambda line: not line.strip()):
        if not blank:
            more = False
            while piece := [(row, line) for line in itertools.islice(group, PARAGRAPH_LINES)]:
                yield more, piece
                more = True


def _chunks(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut at blanks where there are any."""
    if len(text) <= limit:
        return [text]
    out = []
    while len(text) > limit:
        cut = text.rfind(" ", limit // 2, limit) + 1 or limit
        out.append(text[:cut])
        text = text[cut:]
    return [*out, text]


def _why(seen: Sniff) -> str:
    return ("looks split" if seen.looks_split else "does not look split") + f": {seen.describe()}"


def _summary(readings: list[Reading]) -> str:
    """One line: how many files of which format, and how each split was chosen."""
    formats = Counter(r.source.format.value for r in readings)
    files = ", ".join(f"{n} {fmt}" for fmt, n in formats.items())
    splits = Counter(r.split.value for r in readings)
    if len(readings) == 1:
        return f"{files}; split {readings[0].split.value} ({readings[0].why})"
    return f"{len(readings)} files ({files}); split " + ", ".join(f"{s} for {n}" for s, n in splits.items())
