"""Fit a :class:`~ctx2static.composer.Composer` for any vectors over a cache's vocabulary (no teacher needed).

The cache holds everything the composer needs: the teacher's tokenizer, its input-embedding table
and, per vocabulary word, the subword mean of those embeddings (``token_emb``, the map's inputs).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from ctx2static.cache.layout import TEACHER_TOKENIZER
from ctx2static.cache.reader import Cache
from ctx2static.composer import Composer, build_composer
from ctx2static.errors import InputError
from ctx2static.vectors import Vectors
from ctx2static.vectors.outputs import check_vectors_output, vector_files

log = logging.getLogger(__name__)


def composable(cache: Cache) -> bool:
    """Whether the cache holds what a composer needs (a finished cache with the teacher's tokenizer)."""
    return cache.complete and TEACHER_TOKENIZER in cache.manifest.get("vocab_files", {})


def fit_composer(cache: Cache, vectors: Vectors, ridge: float | None = None) -> Composer:
    """The composer of ``cache``'s teacher mapped into ``vectors``' space, fitted on the words both hold.

    Words the teacher's maximum length cut (``word_complete`` false) are left out of the fit.
    """
    arrays = cache.vocab_arrays()
    cache_row = np.array([cache.vocab.index.get(w, -1) for w in vectors.words], dtype=np.int64)
    keep = cache_row >= 0
    keep[keep] = arrays["word_complete"][cache_row[keep]]
    if keep.sum() < max(2, len(vectors) // 2):  # the ridge copes with few words, not with another cache
        raise InputError(
            cache.folder,
            f"{cache.folder}: only {int(keep.sum())} of the vectors' {len(vectors)} words are in this "
            "cache's vocabulary; fit the composer from the cache the vectors were trained on",
        )
    composer = build_composer(
        arrays["token_emb"][cache_row[keep]],
        np.asarray(vectors.matrix)[keep],
        arrays["teacher_token_emb"],
        cache.teacher_tokenizer(),
        bool(cache.manifest["identity"]["corpus_config"]["lowercase"]),
        ridge,
    )
    composer.info["teacher"] = cache.manifest["identity"]["teacher"].get("name")
    log.info(
        "composer: %s teacher tokens -> %d dims, map fitted on %s words (ridge %g, held-out cosine %s)",
        f"{len(composer.rows):,}",
        composer.dim,
        f"{int(keep.sum()):,}",
        composer.info["ridge"],
        composer.info.get("validation_cosine"),
    )
    return composer


def compose_file(
    vectors: str | os.PathLike,
    cache_dir: str | os.PathLike,
    out: str | os.PathLike,
    ridge: float | None = None,
) -> tuple[Composer, Path]:
    """The vectors at ``vectors`` with a composer fitted on ``cache_dir``, saved at ``out`` (``compose``).

    ``out`` is checked before the work and is never one of the inputs: the vectors given stay as
    they are. Returns the composer and the path the vectors were saved at.
    """
    check_vectors_output(out, [*vector_files(vectors), cache_dir])
    v = Vectors.load(vectors)
    v.composer = fit_composer(Cache.open(cache_dir), v, ridge)
    return v.composer, v.save(out)
