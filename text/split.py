"""Sentences out of documents: the sentence splitter, whether a text file is split already, pieces.

The splitter is sentencex (Wikimedia, MIT, a compiled core with wheels for Linux, macOS and
Windows on x86-64 and ARM, no dependencies). On the tagged Brown corpus's sentence boundaries
(measured: Results page, splitters) its precision equals the others'; its recall is lower than
blingfire's and syntok's because it keeps a quotation of several sentences whole, which costs a
teacher's context nothing. It is the fastest by far (the same page), so reading stays far ahead of
the teacher; blingfire, as accurate and fast enough, has had no release since 2021 and ships x86-64
binaries only; syntok is too slow.

Whether a text file is split already is read from its first :data:`SNIFF_LINES` non-blank lines
(:func:`sniff`): a file is taken as one sentence a line unless the splitter finds two sentences in
at least 10% of them (documents or paragraphs a line), or in at least 2% while fewer than half of
them end like a sentence (prose wrapped at a fixed width). Text without sentence punctuation
therefore stays one sentence a line: the splitter could not split it anyway.
"""

from __future__ import annotations

import enum
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

import sentencex

SNIFF_LINES = 1000
SEVERAL = 0.1  # share of lines holding two sentences above which a file is documents
WRAPPED = 0.02, 0.5  # ... or above the first while fewer than the second end a sentence: wrapped prose
_SENTENCE_END = re.compile(r"[.!?…:;][\"'’”)\]»]*$")


class Split(str, enum.Enum):
    """How a corpus's text becomes sentences."""

    AUTO = "auto"  # lines for text files that look split (module docstring), else sentences
    SENTENCES = "sentences"  # the sentence splitter over each document (a paragraph or a record)
    LINES = "lines"  # one sentence a line, a blank line between paragraphs
    NONE = "none"  # a document is one sentence: short texts (titles, definitions, posts) kept whole


def sentences_of(text: str) -> list[str]:
    """The sentences of one document (English rules: abbreviations, initials, decimals, quotes)."""
    return [s.strip() for s in sentencex.segment("en", text) if s and not s.isspace()]


@dataclass(frozen=True)
class Sniff:
    """What the first lines of a text file say about it (see the module docstring)."""

    lines: int  # non-blank lines sampled
    several: float  # share of them holding two sentences or more
    ends: float  # share of them ending like a sentence
    median_words: float
    blank: bool  # whether blank lines separate paragraphs (else each line is a document)

    @property
    def looks_split(self) -> bool:
        """Whether the file reads as one sentence a line."""
        several, ends = WRAPPED
        return not (self.several >= SEVERAL or (self.several >= several and self.ends < ends))

    def describe(self) -> str:
        """The measures the decision rests on, for the line that reports it."""
        return (
            f"{self.several:.0%} of {self.lines} sampled lines hold several sentences, "
            f"{self.ends:.0%} end one, median {self.median_words:g} words"
        )


def sniff(lines: Iterable[str]) -> Sniff:
    """Measure the first :data:`SNIFF_LINES` non-blank ``lines`` (iteration stops there)."""
    several = ends = 0
    words: list[int] = []
    blank = False
    for line in lines:
        text = line.strip()
        if not text:
            blank = blank or bool(words)
            continue
        several += len(sentences_of(text)) > 1
        ends += bool(_SENTENCE_END.search(text))
        words.append(len(text.split()))
        if len(words) >= SNIFF_LINES:
            break
    n = max(len(words), 1)
    return Sniff(len(words), several / n, ends / n, statistics.median(words) if words else 0, blank)


def pieces(words: list[str], limit: int) -> list[list[str]]:
    """``words`` cut into the fewest pieces of at most ``limit`` words, all of about one length."""
    n = -(-len(words) // limit)
    size = -(-len(words) // n)
    return [words[i : i + size] for i in range(0, len(words), size)]
