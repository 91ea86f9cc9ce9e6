"""Streaming corpus reader for text files (plain, .gz, .xz, .bz2).

Layout: one sentence a line, a blank line between paragraphs (as the bundled demo corpus).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ctx2static.errors import UserError
from ctx2static.fileio import read_lines
from ctx2static.options import Options, Rule, opt

CORPUS_FORMAT = "UTF-8 text, one sentence a line (plain, .gz, .xz or .bz2)"

# A word: letters/digits with inner hyphens or apostrophes ("half-brothers", "don't");
# any other non-space character is a token of its own (punctuation is split off).
TOKEN = re.compile(r"\w+(?:[-'’]\w+)*|[^\w\s]+", re.UNICODE)


@dataclass(frozen=True)
class CorpusConfig(Options):
    """How raw text becomes token lists (defaults as the seeds, length filters off for small corpora)."""

    lowercase: bool = opt(True, "Lower-case the text, or keep its case.", off="keep-case")
    min_sentence_len: int = opt(0, "Drop sentences with fewer words (0 = off; seeds: 10).")
    max_sentence_len: int = opt(0, "Drop sentences with more words (0 = off; seeds: 40).")

    def rules(self) -> Iterable[Rule]:
        """Lengths are 0 (off) or positive."""
        return [
            ("min_sentence_len", self.min_sentence_len >= 0, "0 (off) or more"),
            ("max_sentence_len", self.max_sentence_len >= 0, "0 (off) or more"),
        ]


def tokenize(line: str, lowercase: bool = True) -> list[str]:
    """Split a sentence into words, splitting off punctuation."""
    if lowercase:
        line = line.lower()
    return TOKEN.findall(line)


@dataclass
class Corpus:
    """A re-iterable view of one or more corpus files as tokenised sentences.

    Iterating yields ``list[str]`` per sentence (gensim-compatible); :meth:`sentences` also
    yields the paragraph id. Memory stays flat: files are streamed on every pass.
    """

    paths: Sequence[str | os.PathLike]
    config: CorpusConfig = CorpusConfig()

    def __post_init__(self) -> None:
        if not self.paths:
            raise UserError("no corpus files given; pass at least one with --corpus")
        for p in self.paths:
            if not Path(p).is_file():
                raise UserError(f"{p}: no such file; pass an existing corpus file")

    def paragraphs(self) -> Iterator[list[str]]:
        """Yield each paragraph as its list of raw sentence lines (empty paragraphs skipped)."""
        for path in self.paths:
            para: list[str] = []
            for _, line in read_lines(path, CORPUS_FORMAT):
                if line.strip():
                    para.append(line)
                elif para:
                    yield para
                    para = []
            if para:
                yield para

    def sentences(self) -> Iterator[tuple[int, list[str]]]:
        """Yield ``(paragraph_id, tokens)`` for every sentence that passes the length filter."""
        cfg = self.config
        for pid, para in enumerate(self.paragraphs()):
            for line in para:
                toks = tokenize(line, cfg.lowercase)
                if not toks:
                    continue
                if cfg.min_sentence_len and len(toks) < cfg.min_sentence_len:
                    continue
                if cfg.max_sentence_len and len(toks) > cfg.max_sentence_len:
                    continue
                yield pid, toks

    def __iter__(self) -> Iterator[list[str]]:
        for _, toks in self.sentences():
            yield toks
