"""ASE / "BERT_avg" (Bommasani et al. 2020): each word's contextual vectors averaged over the corpus.

v_w = (1/|occ(w)|) sum_{occurrences of w} o_i, with o_i the teacher's subword-pooled last-layer
vector (the cache's ``occ_vec``). Words the cache never saw aligned are left out of the output.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ctx2static.cache import Cache
from ctx2static.students.cache_input import occurrence_means
from ctx2static.vectors import Vectors


@dataclass(frozen=True)
class Config:
    """ASE has no hyper-parameters beyond which words to keep."""

    min_occurrences: int = 1  # words seen fewer times (aligned) are dropped


def fit(cache: Cache, config: Config) -> Vectors:
    """Average the cached contextual vectors per word, streaming shard by shard."""
    means, seen = occurrence_means(cache)
    keep = np.flatnonzero(seen >= max(config.min_occurrences, 1))
    words = [cache.vocab.words[i] for i in keep]
    return Vectors(words, means[keep], cache.vocab.counts[keep], {"occurrences": int(seen.sum())})
