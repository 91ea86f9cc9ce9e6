"""The stable softplus and sigmoid of the logistic (negative-sampling) losses, for Numba kernels.

Every negative-sampling student scores a pair by ``s(x) = 1 / (1 + e^-x)`` and pays
``softplus(-x) = log(1 + e^-x)`` for a positive pair, ``softplus(x)`` for a negative one
(Mikolov et al. 2013 Eq. 4). Written here once, in the form that neither overflows for large
``|x|`` nor loses the small losses to ``log(1 + tiny)``.
"""

from __future__ import annotations

import math

from numba import njit


@njit(cache=True, fastmath=True, inline="always")
def softplus(x: float) -> float:
    """log(1 + e^x), stable."""
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


@njit(cache=True, fastmath=True, inline="always")
def logistic(x: float) -> tuple[float, float]:
    """(s(x), softplus(x)) from one exponential, stable: s(x) = 1 / (1 + e^-x), softplus = log(1 + e^x)."""
    t = math.exp(-abs(x))
    s = 1.0 / (1.0 + t) if x >= 0.0 else t / (1.0 + t)
    return s, max(x, 0.0) + math.log1p(t)
