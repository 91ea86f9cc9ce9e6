"""Static vocabulary (words sorted by descending count) and the integer-encoded corpus."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ctx2static.errors import UserError
from ctx2static.fileio import atomic_write
from ctx2static.pipeline.corpus import Corpus


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
    def build(cls, corpus: Corpus, min_count: int = 5, max_vocab: int | None = None) -> Vocab:
        """Count the corpus once and keep words with ``count >= min_count`` (at most ``max_vocab``)."""
        counter: Counter[str] = Counter()
        for toks in corpus:
            counter.update(toks)
        if not counter:
            names = ", ".join(str(p) for p in corpus.paths)
            raise UserError(f"{names}: the corpus has no tokens (after the sentence-length filter)")
        items = sorted(((w, c) for w, c in counter.items() if c >= min_count), key=lambda wc: (-wc[1], wc[0]))
        if max_vocab:
            items = items[:max_vocab]
        if not items:
            raise UserError(
                f"no word occurs {min_count} times in the corpus; lower --min-count "
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
        """Read a file written by :meth:`save`."""
        words, counts = [], []
        try:
            with open(path, encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    parts = line.rstrip("\n").split("\t")
                    if len(parts) != 2 or not parts[1].isdigit():
                        raise UserError(f"{path}: line {n} is not 'word<TAB>count'; rebuild the vocabulary")
                    words.append(parts[0])
                    counts.append(int(parts[1]))
        except FileNotFoundError:
            raise UserError(f"{path}: no such vocabulary file") from None
        return cls(words, np.array(counts, dtype=np.int64))


@dataclass
class EncodedCorpus:
    """The corpus as word ids.

    ``ids`` (int32, OOV words dropped), ``sent_starts`` (n_sent+1 offsets into ``ids``) and
    ``para_ids`` (paragraph of each sentence). Arrays may be memmaps.
    """

    ids: np.ndarray
    sent_starts: np.ndarray
    para_ids: np.ndarray

    @property
    def n_sentences(self) -> int:
        """Number of sentences kept (those with at least one in-vocabulary word)."""
        return len(self.sent_starts) - 1

    def sentence(self, i: int) -> np.ndarray:
        """Word ids of sentence ``i``."""
        return self.ids[self.sent_starts[i] : self.sent_starts[i + 1]]


def encode_corpus(corpus: Corpus, vocab: Vocab, workdir: str | os.PathLike | None = None) -> EncodedCorpus:
    """Stream the corpus into id arrays kept on disk (memory-mapped), so RAM stays flat."""
    workdir = Path(workdir or tempfile.mkdtemp(prefix="ctx2static-enc-"))
    workdir.mkdir(parents=True, exist_ok=True)
    index = vocab.index
    n_tok = 0
    starts: list[int] = [0]
    paras: list[int] = []
    buf: list[int] = []
    with open(workdir / "ids.bin", "wb") as fh:
        for pid, toks in corpus.sentences():
            ids = [index[t] for t in toks if t in index]
            if not ids:
                continue
            buf.extend(ids)
            n_tok += len(ids)
            starts.append(n_tok)
            paras.append(pid)
            if len(buf) >= 1 << 20:
                fh.write(np.asarray(buf, dtype=np.int32).tobytes())
                buf.clear()
        fh.write(np.asarray(buf, dtype=np.int32).tobytes())
    if n_tok == 0:
        raise UserError("no in-vocabulary tokens in the corpus; check --min-count and the corpus files")
    ids_arr = np.memmap(workdir / "ids.bin", dtype=np.int32, mode="r", shape=(n_tok,))
    return EncodedCorpus(ids_arr, np.asarray(starts, dtype=np.int64), np.asarray(paras, dtype=np.int32))
