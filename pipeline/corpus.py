"""Streaming corpus reader for text files (plain, .gz, .xz, .bz2).

Layout: one sentence a line, a blank line between paragraphs (as the bundled demo corpus).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ctx2static.errors import UserError

_OPENERS = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}

# A word: letters/digits with inner hyphens or apostrophes ("half-brothers", "don't");
# any other non-space character is a token of its own (punctuation is split off).
_TOKEN = re.compile(r"\w+(?:[-'’]\w+)*|[^\w\s]+", re.UNICODE)


@dataclass(frozen=True)
class CorpusConfig:
    """How raw text becomes token lists (defaults as the seeds, filters off for small corpora)."""

    lowercase: bool = True
    min_sentence_len: int = 0  # seeds: 10 (0 = no lower bound)
    max_sentence_len: int = 0  # seeds: 40 (0 = no upper bound)


def tokenize(line: str, lowercase: bool = True) -> list[str]:
    """Split a sentence into words, splitting off punctuation."""
    if lowercase:
        line = line.lower()
    return _TOKEN.findall(line)


def open_binary(path: str | os.PathLike) -> BinaryIO:
    """Open a corpus file for reading bytes, decompressing by suffix; missing is a one-line error."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file; pass an existing corpus file (plain, .gz, .xz or .bz2)")
    opener = _OPENERS.get(path.suffix, open)
    return opener(path, "rb")  # type: ignore[operator]


def iter_lines(path: str | os.PathLike) -> Iterator[str]:
    """Yield the lines of one file without their newline; bad bytes become a one-line error."""
    try:
        with open_binary(path) as fh:
            for n, raw in enumerate(fh, 1):
                if b"\x00" in raw:
                    raise UserError(
                        f"{path}: line {n} holds a NUL byte, so this looks like a binary file; "
                        "pass UTF-8 text, one sentence a line"
                    )
                try:
                    yield raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as exc:
                    raise UserError(
                        f"{path}: line {n} is not valid UTF-8 ({exc.reason}); "
                        "convert the file first, e.g. iconv -f latin1 -t utf-8"
                    ) from None
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise UserError(f"{path}: cannot be read ({exc}); check the file is complete") from None


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
            for line in iter_lines(path):
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
