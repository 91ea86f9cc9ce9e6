"""Skip-gram with negative sampling (Mikolov et al. 2013, "Distributed Representations...").

For every centre word and every context word in its dynamic window, the context word's input
vector predicts the centre word against ``negative`` noise words (Eq. 4, arranged as the C tool
and gensim do: ``h = syn0[context]``, positive output row ``syn1neg[centre]``).
"""

from __future__ import annotations

from dataclasses import dataclass

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
    """word2vec skip-gram defaults: learning rate 0.025 (other fields in :class:`Word2VecConfig`)."""

    lr: float = opt(0.025, "Initial learning rate (word2vec's alpha), decayed linearly to min_lr (SG).")


# the parameters of every centre kernel (cbow.cbow_centre's too): the epoch loop calls them alike
@njit(fastmath=True)
def sg_centre(
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
    """Skip-gram updates of centre ``sent[i]`` with its contexts within ``b`` positions."""
    word = sent[i]
    grad = scratch[1]
    loss = 0.0
    pairs = 0
    for j in range(max(0, i - b), min(n, i + b + 1)):
        if j == i:
            continue
        h = syn0[sent[j]]
        n_targets, state = draw_targets(word, cum_table, negative, targets, state)
        loss += ns_update(h, syn1neg, targets, n_targets, alpha, grad, compute_loss)
        add_to_row(h, grad)
        pairs += 1
    return loss, pairs, state


def fit(corpus: EncodedCorpus, vocab: Vocab, config: Config) -> Vectors:
    """Train skip-gram vectors; returns the input embeddings (syn0) in vocabulary order."""
    return train("sgns", sg_centre, corpus, vocab, config)


STUDENT = TextStudent(Config, fit, memory, SIZED_BY)
