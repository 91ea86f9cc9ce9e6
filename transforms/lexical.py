"""Lexical dimensions: each word's identity beside its meaning, so cosines count the rare words texts share.

A mean of distilled rows says what a text is about, hardly which rare words it holds: two news
articles about football sit close whichever clubs they name, and a search by a headline needs the
names. Random Indexing (Kanerva, Kristofersson & Holst 2000; Sahlgren 2005) gives each word a fixed
random vector; appended to the table and scaled by the word's SIF weight (Arora et al. 2017), it
makes the dot product of two texts' means gain a weighted count of the words they share:

    v'_w = [ v_w ; lambda * mu * a / (a + p(w)) * r_w ],   r_w ~ N(0, I_D / D) seeded by w's spelling   (L1)

``mu`` is the median norm of the table's rows, so ``lambda`` (``lexical_weight``) sets the two
parts' shares of a cosine whatever the table's scale. E[r_w . r_u] = 0 for w != u and
E||r_w||^2 = 1, so for texts s and s' the lexical part of <m_s, m_s'> is (lambda mu)^2 / (|s| |s'|)
times the sum of a(w)^2 over the words they share, plus noise of order 1/sqrt(D): BM25's idea
(shared rare words count most) inside one dense vector, the hybrid of a dense and a lexical score
that search engines compute apart. ``p(w)`` is the word's share of the table's counts (``sif``),
or its Zipf estimate from the rows' order when the table has no counts (``zipf``, as
:meth:`~ctx2static.vectors.Vectors.row_weights` has it). A composer's teacher pieces get theirs too
(``p = 0``: weight 1, as :meth:`~ctx2static.vectors.Vectors.encode` counts an unseen word's pieces),
seeded by the piece's spelling, so an unseen name is matched by its pieces. A word's ``r_w``
depends on nothing but its UTF-8 bytes (blake2b seeds the generator), so tables made apart agree
and a second export is the same table.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import cast

import numpy as np

from ctx2static.errors import OptionError, spell
from ctx2static.vectors import Vectors, VectorsMeta
from ctx2static.vectors.encoding import Weighting


def identity_rows(keys: list[str], dims: int) -> np.ndarray:
    """float32 ``[len(keys), dims]``: each key's r_w of (L1), N(0, I/dims) drawn from a seed of its bytes."""
    out = np.empty((len(keys), dims), dtype=np.float32)
    for i, key in enumerate(keys):
        seed = int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little")
        out[i] = np.random.default_rng(seed).standard_normal(dims, dtype=np.float32)
    return out / np.float32(np.sqrt(dims))


def with_lexical(vectors: Vectors, dims: int, weight: float, sif_a: float) -> Vectors:
    """``vectors`` with ``dims`` lexical dimensions appended to every row and composer piece, by (L1).

    ``weight`` is lambda and ``sif_a`` the a of (L1) (``ctx2static export``'s defaults: ExportConfig).
    """
    if dims < 1:
        raise OptionError(f"{spell('lexical_dims', dims)}: give 1 or more (0 adds none)", "lexical_dims")
    if weight <= 0:
        raise OptionError(f"{spell('lexical_weight', weight)}: give a weight above 0", "lexical_weight")
    if "lexical" in vectors.meta:
        raise OptionError(
            f"{spell('lexical_dims', dims)}: these vectors already carry "
            f"{vectors.meta['lexical']['dims']} lexical dimensions; export the table they were added to",
            "lexical_dims",
        )
    weighting = Weighting.SIF if vectors.counts is not None and vectors.counts.sum() else Weighting.ZIPF
    scale = weight * float(np.median(np.linalg.norm(vectors.matrix, axis=1)))
    a = vectors.row_weights(weighting, sif_a) * np.float32(scale)
    matrix = np.hstack([vectors.matrix, identity_rows(list(vectors.words), dims) * a[:, None]])
    composer = vectors.composer
    if composer is not None:
        pieces = (identity_rows(composer.pieces(), dims) * np.float32(scale)).astype(composer.rows.dtype)
        composer = replace(composer, rows=np.hstack([composer.rows, pieces]))
    record = {"dims": dims, "weight": weight, "weighting": weighting.value, "sif_a": sif_a, "of": vectors.dim}
    meta = cast(VectorsMeta, {**vectors.meta, "lexical": record})
    return Vectors(list(vectors.words), matrix, vectors.counts, meta, composer)
