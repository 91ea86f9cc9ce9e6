"""The static vocabulary: words sorted by descending corpus count (ties alphabetical)."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ctx2static.errors import InputError, UserError, spell
from ctx2static.fileio.atomic import atomic_write
from ctx2static.fileio.reading import read_lines
from ctx2static.options import Options, Rule, at_least, opt
from ctx2static.text.corpus import Corpus
from ctx2static.text.normal import nfc

WORD_LINE_BYTES = 1 << 16  # a longer line of a vocabulary file is no word and is refused unread


@dataclass(frozen=True)
class VocabConfig(Options):
    """Which words get a vector: the papers' count threshold, optionally capped."""

    min_count: int = opt(5, "Keep words seen at least this many times.")
    max_vocab: int | None = opt(None, "Keep at most this many words, the most frequent (none = all).")

    def rules(self) -> Iterable[Rule]:
        """Both are positive."""
        return [
            *at_least(self, 1, "min_count"),
            ("max_vocab", self.max_vocab is None or self.max_vocab >= 1, "none or at least 1"),
        ]


@dataclass
class Vocab:
    """Words in descending count order (ties alphabetical) with their corpus counts."""

    words: list[str]
    counts: np.ndarray
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.counts = np.asarray(self.counts, dtype=np.int64)
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    @property
    def total(self) -> int:
        """Number of in-vocabulary tokens in the corpus."""
        return int(self.counts.sum())

    def digest(self) -> str:
        """A short hash of the words and counts (the cache manifest records it)."""
        h = hashlib.sha256()
        for w, c in zip(self.words, self.counts.tolist(), strict=True):
            h.update(f"{w}\t{c}\n".encode())
        return h.hexdigest()[:16]

    @classmethod
    def build(
        cls, corpus: Corpus, config: VocabConfig | None = None, sentences: Iterable[list[str]] | None = None
    ) -> Vocab:
        """Count the corpus once and keep words with ``count >= min_count`` (at most ``max_vocab``).

        ``sentences``: the part of ``corpus`` to count (what a budgeted teacher pass reads), else all.
        """
        config = config or VocabConfig()
        min_count, max_vocab = config.min_count, config.max_vocab
        counter: Counter[str] = Counter()
        for toks in corpus if sentences is None else sentences:
            counter.update(toks)
        if not counter:
            names = ", ".join(str(p) for p in corpus.paths)
            raise UserError(f"{names}: the corpus has no tokens (after the sentence-length filter)")
        items = sorted(((w, c) for w, c in counter.items() if c >= min_count), key=lambda wc: (-wc[1], wc[0]))
        if max_vocab:
            items = items[:max_vocab]
        if not items:
            raise UserError(
                f"no word occurs {min_count} times in the corpus; lower {spell('min_count')} "
                f"(the most frequent word occurs {counter.most_common(1)[0][1]} times)"
            )
        return cls([w for w, _ in items], np.array([c for _, c in items], dtype=np.int64))

    def save(self, path: str | os.PathLike) -> None:
        """Write ``word<TAB>count`` lines, atomically."""
        with atomic_write(path, "w", encoding="utf-8") as fh:
            for w, c in zip(self.words, self.counts.tolist(), strict=True):
                fh.write(f"{w}\t{c}\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocab:
        """Read a file written by :meth:`save` (or by hand), its words in NFC like the corpus's.

        A word given twice (also once composed, once decomposed) is refused: its vector would be
        two rows, and a student refuses the vocabulary only after the teacher ran. So is an empty
        word or one holding a blank: the tokenizer never makes one, and a vectors file cannot hold it.
        """
        words, counts = [], []
        line_of: dict[str, int] = {}
        expect = "a vocabulary, word<TAB>count lines"
        last = 0
        for n, line in read_lines(path, expect, limit=WORD_LINE_BYTES):
            parts = line.split("\t")
            if (
                n == last
                or len(parts) != 2
                or not (parts[1].isascii() and parts[1].isdigit() and len(parts[1]) <= 18)
            ):
                raise InputError(path, f"{path}: line {n} is not 'word<TAB>count'; rebuild the vocabulary")
            last = n
            word = nfc(parts[0])
            if not word or any(c.isspace() for c in word):
                what = f"{word!r}, a word with a blank" if word else "an empty word"
                raise InputError(
                    path,
                    f"{path}: line {n} holds {what}, which no corpus has (words are split at blanks); "
                    "drop that line",
                )
            if line_of.setdefault(word, n) != n:
                raise InputError(
                    path,
                    f"{path}: line {n} repeats the word {word!r} of line {line_of[word]} "
                    "(in Unicode NFC); keep each word once",
                )
            words.append(word)
            counts.append(int(parts[1]))
        if not words:
            raise InputError(path, f"{path}: holds no words; write one 'word<TAB>count' a line")
        return cls(words, np.array(counts, dtype=np.int64))
