"""Post-processing in the teacher's space: "all-but-the-top" and z-scored (rogue) dimensions.

All-but-the-top (Mu & Viswanath 2018, Algorithm 1): static tables learned against a teacher share
a large common direction (every row is pushed towards the same projected centres), which dominates
their cosines. Subtracting the mean row and the projections on the top D principal directions
removes it. ``abtt`` in a student's config: None = off, 0 = mean-centring only, D > 0 = centring
plus D directions removed.

Rogue dimensions (Timkey & van Schijndel 2021, "All Bark and No Bite"): a few hidden dimensions of
many causal LMs carry activations hundreds of times larger than the rest, so they decide every
cosine (and saturate x2static's logistic loss, Eq. 1 of Gupta & Jaggi, whose logits are u . E_ctx).
Z-scoring each dimension, x'_d = (x_d - mean_d) / std_d, gives every dimension one unit of
variance: ``standardize`` in the configs of the students whose table lives in the teacher's
dimensions (ase, word, token, x2static, sentence). ``auto`` z-scores when one dimension's mean
square E[x_d^2] is over :data:`ROGUE_RATIO` times the median dimension's.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ctx2static.errors import OptionError, UserError
from ctx2static.options import Rule

log = logging.getLogger(__name__)


def abtt_rule(abtt: int | None, dim: int | None = None) -> Rule:
    """``abtt`` is None (off) or 0..dim-1 (when the config knows dim), checked before training, not after."""
    ok = abtt is None or (abtt >= 0 and (dim is None or abtt < dim))
    return ("abtt", ok, "none (off) or 0 to dim - 1" if dim else "none (off) or 0 or more")


def all_but_the_top(matrix: np.ndarray, n_components: int) -> np.ndarray:
    """x~ = x - mean; x' = x~ - sum_{i<=D} (u_i . x~) u_i, u_i the top-D principal directions."""
    if not 0 <= n_components < matrix.shape[1]:
        raise OptionError(
            f"abtt={n_components}: must be between 0 and dim - 1 ({matrix.shape[1] - 1})", "abtt"
        )
    centred = matrix.astype(np.float64) - matrix.mean(axis=0, dtype=np.float64)
    if n_components:
        _, vecs = np.linalg.eigh(centred.T @ centred)  # ascending eigenvalues
        top = vecs[:, -n_components:]
        centred -= (centred @ top) @ top.T
    return centred.astype(matrix.dtype)


class Standardize(str, enum.Enum):
    """Whether a student z-scores the teacher's dimensions."""

    AUTO = "auto"  # when one dimension's energy is over ROGUE_RATIO times the median's
    ON = "on"
    OFF = "off"


ROGUE_RATIO = 1000.0
"""``auto``'s threshold on max_d E[x_d^2] / median_d E[x_d^2]: between the encoders' ratios (MiniLM,
MPNet) and the causal LMs' (SmolLM2, Gemma 3) over sentence contexts and the ase and word tables on
Brown, above every input token table's (measured: Results page, rogue_ratios)."""


@dataclass(frozen=True)
class DimensionStats:
    """Per-dimension mean and standard deviation of a set of rows, and how rogue the largest is."""

    mean: np.ndarray
    std: np.ndarray
    rogue_ratio: float  # max_d E[x_d^2] / median_d E[x_d^2]

    @classmethod
    def of_rows(cls, blocks: Iterable[np.ndarray]) -> DimensionStats:
        """Streamed over row blocks (a cache's shards) with float64 sums: no block is kept."""
        n, s1, s2 = 0, 0.0, 0.0
        for block in blocks:
            x = np.asarray(block, dtype=np.float64)
            n, s1, s2 = n + len(x), s1 + x.sum(0), s2 + np.square(x).sum(0)
        if n == 0:
            raise UserError("no rows to standardise: the cache holds no sentence")
        mean, energy = np.asarray(s1) / n, np.asarray(s2) / n
        std = np.sqrt(np.maximum(energy - mean**2, 0.0))
        return cls(mean, std, float(energy.max() / max(np.median(energy), 1e-300)))

    def wanted(self, mode: Standardize) -> bool:
        """``on``, or ``auto`` with a dimension over :data:`ROGUE_RATIO` times the median's energy."""
        mode = Standardize(mode)
        return mode is Standardize.ON or (mode is Standardize.AUTO and self.rogue_ratio > ROGUE_RATIO)

    def zscore(self, x: np.ndarray) -> np.ndarray:
        """(x - mean) / std per dimension, float32; a constant dimension becomes 0."""
        safe = np.where(self.std > 0, self.std, 1.0)
        return ((np.asarray(x, dtype=np.float64) - self.mean) / safe * (self.std > 0)).astype(np.float32)


def standardized_table(matrix: np.ndarray, mode: Standardize) -> tuple[np.ndarray, bool, float]:
    """A teacher-space table z-scored per :class:`Standardize` ``mode``: (table, z-scored?, rogue ratio)."""
    stats = DimensionStats.of_rows([matrix])
    if stats.wanted(mode):
        log.info(
            "a teacher dimension carries %.0fx the median dimension's energy: the table is z-scored "
            "(standardize=%s; --set standardize=off keeps the teacher's scale)",
            stats.rogue_ratio,
            Standardize(mode).value,
        )
        return stats.zscore(matrix), True, stats.rogue_ratio
    return matrix, False, stats.rogue_ratio
