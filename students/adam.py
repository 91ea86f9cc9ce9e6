"""Lazy (sparse) Adam, the optimiser of the students that step a few rows of a large table at a time.

Kingma & Ba 2015, Algorithm 1, applied to the touched rows only, as torch.optim.SparseAdam does:
a row's moments decay only on the steps that touch it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, fastmath=True)
def sparse_adam(
    U: np.ndarray,
    m: np.ndarray,
    v: np.ndarray,
    grad: np.ndarray,
    rows: np.ndarray,
    n_rows: int,
    scale: float,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    step: int,
) -> None:
    """One Adam step on ``rows[:n_rows]`` of ``U`` with gradient ``scale * grad``; zeroes their grad."""
    step_size = lr * math.sqrt(1.0 - beta2**step) / (1.0 - beta1**step)
    for q in range(n_rows):
        r = rows[q]
        for d in range(U.shape[1]):
            g = grad[r, d] * scale
            m[r, d] = beta1 * m[r, d] + (1.0 - beta1) * g
            v[r, d] = beta2 * v[r, d] + (1.0 - beta2) * g * g
            U[r, d] -= step_size * m[r, d] / (math.sqrt(v[r, d]) + eps)
            grad[r, d] = 0.0
