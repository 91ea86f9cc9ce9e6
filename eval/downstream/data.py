"""The bundled downstream data (data/downstream/README.md) and its readers.

- POS: ``FILE<TAB>word/tag word/tag ...`` per sentence (the tagged Brown corpus; a Penn-tagged
  cross-domain set when prepared locally);
- NER: ``token<TAB>BIO-tag`` per line, a blank line after each sentence (WNUT-2016 tweets);
- sentiment: ``pos|neg<TAB>text`` per line (movie-review snippets).

Files may be plain or compressed (.xz, .gz, .bz2). A missing or malformed file is a one-line
:class:`UserError` naming the file and the line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ctx2static.errors import InputError, UserError
from ctx2static.fileio.reading import read_lines
from ctx2static.resources import DOWNSTREAM_DIR
from ctx2static.text.normal import nfc


class Task(str, Enum):
    """Downstream tasks (the ``downstream`` family runs them all)."""

    POS = "pos"
    NER = "ner"
    SENTIMENT = "sentiment"


@dataclass(frozen=True)
class TaggedSentences:
    """Sentences with one tag per word; ``docs[i]`` names the source file of sentence i."""

    name: str
    docs: list[str]
    words: list[list[str]]
    tags: list[list[str]]

    @property
    def n_tokens(self) -> int:
        """Number of tagged words."""
        return sum(len(w) for w in self.words)


@dataclass(frozen=True)
class LabelledTexts:
    """Texts with one class label each."""

    name: str
    texts: list[str]
    labels: list[str]


BROWN = "pos-brown.txt.xz"
WSJ = "pos-wsj.txt.xz"  # not bundled (licence); bench/data/prepare_downstream.py --wsj writes it
WNUT = "ner-wnut16.txt.xz"
SENTIMENT_FILES = ("sentiment-vader-movies.tsv.xz", "sentiment-rt.tsv.xz")


def _stem(path: Path) -> str:
    return path.name.split(".")[0]


def _missing(path: Path) -> UserError:
    return InputError(
        path,
        f"{path}: missing downstream data file; reinstall ctx2static or run bench/data/prepare_downstream.py",
    )


def read_slash_tagged(path: str | os.PathLike) -> TaggedSentences:
    """Read ``FILE<TAB>word/tag word/tag ...`` lines (a word may hold '/': the tag follows the last)."""
    path = Path(path)
    if not path.is_file():
        raise _missing(path)
    docs, words, tags = [], [], []
    for n, line in read_lines(path, "FILE<TAB>word/tag ... lines"):
        line = nfc(line)  # the corpus is read in NFC: a word in NFD would miss its row
        doc, sep, text = line.partition("\t")
        pairs = [token.rpartition("/") for token in text.split()]
        if not sep or not pairs or any(not w or not t for w, _, t in pairs):
            raise InputError(path, f"{path}: line {n} is not 'FILE<TAB>word/tag word/tag ...'")
        docs.append(doc)
        words.append([w for w, _, _ in pairs])
        tags.append([t for _, _, t in pairs])
    return TaggedSentences(_stem(path), docs, words, tags)


def read_conll(path: str | os.PathLike) -> TaggedSentences:
    """Read ``token<TAB>tag`` lines with a blank line after each sentence (CoNLL layout)."""
    path = Path(path)
    if not path.is_file():
        raise _missing(path)
    words: list[list[str]] = [[]]
    tags: list[list[str]] = [[]]
    for n, line in read_lines(path, "token<TAB>tag lines, a blank line between sentences"):
        line = nfc(line)  # the corpus is read in NFC: a word in NFD would miss its row
        if not line.strip():
            if words[-1]:
                words.append([])
                tags.append([])
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise InputError(path, f"{path}: line {n} is not 'token<TAB>tag'")
        words[-1].append(parts[0])
        tags[-1].append(parts[1])
    if not words[-1]:
        words.pop()
        tags.pop()
    return TaggedSentences(_stem(path), [""] * len(words), words, tags)


def read_labelled(path: str | os.PathLike, labels: Sequence[str] = ("pos", "neg")) -> LabelledTexts:
    """Read ``label<TAB>text`` lines, ``label`` one of ``labels``."""
    path = Path(path)
    if not path.is_file():
        raise _missing(path)
    texts, out = [], []
    for n, line in read_lines(path, "label<TAB>text lines"):
        line = nfc(line)  # the corpus is read in NFC: a word in NFD would miss its row
        label, sep, text = line.partition("\t")
        if not sep or label not in labels or not text.strip():
            raise InputError(path, f"{path}: line {n} is not '{'|'.join(labels)}<TAB>text'")
        texts.append(text)
        out.append(label)
    return LabelledTexts(_stem(path), texts, out)


def downstream_path(name: str) -> Path:
    """Path of a bundled downstream file."""
    return DOWNSTREAM_DIR / name
