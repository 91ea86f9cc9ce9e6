"""ASE / "BERT_avg" (Bommasani et al. 2020): each word's contextual vectors averaged over the corpus.

v_w = (1/|occ(w)|) sum_{occurrences of w} o_i, with o_i the teacher's subword-pooled vector of the
chosen layer. The teacher stage sums them per word as it runs (``occ_sum``/``occ_count``), so no
per-occurrence vectors are needed. Words the cache never saw aligned are left out of the output.
A causal LM's rogue dimensions are z-scored (``standardize``, transforms/postprocess.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ctx2static.cache import Cache
from ctx2static.options import Rule, at_least, opt
from ctx2static.students.cache_input import TeacherSpaceConfig, occurrence_means
from ctx2static.students.student import CacheStudent
from ctx2static.transforms.postprocess import standardized_table
from ctx2static.vectors import Vectors


@dataclass(frozen=True)
class Config(TeacherSpaceConfig):
    """ASE has no hyper-parameters beyond which words to keep and whether to z-score dimensions."""

    min_occurrences: int = opt(1, "Drop words the cache saw (aligned) fewer times.")

    def rules(self) -> Iterable[Rule]:
        """At least one occurrence."""
        return at_least(self, 1, "min_occurrences")

    def signals(self) -> tuple[str, ...]:
        """Only the per-word sums every cache holds."""
        return ()


def fit(cache: Cache, config: Config) -> Vectors:
    """Average the cached contextual vectors per word, streaming shard by shard."""
    means, seen = occurrence_means(cache)
    keep = np.flatnonzero(seen >= config.min_occurrences)
    words = [cache.vocab.words[i] for i in keep]
    table, zscored, ratio = standardized_table(means[keep], config.standardize)
    train: dict[str, Any] = {"occurrences": int(seen.sum()), "standardized": zscored, "rogue_ratio": ratio}
    return Vectors(words, table, cache.vocab.counts[keep], {"train": train})


STUDENT = CacheStudent(Config, fit)
