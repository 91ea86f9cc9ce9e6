"""How a sentence is encoded from word vectors: the weighting of its words (none, SIF, Zipf).

The options of :meth:`~ctx2static.vectors.table.Vectors.encode`, declared once for the CLI, the
study keys and the API.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from ctx2static.options import Options, Rule, opt


class Weighting(str, enum.Enum):
    """How a text's words are weighted in its mean vector (:meth:`Vectors.encode`)."""

    NONE = "none"  # every word alike
    SIF = "sif"  # a / (a + p(w)), p(w) from the vectors' word counts (Arora et al. 2017)
    ZIPF = "zipf"  # a / (a + p(w)), p(w) from the row's rank by Zipf's law (Model2Vec's distill)


@dataclass(frozen=True)
class EncodeConfig(Options):
    """How :meth:`Vectors.encode` pools a text's word vectors (the exports fold the same weights in)."""

    weighting: Weighting = opt(
        Weighting.NONE,
        "Word weights in a text's mean: none; sif, a/(a+p(w)) with p(w) from the vectors' counts; "
        "zipf, the same with p(w) from the word's rank (Model2Vec's distill).",
    )
    sif_a: float = opt(1e-3, "The a of the sif and zipf weights (Arora et al. 2017: 1e-4 to 1e-3).")
    normalize: bool = opt(True, "Scale each text's vector to unit length.", off="no-normalize")

    def rules(self) -> Iterable[Rule]:
        """The weight a/(a+p) needs 0 < a; from a = 1 up it hardly differs from no weighting."""
        return [("sif_a", 0 < self.sif_a < 1, "between 0 and 1, both excluded")]
