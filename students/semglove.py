"""SemGloVe (Gan et al.): GloVe on co-occurrences distilled from a teacher.

X is built from the cache, then the GloVe trainer of :mod:`ctx2static.students.glove` fits it:
- ``window``: the GloVe baseline on the cache's sentences (X_ij += 1/d within +-window);
- ``attention`` (SemGloVe-sd, Eq. 8-11): for each occurrence of word i, its top-S context words
  j by attention (summed over layers and heads, subword blocks averaged, within +-S), each adding
  ``dis`` to X_ij;
- ``lm`` (SemGloVe-md, Eq. 12-14): for each occurrence of word i, the teacher's top-k substitute
  tokens t (the target itself dropped), each adding ``dis`` to X_{i, word(t)}; the token-to-word
  map is the sparse matrix B of the cache's teacher-token table (tokens that are no static word
  drop out), so X = M B.
``dis`` (``--set weighting=``): ``divide`` = g_j / g_1, the score over the occurrence's top score
(Eq. 10 and 13; for LM logits the scores are softmax-normalised first, so g_j / g_1 =
exp(s_j - s_1) is positive whatever the logits' sign), or ``reciprocal`` = 1 / rank.
"""

from __future__ import annotations

import enum
import logging
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from ctx2static.cache import Cache
from ctx2static.options import opt
from ctx2static.students import glove
from ctx2static.students.cache_input import CacheConfig, encoded_corpus
from ctx2static.students.cooc import window_cooccurrence
from ctx2static.students.student import CacheStudent
from ctx2static.threads import numba_threads
from ctx2static.vectors import Vectors

log = logging.getLogger(__name__)


class Cooc(str, enum.Enum):
    """Where the co-occurrences come from."""

    WINDOW = "window"
    ATTENTION = "attention"
    LM = "lm"


class PairWeighting(str, enum.Enum):
    """How one (occurrence, context) pair counts: score / top score, or 1 / rank."""

    DIVIDE = "divide"
    RECIPROCAL = "reciprocal"


@dataclass(frozen=True)
class Config(glove.Config, CacheConfig):
    """SemGloVe: the GloVe trainer's defaults plus the source of X and its weighting."""

    cooc: Cooc = opt(Cooc.ATTENTION, "Source of X: window counts, attention (sd) or LM substitutes (md).")
    weighting: PairWeighting = opt(PairWeighting.DIVIDE, "dis of a pair: score / top score, or 1 / rank.")
    abtt: int | None = opt(1, "All-but-the-top on the result (transforms/postprocess.py; none = off).")

    def signals(self) -> tuple[str, ...]:
        """Attention rows (sd) or top-k substitutes (md); the window variant reads only word ids."""
        return {Cooc.WINDOW: (), Cooc.ATTENTION: ("attention",), Cooc.LM: ("topk_ids", "topk_scores")}[
            Cooc(self.cooc)
        ]


def pair_weights(group: np.ndarray, score: np.ndarray, weighting: PairWeighting) -> np.ndarray:
    """``dis`` of each (occurrence, context) pair; ``group`` holds the occurrence of each pair.

    ``divide``: score / the largest score of its occurrence (SemGloVe Eq. 10, 13);
    ``reciprocal``: 1 / the pair's rank (1 = highest score) within its occurrence.
    """
    if len(group) == 0:
        return np.zeros(0)
    score = np.asarray(score, dtype=np.float64)
    if weighting is PairWeighting.DIVIDE:
        top = np.full(int(group.max()) + 1, -np.inf)
        np.maximum.at(top, group, score)
        return score / top[group]
    order = np.lexsort((-score, group))
    first = np.searchsorted(group[order], group[order], side="left")
    ranks = np.empty(len(group))
    ranks[order] = np.arange(len(group)) - first + 1
    return 1.0 / ranks


def attention_cooccurrence(cache: Cache, weighting: PairWeighting) -> sp.csr_matrix:
    """X_ij = sum over occurrences of i of ``dis`` for attention context word j (SemGloVe-sd)."""
    n = len(cache.vocab)
    x = sp.csr_matrix((n, n))
    for shard in tqdm(cache.shards(["attention"]), total=cache.n_shards, desc="attention X", file=sys.stderr):
        att = shard.attention
        occ_word = shard["word_ids"][shard.occurrences()]
        keep = (att["ctx"] >= 0) & (att["weight"] > 0)
        occ, ctx, w = att["occ"][keep], att["ctx"][keep], att["weight"][keep]
        dis = pair_weights(occ, w, weighting)
        x = x + sp.csr_matrix((dis, (occ_word[occ], ctx)), shape=(n, n))
    return x


def lm_cooccurrence(cache: Cache, weighting: PairWeighting) -> sp.csr_matrix:
    """X = M B: substitute mass per (word, teacher token), mapped to static words (SemGloVe-md)."""
    n = len(cache.vocab)
    token_word = cache.teacher_tokens()["word"].astype(np.int64)
    x = sp.csr_matrix((n, n))
    for shard in tqdm(
        cache.shards(["topk_ids", "topk_scores"]), total=cache.n_shards, desc="lm X", file=sys.stderr
    ):
        ids, scores = shard["topk_ids"].astype(np.int64), shard["topk_scores"].astype(np.float64)
        occ_word = shard["word_ids"][shard.occurrences()].astype(np.int64)
        k = ids.shape[1]
        group = np.repeat(np.arange(len(ids)), k)
        if weighting is PairWeighting.DIVIDE:
            probs = np.exp(scores - scores.max(axis=1, keepdims=True))  # softmax up to a row constant
            dis = pair_weights(group, probs.ravel(), weighting)
        else:
            dis = pair_weights(group, scores.ravel(), weighting)
        sub_word = token_word[ids.ravel()]
        rows = occ_word[group]
        keep = (sub_word >= 0) & (sub_word != rows)  # tokens that are no word; the target itself
        x = x + sp.csr_matrix((dis[keep], (rows[keep], sub_word[keep])), shape=(n, n))
    return x


def cooccurrence(cache: Cache, config: Config) -> sp.csr_matrix:
    """The co-occurrence matrix X of the chosen source."""
    source = Cooc(config.cooc)
    if source is Cooc.WINDOW:
        return window_cooccurrence(encoded_corpus(cache), len(cache.vocab), config.window)
    if source is Cooc.ATTENTION:
        return attention_cooccurrence(cache, PairWeighting(config.weighting))
    return lm_cooccurrence(cache, PairWeighting(config.weighting))


def fit(cache: Cache, config: Config) -> Vectors:
    """Build X from the cache, fit GloVe (:func:`glove.train_glove`), return ``w + w~``."""
    start = time.perf_counter()
    with numba_threads(config.threads):
        x = cooccurrence(cache, config)
    built = time.perf_counter() - start
    state = glove.train_glove(x, config)
    log.info(
        "semglove (%s, %s): X has %s nonzeros (built in %.1f s); cost %.5f -> %.5f",
        Cooc(config.cooc).value, PairWeighting(config.weighting).value, f"{x.nnz:,}", built,
        state.costs[0], state.costs[-1],
    )  # fmt: skip
    train: dict[str, Any] = {
        "nonzeros": int(x.nnz),
        "cooc_seconds": round(built, 2),
        "loss_per_epoch": state.costs,
    }
    return Vectors(list(cache.vocab.words), state.vectors(), cache.vocab.counts.copy(), {"train": train})


STUDENT = CacheStudent(Config, fit)
