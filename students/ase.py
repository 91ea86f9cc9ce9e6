"""ASE / "BERT_avg" (Bommasani et al. 2020): each word's contextual vectors averaged over the corpus.

v_w = (1/|occ(w)|) sum_{occurrences of w} o_i, with o_i the teacher's subword-pooled last-layer
vector (the cache's ``occ_vec``). Words the cache never saw aligned are left out of the output.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from ctx2static.cache import Cache
from ctx2static.students.cache_input import require
from ctx2static.vectors import Vectors


@dataclass(frozen=True)
class Config:
    """ASE has no hyper-parameters beyond which words to keep."""

    min_occurrences: int = 1  # words seen fewer times (aligned) are dropped


def fit(cache: Cache, config: Config) -> Vectors:
    """Average the cached contextual vectors per word, streaming shard by shard."""
    require(cache, "occ_vec", "ase")
    n_words = len(cache.vocab)
    sums: np.ndarray | None = None
    seen = np.zeros(n_words, dtype=np.int64)
    for shard in tqdm(cache.shards(["occ_vec"]), total=cache.n_shards, desc="ase", file=sys.stderr):
        ids = shard["word_ids"][shard.occurrences()]
        vecs = shard["occ_vec"].astype(np.float32)
        member = sp.csr_matrix(
            (np.ones(len(ids), np.float32), (ids, np.arange(len(ids)))), (n_words, len(ids))
        )
        part = member @ vecs
        sums = part.astype(np.float64) if sums is None else sums + part
        seen += np.bincount(ids, minlength=n_words)
    assert sums is not None  # require() guarantees a shard
    keep = np.flatnonzero(seen >= max(config.min_occurrences, 1))
    matrix = (sums[keep] / seen[keep, None]).astype(np.float32)
    words = [cache.vocab.words[i] for i in keep]
    return Vectors(words, matrix, cache.vocab.counts[keep], {"occurrences": int(seen.sum())})
