"""Continuous bag-of-words with negative sampling (Mikolov et al. 2013, "Efficient Estimation...").

The mean (``cbow_mean``, else the sum) of the context vectors in the dynamic window predicts the
centre word against ``negative`` noise words. As in the C tool and gensim, the gradient with
respect to that hidden vector is added to every context row unscaled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from ctx2static.options import opt
from ctx2static.students.sampling import draw_targets
from ctx2static.students.student import TextStudent
from ctx2static.students.word2vec import SIZED_BY, Word2VecConfig, add_to_row, memory, ns_update, train
from ctx2static.text.encoded import EncodedCorpus
from ctx2static.text.vocab import Vocab
from ctx2static.vectors import Vectors


@dataclass(frozen=True)
class Config(Word2VecConfig):
    """word2vec CBOW defaults: learning rate 0.05, the mean of the context (the rest: Word2VecConfig)."""

    lr: float = opt(0.05, "Initial learning rate (word2vec's alpha), decayed linearly to min_lr (CBOW).")
    cbow_mean: bool = opt(True, "Hidden vector = mean of the context (else their sum).")


def cbow_centre(mean: bool) -> Any:
    """The CBOW centre update from the mean of the contexts (``mean``) or their sum.

    ``mean`` is a constant of the compiled update (Numba freezes what a closure reads), so each
    variant is its own kernel with no branch per centre; each is named for its variant, as the
    on-disk cache of the epoch loop it is bound into tells its copies apart by the update's name
    (:func:`~ctx2static.students.jit_bind.bind_update`).
    """

    # the parameters of every centre kernel (sgns.sg_centre's too): the epoch loop calls them alike
    def update(
        sent: np.ndarray,
        n: int,
        i: int,
        b: int,
        syn0: np.ndarray,
        syn1neg: np.ndarray,
        cum_table: np.ndarray,
        negative: int,
        alpha: float,
        scratch: np.ndarray,
        targets: np.ndarray,
        state: np.uint64,
        compute_loss: bool,
    ) -> tuple[float, int, np.uint64]:
        h = scratch[0]
        grad = scratch[1]
        lo, hi = max(0, i - b), min(n, i + b + 1)
        for d in range(h.shape[0]):
            h[d] = 0.0
        for j in range(lo, hi):
            if j != i:
                add_to_row(h, syn0[sent[j]])
        count = hi - lo - 1
        if count == 0:
            return 0.0, 0, state
        if mean:
            inv = np.float32(1.0 / count)
            for d in range(h.shape[0]):
                h[d] *= inv
        n_targets, state = draw_targets(sent[i], cum_table, negative, targets, state)
        loss = ns_update(h, syn1neg, targets, n_targets, alpha, grad, compute_loss)
        for j in range(lo, hi):
            if j != i:
                add_to_row(syn0[sent[j]], grad)
        return loss, 1, state

    update.__name__ = update.__qualname__ = f"cbow_{'mean' if mean else 'sum'}_centre"
    update.__doc__ = (
        f"CBOW update of centre ``sent[i]`` from the {'mean' if mean else 'sum'} of its contexts."
    )
    return njit(fastmath=True)(update)


cbow_mean_centre = cbow_centre(True)
cbow_sum_centre = cbow_centre(False)


def fit(corpus: EncodedCorpus, vocab: Vocab, config: Config) -> Vectors:
    """Train CBOW vectors; returns the input embeddings (syn0) in vocabulary order."""
    centre = cbow_mean_centre if config.cbow_mean else cbow_sum_centre
    return train("cbow", centre, corpus, vocab, config)


STUDENT = TextStudent(Config, fit, memory, SIZED_BY)
