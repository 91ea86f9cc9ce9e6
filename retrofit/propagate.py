"""Post-specialisation (Vulic et al. 2018, NAACL), linear form: carry a specialisation to the words it missed.

Retrofitting and Attract-Repel move only the words of the lexicon pairs. Post-specialisation
learns the map f from original to specialised vectors on those words, f(x_i^0) ~ x_i, and
applies it to every other word. The paper's f is a deep feed-forward net trained with a
max-margin loss; we fit the linear map by ridge regression towards the identity,

    M = argmin_M ||X^0 M - X||_F^2 + rho ||M - I||_F^2 = (X^0T X^0 + rho I)^-1 (X^0T X + rho I),

(one d x d solve), so with few training words (or rho -> infinity) M tends to the identity and
the unseen words stay where they were. The moved words keep their specialised vectors.
"""

from __future__ import annotations

import numpy as np


def fit_map(x0: np.ndarray, x: np.ndarray, ridge: float) -> np.ndarray:
    """The ridge map M (d x d, float64) from rows ``x0`` to rows ``x``, pulled towards I by ``ridge``."""
    a = np.asarray(x0, np.float64)
    b = np.asarray(x, np.float64)
    eye = np.eye(a.shape[1])
    return np.linalg.solve(a.T @ a + ridge * eye, a.T @ b + ridge * eye)


def propagate(
    q0: np.ndarray, q: np.ndarray, moved: np.ndarray, ridge: float
) -> tuple[np.ndarray, dict[str, float], np.ndarray]:
    """``q`` with the rows not ``moved`` replaced by ``q0 M``, M fitted on the moved rows (module docstring).

    Also returns, for the metadata, how many words the map was fitted on and the mean cosine
    between ``q0 M`` and ``q`` on them (how well a linear map explains the specialisation), and
    M itself (the identity when no word moved).
    """
    moved = np.asarray(moved, bool)
    if not moved.any():
        return np.array(q, np.float32), {"fitted_on": 0, "fit_cosine": float("nan")}, np.eye(q0.shape[1])
    m = fit_map(q0[moved], q[moved], ridge)
    out = np.array(q, np.float32)
    out[~moved] = np.asarray(q0[~moved], np.float64) @ m
    pred = np.asarray(q0[moved], np.float64) @ m
    target = np.asarray(q[moved], np.float64)
    cos = np.einsum("ij,ij->i", pred, target) / np.maximum(
        np.linalg.norm(pred, axis=1) * np.linalg.norm(target, axis=1), 1e-12
    )
    return out, {"fitted_on": int(moved.sum()), "fit_cosine": float(cos.mean())}, m
