"""The corpus as integer word ids, kept on disk (memory-mapped) so RAM stays flat."""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ctx2static.errors import UserError, spell
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab

BLOCK = 1 << 16
"""Word ids or sentences held before they are written (about 2 MiB of Python ints)."""


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

    Word ids, sentence offsets and paragraph ids are all written as they come, a block at a time:
    held in Python lists, each id costs an object and a pointer, so a large corpus's offsets alone
    would take gigabytes. The caller owns ``workdir`` (a temporary folder it removes, also when
    interrupted).
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    index = vocab.index
    n_tok = n_sent = 0
    ids: list[int] = []
    starts: list[int] = [0]
    paras: list[int] = []
    names = {"ids": np.int32, "starts": np.int64, "paras": np.int32}
    with ExitStack() as stack:
        files = {k: stack.enter_context(open(workdir / f"{k}.bin", "wb")) for k in names}
        blocks = {"ids": ids, "starts": starts, "paras": paras}

        def flush() -> None:
            for k, block in blocks.items():
                files[k].write(np.asarray(block, dtype=names[k]).tobytes())
                block.clear()

        for pid, toks in corpus.sentences():
            sent = [index[t] for t in toks if t in index]
            if not sent:
                continue
            ids.extend(sent)
            n_tok += len(sent)
            n_sent += 1
            starts.append(n_tok)
            paras.append(pid)
            if len(ids) >= BLOCK or len(paras) >= BLOCK:
                flush()
        flush()
    if n_tok == 0:
        raise UserError(
            f"no in-vocabulary tokens in the corpus; check {spell('min_count')} and the corpus files"
        )
    return EncodedCorpus(
        np.memmap(workdir / "ids.bin", dtype=np.int32, mode="r", shape=(n_tok,)),
        np.memmap(workdir / "starts.bin", dtype=np.int64, mode="r", shape=(n_sent + 1,)),
        np.memmap(workdir / "paras.bin", dtype=np.int32, mode="r", shape=(n_sent,)),
    )
