"""Retrofitting updates in sparse-matrix form (one iteration is a few whole-vocabulary passes).

:func:`retrofit_vectors` is the entry point of every method; attract-repel lives in
:mod:`ctx2static.retrofit.attract_repel`, post-specialisation in :mod:`ctx2static.retrofit.propagate`.

Both methods share one update, q_i = (a q'_i + b sum_j w_ij q_j) / (a + b sum_j w_ij), applied
to the words with in-vocabulary neighbours; words without neighbours do not move.

- ``faruqui``: Faruqui et al. 2015, Eq. 1 update, a = alpha, b = 1, w_ij = beta_ij = 1/deg(i).
- ``graph``: Zheng et al. 2022 (Context-to-Vec) Eq. 9-13: w_ij is the Student-t kernel of the
  current distance ||q_i - q_j|| normalised over i's neighbours (as the reference code), a = b = 0.5,
  which gives the reference update q_i = (q'_i + sum_j w_ij q_j) / 2 (Eq. 10 with weights summing
  to 1). For a + b != 1 we keep the division by a + b (the minimiser of word i's terms) rather
  than Eq. 10's printed a q'_i + b (...), which would rescale the vector. (The reference code
  measures the distance from the original q'_i; we follow the paper's Eq. 13, which measures it
  between the current q_i and q_j.)

The reference implementations update word by word in place (Gauss-Seidel); here every word is
updated from the previous iterate at once (Jacobi): per iteration, one compiled parallel pass
over the CSR rows (the sparse product W Q) plus, for ``graph``, one for the edge distances.

Objective. Eq. 9 (and Faruqui's Eq. 1) sum over i and over i's edges, so an edge listed both ways
counts twice; the update sets to zero the gradient of word i's *own* terms only, which is the
exact minimiser of Psi with ``b`` halved (each edge shared between its two ends). :func:`psi`
reports that form. When the weights are symmetric (w_ij = w_ji) every Jacobi sweep decreases it
(the sweep is a descent step since 2 diag(H) - H is positive definite for its Hessian H). The
papers' weights are normalised per word (1/deg(i), or the kernel over i's neighbours), hence
asymmetric in general; then no objective has this update as its descent, and Psi drops sharply
in the first iterations and may wobble slightly afterwards (the trace is kept in the output meta;
on PPDB-XL with random vectors it decreased at every iteration for both methods).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln
from tqdm import tqdm

from ctx2static.composer import map_rows
from ctx2static.memory import check_fits
from ctx2static.retrofit.attract_repel import AttractRepel, build_constraints
from ctx2static.retrofit.config import Method, RetrofitConfig
from ctx2static.retrofit.lexicon import build_graph, check_links
from ctx2static.retrofit.propagate import propagate
from ctx2static.vectors import Vectors, VectorsMeta
from ctx2static.vectors.table import require_finite


def log_student_t_kernel(sq_dist: np.ndarray, nu: float, sigma: float) -> np.ndarray:
    """Log-kernel log g(d | sigma, nu) of Context-to-Vec Eq. 11-12, from squared distances ``d^2``.

    g = C_nu (1 + d^2 / (sigma nu))^(-(nu+1)), C_nu = 2 pi (Gamma((nu+1)/2) / (sqrt(nu pi) Gamma(nu/2)))^2.
    This is the paper's printed form (and its reference code's, which squares the density): the
    textbook Student-t density has exponent -(nu+1)/2. Computed in log space with ``gammaln`` so
    that large ``nu`` and large distances neither overflow nor underflow.
    """
    log_c = np.log(2 * np.pi) + 2 * (gammaln((nu + 1) / 2) - 0.5 * np.log(nu * np.pi) - gammaln(nu / 2))
    return log_c - (nu + 1) * np.log1p(np.asarray(sq_dist, np.float64) / (sigma * nu))


@numba.njit(parallel=True, fastmath=True, cache=True)
def _edge_sq_dist(q: np.ndarray, indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:  # pragma: no cover
    out = np.empty(indices.size, np.float32)
    for i in numba.prange(indptr.size - 1):
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            s = np.float32(0.0)
            for k in range(q.shape[1]):
                t = q[i, k] - q[j, k]
                s += t * t
            out[e] = s
    return out


@numba.njit(parallel=True, fastmath=True, cache=True)
def _update(
    q: np.ndarray, q0: np.ndarray, indptr: np.ndarray, indices: np.ndarray, w: np.ndarray, a: float, b: float
) -> np.ndarray:  # pragma: no cover
    out = np.empty_like(q)
    dim = q.shape[1]
    for i in numba.prange(indptr.size - 1):
        if indptr[i + 1] == indptr[i]:
            out[i] = q[i]
            continue
        for k in range(dim):
            out[i, k] = a * q0[i, k]
        total = 0.0
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            bw = b * w[e]
            total += w[e]
            for k in range(dim):
                out[i, k] += bw * q[j, k]
        scale = 1.0 / (a + b * total)
        for k in range(dim):
            out[i, k] *= scale
    return out


def edge_sq_dist(q: np.ndarray, adjacency: sp.csr_matrix) -> np.ndarray:
    """||q_i - q_j||^2 for every stored edge (i, j) of ``adjacency``, in its CSR order (float32)."""
    return _edge_sq_dist(np.ascontiguousarray(q, np.float32), adjacency.indptr, adjacency.indices)


def _row_normalised(adjacency: sp.csr_matrix, log_w: np.ndarray) -> sp.csr_matrix:
    """Weights exp(log_w) normalised to sum 1 over each row's edges (a log-sum-exp per row)."""
    indptr = adjacency.indptr
    starts = indptr[:-1][np.diff(indptr) > 0]
    deg = np.diff(indptr)[np.diff(indptr) > 0]
    w = np.exp(log_w - np.repeat(np.maximum.reduceat(log_w, starts), deg))
    w /= np.repeat(np.add.reduceat(w, starts), deg)
    return sp.csr_matrix((w.astype(np.float32), adjacency.indices, indptr), shape=adjacency.shape)


def neighbour_weights(
    q: np.ndarray, adjacency: sp.csr_matrix, config: RetrofitConfig, sq_dist: np.ndarray | None = None
) -> sp.csr_matrix:
    """w_ij of the method at the current vectors ``q`` (see module docstring); rows sum to 1."""
    if config.method is Method.FARUQUI:
        return _row_normalised(adjacency, np.zeros(adjacency.nnz))
    if sq_dist is None:
        sq_dist = edge_sq_dist(q, adjacency)
    return _row_normalised(adjacency, log_student_t_kernel(sq_dist, config.nu, config.sigma))


def _data_graph_weights(config: RetrofitConfig) -> tuple[float, float]:
    return (config.alpha, 1.0) if config.method is Method.FARUQUI else (config.a, config.b)


def objective(
    q: np.ndarray,
    q0: np.ndarray,
    weights: sp.csr_matrix,
    a: float,
    b: float,
    sq_dist: np.ndarray | None = None,
) -> float:
    """Psi(Q) = sum_i [a ||q_i - q'_i||^2 + b sum_j w_ij ||q_i - q_j||^2] (Context-to-Vec Eq. 9).

    With a = alpha, b = 1 and w_ij = beta_ij it is Faruqui et al.'s objective (their Eq. 1).
    """
    if sq_dist is None:
        sq_dist = edge_sq_dist(q, weights)
    diff = q - q0
    data = np.einsum("ij,ij->i", diff, diff).sum(dtype=np.float64)  # float32 rows, float64 total
    edges = np.dot(weights.data.astype(np.float64), sq_dist.astype(np.float64))
    return float(a * data + b * edges)


def psi(q: np.ndarray, q0: np.ndarray, adjacency: sp.csr_matrix, config: RetrofitConfig) -> float:
    """The method's objective at ``q`` (weights evaluated at ``q``, ``b`` halved: module docstring)."""
    sq_dist = edge_sq_dist(q, adjacency)
    a, b = _data_graph_weights(config)
    return objective(q, q0, neighbour_weights(q, adjacency, config, sq_dist), a, b / 2, sq_dist)


def step(q: np.ndarray, q0: np.ndarray, weights: sp.csr_matrix, a: float, b: float) -> np.ndarray:
    """One Jacobi sweep: q_i <- (a q'_i + b sum_j w_ij q_j) / (a + b sum_j w_ij) where i has edges.

    A compiled parallel pass over the CSR rows of ``weights`` (the sparse product W Q, fused).
    """
    w = np.asarray(weights.data, np.float32)
    return _update(q, q0, weights.indptr, weights.indices, w, np.float32(a), np.float32(b))


def retrofit_matrix(
    q0: np.ndarray,
    adjacency: sp.csr_matrix,
    config: RetrofitConfig,
    on_iteration: Callable[[int, np.ndarray], None] | None = None,
    trace: list[float] | None = None,
) -> np.ndarray:
    """Run ``config.iterations`` updates from ``q0`` (rows already normalised if wanted).

    With ``trace``, appends :func:`psi` at the start and after every iteration, reusing the
    distances and weights that the next update needs anyway.
    """
    a, b = _data_graph_weights(config)
    q0 = np.ascontiguousarray(q0, np.float32)
    q = q0
    graph = config.method is Method.GRAPH
    weights = None
    for it in range(config.iterations + 1):
        last = it == config.iterations
        if last and trace is None:
            break
        sq_dist = edge_sq_dist(q, adjacency) if graph or trace is not None else None
        if weights is None or graph:
            weights = neighbour_weights(q, adjacency, config, sq_dist)
        if trace is not None:
            trace.append(objective(q, q0, weights, a, b / 2, sq_dist))
        if last:
            break
        q = step(q, q0, weights, a, b)
        if on_iteration is not None:
            on_iteration(it + 1, q)
    return q


def _faruqui_or_graph(
    q0: np.ndarray, words: Sequence[str], lexicons: Sequence[str | os.PathLike], config: RetrofitConfig
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    graph = build_graph(words, lexicons)
    check_links([graph])
    trace: list[float] = []
    with tqdm(
        total=config.iterations, desc=f"retrofit ({config.method.value})", unit="it", leave=False
    ) as bar:
        q = retrofit_matrix(q0, graph.adjacency, config, lambda _it, _q: bar.update(), trace)
    return q, graph.moving, {"lowercase_match": graph.lowercase, **graph.stats(), "objective": trace}


def _attract_repel(
    q0: np.ndarray,
    words: Sequence[str],
    lexicons: Sequence[str | os.PathLike],
    antonyms: Sequence[str | os.PathLike],
    config: RetrofitConfig,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    constraints, info = build_constraints(words, lexicons, antonyms, config.expand_antonyms)
    model = AttractRepel(q0, constraints, config)
    with tqdm(
        total=config.epochs * model.batches_per_epoch(), desc="attract-repel", unit="batch", leave=False
    ) as bar:
        costs = model.run(bar.update)
    moved = np.zeros(len(words), bool)
    moved[model.rows] = True
    entry = {
        "antonyms": [str(x) for x in antonyms],
        **info,
        **constraints.stats(),
        "objective": [c["total"] for c in costs],
        "attract_cost": [c["attract"] for c in costs],
        "repel_cost": [c["repel"] for c in costs],
    }
    return model.vectors(q0), moved, entry


def retrofit_vectors(
    vectors: Vectors,
    lexicons: Sequence[str | os.PathLike],
    config: RetrofitConfig,
    antonyms: Sequence[str | os.PathLike] = (),
) -> tuple[Vectors, list[float]]:
    """Retrofit ``vectors`` to the merged ``lexicons``; returns the new vectors and the objective trace.

    ``antonyms`` (attract-repel only) are repelled. With ``config.propagate`` the words that the
    method did not move are mapped too (:mod:`ctx2static.retrofit.propagate`). The output keeps the
    words, counts and composer: an unknown word's composed vector does not move, as a word without
    lexicon pairs, unless ``propagate`` maps it with them (the map is linear, so mapping the
    composer's rows maps every composed vector). Its meta is the input's plus a ``retrofit`` list
    entry (method, lexicons, config, graph or pair counts, objective trace: Psi, or the
    Attract-Repel cost per epoch). Input vectors holding NaN or infinity are refused: every update
    averages neighbours (or follows gradients through them), so one such row would spread.
    """
    config.check_antonyms(antonyms)
    require_finite(vectors, "retrofit input", "load them with --nonfinite drop to leave those words out")
    n, d = vectors.matrix.shape
    check_fits(  # the start, the current and the next table (or attract-repel's rows and AdaGrad sums)
        4 * n * d * 4,
        f"retrofitting {n:,} words x {d:,} dims",
        "retrofit a smaller table (fewer dims: export --dims; fewer words: fit-student --max-vocab)",
    )
    q0 = vectors.unit().astype(np.float32) if config.normalize else np.array(vectors.matrix, np.float32)
    if config.method is Method.ATTRACT_REPEL:
        q, moved, info = _attract_repel(q0, vectors.words, lexicons, antonyms, config)
    else:
        q, moved, info = _faruqui_or_graph(q0, vectors.words, lexicons, config)
    entry: dict[str, Any] = {
        "method": config.method.value,
        "lexicons": [str(x) for x in lexicons],
        "config": config.to_dict(),
        **info,
    }
    composer = vectors.composer
    if config.propagate:
        q, entry["propagate"], m = propagate(q0, q, moved, config.ridge)
        if composer is not None:
            composer = replace(composer, rows=map_rows(composer.rows, m))
    meta: VectorsMeta = {**vectors.meta, "retrofit": [*vectors.meta.get("retrofit", []), entry]}
    return Vectors(list(vectors.words), q, vectors.counts, meta, composer), info["objective"]
