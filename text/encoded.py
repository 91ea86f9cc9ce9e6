"""The corpus as integer word ids, kept on disk (memory-mapped) so RAM stays flat."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ctx2static.errors import UserError
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab


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


def encode_corpus(corpus: Corpus, vocab: Vocab, workdir: str | os.PathLike) -> EncodedCorpus:
    """Stream the corpus into id arrays kept on disk (memory-mapped) in ``workdir``, so RAM stays flat.

    The caller owns ``workdir`` (a temporary folder it removes, also when interrupted).
    """
    workdir = Path(workdir)
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
