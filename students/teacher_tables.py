"""The papers' per-word teacher baselines, read from the cache's per-vocabulary signals.

- ``token`` ("BERT_token"): the teacher's input token embeddings, mean-pooled over a word's subwords.
- ``word`` ("BERT_word"): the word encoded alone (special tokens around it; inside the cache's
  ``word_template``), mean-pooled over its own subwords at the cache's ``word_layer``.
- ``embed``: the teacher's own sentence embedding of the word inside the cache's
  ``embed_template`` (its pooling, dense layers and normalisation: ``pipeline/head.py``), for
  sentence-embedding teachers.

Both z-score a causal LM's rogue dimensions (``standardize``, transforms/postprocess.py).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from ctx2static.cache import Cache
from ctx2static.cache.layout import SIGNALS
from ctx2static.errors import MissingSignalError, spell
from ctx2static.options import opt
from ctx2static.students.cache_input import TeacherSpaceConfig
from ctx2static.students.student import CacheStudent
from ctx2static.transforms.postprocess import standardized_table
from ctx2static.vectors import Vectors


class Table(str, enum.Enum):
    """Which per-vocabulary teacher table to export."""

    TOKEN = "token"
    WORD = "word"
    EMBED = "embed"


@dataclass(frozen=True)
class Config(TeacherSpaceConfig):
    """Which table (set by the student's name: ``token``, ``word`` or ``embed``)."""

    table: Table = opt(Table.WORD, "The per-vocabulary table exported.")

    def signals(self) -> tuple[str, ...]:
        """The per-vocabulary tables every cache holds."""
        return ()


def fit(cache: Cache, config: Config) -> Vectors:
    """Export the teacher's ``token_emb``, ``word_emb`` or ``embed_emb`` table for the cache's vocabulary."""
    key = f"{Table(config.table).value}_emb"
    arrays = cache.vocab_arrays()
    if key not in arrays:  # the embed table: written for sentence-embedding teachers unless turned off
        off = spell("embed_template", "off")
        raise MissingSignalError(
            f"{cache.folder}: student '{Table(config.table).value}' needs the cache signal '{key}', which "
            f"this cache does not hold (its teacher has no sentence head it reads, or {off}); extract "
            f"again with {SIGNALS[key].setting()}",
            [key],
        )
    table, zscored, ratio = standardized_table(arrays[key], config.standardize)
    train: dict[str, Any] = {"table": key, "standardized": zscored, "rogue_ratio": ratio}
    return Vectors(list(cache.vocab.words), table, cache.vocab.counts.copy(), {"train": train})


STUDENT = CacheStudent(Config, fit)
