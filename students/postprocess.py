"""Post-processing of a trained static table: "all-but-the-top" (Mu & Viswanath 2018, Algorithm 1).

Static tables learned against a teacher share a large common direction (every row is pushed
towards the same projected centres), which dominates their cosines. Subtracting the mean row and
the projections on the top D principal directions removes it. ``abtt`` in a student's config:
None = off, 0 = mean-centring only, D > 0 = centring plus D directions removed.
"""

from __future__ import annotations

import numpy as np

from ctx2static.errors import UserError
from ctx2static.options import Rule


def abtt_rule(abtt: int | None, dim: int | None = None) -> Rule:
    """``abtt`` is None (off) or 0..dim-1 (when the config knows dim), checked before training, not after."""
    ok = abtt is None or (abtt >= 0 and (dim is None or abtt < dim))
    return ("abtt", ok, "none (off) or 0 to dim - 1" if dim else "none (off) or 0 or more")


def all_but_the_top(matrix: np.ndarray, n_components: int) -> np.ndarray:
    """x~ = x - mean; x' = x~ - sum_{i<=D} (u_i . x~) u_i, u_i the top-D principal directions."""
    if not 0 <= n_components < matrix.shape[1]:
        raise UserError(f"abtt={n_components}: must be between 0 and dim - 1 ({matrix.shape[1] - 1})")
    centred = matrix.astype(np.float64) - matrix.mean(axis=0, dtype=np.float64)
    if n_components:
        _, vecs = np.linalg.eigh(centred.T @ centred)  # ascending eigenvalues
        top = vecs[:, -n_components:]
        centred -= (centred @ top) @ top.T
    return centred.astype(matrix.dtype)
