"""Attract-Repel (Mrksic et al. 2017, TACL): pull synonyms together, push antonyms apart, in mini-batches.

Notation: w_i is word i's trained row and x_i = w_i / ||w_i|| its direction (the costs read
directions only, as the reference code's ``tf.nn.l2_normalize``); x_i^0 is the initial direction.
A mini-batch B_A of attract (synonym) pairs costs the paper's attract term

    A(B_A) = sum_{(l, r) in B_A} tau(d_att + x_l . t_l - x_l . x_r) + tau(d_att + x_r . t_r - x_l . x_r)

and a mini-batch B_R of repel (antonym) pairs its repel term

    R(B_R) = sum_{(l, r) in B_R} tau(d_rep + x_l . x_r - x_l . t_l) + tau(d_rep + x_l . x_r - x_r . t_r)

with tau(z) = max(0, z) and the margins d_att = delta_att, d_rep = delta_rep. Both read
``tau(delta + s (x . t - x_l . x_r))`` per side, s = +1 for attract and -1 for repel. The
negatives t_l, t_r come from the batch's other pairs: for attract, the word closest to x_l
(x_r) by cosine; for repel, the farthest. Each batch adds the regulariser
lambda_reg sum ||x^0 - x||^2 over the words of its pairs (one term per occurrence, as the
reference code, which writes it with ``tf.nn.l2_loss`` and so halves it; we keep the paper's
unhalved form: a factor 2 in lambda_reg = 1e-9, which is immaterial).

Training, as the reference code (github.com/nmrksic/attract-repel, ``code/attract-repel.py``):
per epoch the pairs are shuffled, cut into batches, and attract and repel batches are
interleaved in a random order; with probability ``mix`` (0.5) each negative is replaced by a
random word of another pair of the batch (its ``mix_sampling``); the gradient of the batch's cost
with respect to the rows, g_w = (I - x x^T) g_x / ||w||, is clipped elementwise to [-2, 2] and
applied by AdaGrad (learning rate 0.05, accumulators starting at 0.1, TensorFlow's default; one
optimiser, so one set of accumulators, per batch type). Synonym pairs that are also antonym
pairs are dropped from the synonyms.

Where we differ, on purpose: (1) a pair is unordered and kept once (the costs are symmetric in
l, r); (2) the shuffled pairs are split into ceil(P / batch_size) batches of near-equal size, so
every pair is seen every epoch (the reference code drops the last P mod batch_size pairs);
(3) the hardest negative skips every occurrence of the word itself and of its partner (the
reference skips only their own positions, so a word repeated in a batch can be its own
"closest" negative). The rows of words in no pair are never read or written: they stay
bit-identical. The output rows of the moved words keep their input norms (1 when the input was
normalised, as the reference code's output).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from ctx2static.retrofit.config import RetrofitConfig
from ctx2static.retrofit.lexicon import build_graph, check_links

ADAGRAD_INIT = 0.1  # tf.train.AdagradOptimizer's initial_accumulator_value (reference code)
GRAD_CLIP = 2.0  # reference code: tf.clip_by_value(grad, -2., 2.)
ATTRACT, REPEL = 1.0, -1.0  # the sign s of each kind's cost


@dataclass
class Constraints:
    """Unordered word-index pairs (i < j) to attract and to repel, over one vocabulary."""

    attract: np.ndarray  # (P, 2) int64
    repel: np.ndarray  # (Q, 2) int64

    @property
    def words(self) -> np.ndarray:
        """Sorted indices of the words in at least one pair (the only rows that move)."""
        return np.unique(np.concatenate([self.attract.ravel(), self.repel.ravel()]))

    def stats(self) -> dict[str, int]:
        """Pair and word counts for logs and metadata."""
        return {
            "attract_pairs": len(self.attract),
            "repel_pairs": len(self.repel),
            "words_with_neighbours": len(self.words),
        }


def unordered_pairs(adjacency: sp.spmatrix) -> np.ndarray:
    """Pairs (i, j), i < j, linked in either direction by ``adjacency``, sorted; shape (P, 2)."""
    upper = sp.triu(adjacency + adjacency.T, k=1).tocoo()
    pairs = np.stack([upper.row, upper.col], axis=1).astype(np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def expand_through_synonyms(repel: sp.spmatrix, attract: sp.spmatrix) -> sp.csr_matrix:
    """Antonymy passed through one synonym step: antonyms (a, b) and a synonym s of a give (s, b).

    Likewise a synonym of b gives (a, s). Returns the symmetric boolean union R + S R + R S
    (diagonal dropped), S and R symmetrised first.
    """
    r = ((repel + repel.T) > 0).astype(np.float32)
    s = ((attract + attract.T) > 0).astype(np.float32)
    out = ((r + s @ r + r @ s) > 0).astype(np.float32).tolil()
    out.setdiag(0)
    return out.tocsr()


def build_constraints(
    words: Sequence[str],
    lexicons: Sequence[str | os.PathLike],
    antonyms: Sequence[str | os.PathLike],
    expand: bool = False,
) -> tuple[Constraints, dict[str, int | bool]]:
    """Attract pairs from the synonym ``lexicons``, repel pairs from the ``antonyms`` (same reader).

    Pairs listed as both are dropped from the attract set (reference code). Also returns the
    directed edge count and whether matching was lower-cased, for the metadata.
    """
    syn = build_graph(words, lexicons)
    ant = build_graph(words, antonyms)
    check_links([syn, ant])
    repel_adj = expand_through_synonyms(ant.adjacency, syn.adjacency) if expand else ant.adjacency
    attract, repel = unordered_pairs(syn.adjacency), unordered_pairs(repel_adj)
    n = len(words)
    attract = attract[~np.isin(attract[:, 0] * n + attract[:, 1], repel[:, 0] * n + repel[:, 1])]
    info = {"edges": int(syn.adjacency.nnz + ant.adjacency.nnz), "lowercase_match": syn.lowercase}
    return Constraints(attract, repel), info


def _unit(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    norms = np.sqrt(np.einsum("ij,ij->i", w, w))[:, None]
    return w / np.maximum(norms, 1e-12), norms


def _partner(size: int) -> np.ndarray:
    """Slot layout of a batch of B pairs: slots 0..B-1 are the left words, B..2B-1 the right ones."""
    half = size // 2
    return np.concatenate([np.arange(half, size), np.arange(half)])


@numba.njit(fastmath=True, cache=True)
def _hardest(
    x: np.ndarray, ids: np.ndarray, sign: float
) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    size = x.shape[0]
    half = size // 2
    neg = np.zeros(size, np.int64)
    valid = np.zeros(size, np.bool_)
    for k in range(size):
        partner = ids[k + half] if k < half else ids[k - half]
        best = -np.inf
        for j in range(size):
            if ids[j] == ids[k] or ids[j] == partner:
                continue
            s = np.float32(0.0)
            for c in range(x.shape[1]):
                s += x[k, c] * x[j, c]
            if sign * s > best:
                best = sign * s
                neg[k] = j
                valid[k] = True
    return neg, valid


def hardest_negatives(x: np.ndarray, ids: np.ndarray, sign: float) -> tuple[np.ndarray, np.ndarray]:
    """Per slot, the slot of the closest (attract, sign +1) or farthest (repel) other word of the batch.

    ``x`` holds the 2B unit vectors in slot order (lefts, then rights) and ``ids`` their words.
    Occurrences of the slot's own word and of its partner are skipped; ties go to the first slot.
    Returns the negative slots and whether one exists (a batch of one pair has none). A compiled
    single-threaded loop: the 2B x 2B similarities are a tiny product, which a threaded BLAS
    makes slower, not faster, on a busy machine.
    """
    return _hardest(np.ascontiguousarray(x, np.float32), np.asarray(ids, np.int64), float(sign))


def mix_negatives(neg: np.ndarray, mix: float, rng: np.random.Generator) -> np.ndarray:
    """Replace each negative, with probability ``mix``, by a random word of another pair (reference code)."""
    size = len(neg)
    pairs = size // 2
    if pairs < 2 or mix == 0:
        return neg
    other = (np.arange(size) % pairs + rng.integers(1, pairs, size)) % pairs
    random_slot = other + pairs * rng.integers(0, 2, size)
    return np.where(rng.random(size) < mix, random_slot, neg)


def batch_cost(
    x: np.ndarray,
    x0: np.ndarray,
    neg: np.ndarray,
    valid: np.ndarray,
    sign: float,
    margin: float,
    l2_reg: float,
) -> tuple[float, np.ndarray]:
    """The batch's cost (A(B_A) or R(B_R) plus the regulariser) and its gradient with respect to the slots' x.

    Per slot k with partner p(k) and negative n(k): c_k = tau(margin + sign (x_k . x_n(k) - x_k . x_p(k))),
    zero where no negative exists. d c_k / d x_k = sign (x_n(k) - x_p(k)), d c_k / d x_n(k) =
    sign x_k, d c_k / d x_p(k) = -sign x_k, taken where c_k > 0; the regulariser adds
    2 lambda_reg (x_k - x_k^0). Slots sharing a word each get their part (summed by the caller).
    """
    partner = _partner(len(x))
    pair_sim = np.einsum("ij,ij->i", x, x[partner])
    neg_sim = np.einsum("ij,ij->i", x, x[neg])
    hinge = np.where(valid, margin + sign * (neg_sim - pair_sim), 0.0)
    active = (hinge > 0).astype(x.dtype)
    diff = x - x0
    cost = float(np.maximum(hinge, 0).sum(dtype=np.float64) + l2_reg * np.einsum("ij,ij->", diff, diff))
    w = (sign * active)[:, None]
    grad = w * x[neg] - (w + w[partner]) * x[partner] + 2 * l2_reg * diff
    rows, summed = _sum_rows(neg, w * x)
    grad[rows] += summed
    return cost, grad


def _sum_rows(index: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``index`` (sorted) and, for each, the sum of its rows of ``values``.

    A sort and ``np.add.reduceat``: many times faster than ``np.add.at`` on rows.
    """
    order = np.argsort(index, kind="stable")
    sorted_index = index[order]
    starts = np.flatnonzero(np.r_[True, sorted_index[1:] != sorted_index[:-1]])
    return sorted_index[starts], np.add.reduceat(values[order], starts, axis=0)


def row_gradient(
    w_rows: np.ndarray, slot_rows: np.ndarray, grad_x: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Chain the slots' gradients through x = w / ||w||: the distinct rows and (I - x x^T) g / ||w||."""
    rows, g = _sum_rows(slot_rows, grad_x)
    x, norms = _unit(w_rows[rows])
    return rows, (g - x * np.einsum("ij,ij->i", x, g)[:, None]) / np.maximum(norms, 1e-12)


class AttractRepel:
    """Attract-Repel over the rows of the words in ``constraints`` (state: rows, AdaGrad accumulators)."""

    def __init__(self, q0: np.ndarray, constraints: Constraints, config: RetrofitConfig) -> None:
        self.config = config
        self.rows = constraints.words  # vocabulary index of each trained row
        self.attract = np.searchsorted(self.rows, constraints.attract)
        self.repel = np.searchsorted(self.rows, constraints.repel)
        self.w = np.array(q0[self.rows], np.float32)
        self.x0, _ = _unit(self.w)
        self.accumulators = {s: np.full_like(self.w, ADAGRAD_INIT) for s in (ATTRACT, REPEL)}

    def _kind(self, sign: float) -> tuple[np.ndarray, float]:
        c = self.config
        return (self.attract, c.delta_att) if sign == ATTRACT else (self.repel, c.delta_rep)

    def batches(self, sign: float, rng: np.random.Generator) -> list[np.ndarray]:
        """The kind's pairs shuffled and cut into ceil(P / batch_size) near-equal batches."""
        pairs, _ = self._kind(sign)
        if not len(pairs):
            return []
        order = rng.permutation(len(pairs))
        return np.array_split(pairs[order], -(-len(pairs) // self.config.batch_size))

    def cost(
        self, batch: np.ndarray, sign: float, rng: np.random.Generator | None = None
    ) -> tuple[float, np.ndarray, np.ndarray]:
        """Cost, slot rows and slot gradients of one batch (random negatives mixed in when ``rng``)."""
        ids = np.concatenate([batch[:, 0], batch[:, 1]])
        x, _ = _unit(self.w[ids])
        neg, valid = hardest_negatives(x, ids, sign)
        if rng is not None:
            neg = mix_negatives(neg, self.config.mix, rng)
        _, margin = self._kind(sign)
        cost, grad = batch_cost(x, self.x0[ids], neg, valid, sign, margin, self.config.l2_reg)
        return cost, ids, grad

    def step(self, batch: np.ndarray, sign: float, rng: np.random.Generator) -> float:
        """One AdaGrad step on the batch's cost (clipped gradient, the kind's accumulators); returns it."""
        cost, ids, grad = self.cost(batch, sign, rng)
        rows, g = row_gradient(self.w, ids, grad)
        g = np.clip(g, -GRAD_CLIP, GRAD_CLIP)
        acc = self.accumulators[sign]
        acc[rows] += g * g
        self.w[rows] -= self.config.lr * g / np.sqrt(acc[rows])
        return cost

    def objective(self, batches: dict[float, list[np.ndarray]]) -> dict[str, float]:
        """Attract, repel and total cost over fixed batches, hardest negatives only (the trace)."""
        out = {}
        for sign, name in ((ATTRACT, "attract"), (REPEL, "repel")):
            out[name] = sum(self.cost(b, sign)[0] for b in batches[sign])
        out["total"] = out["attract"] + out["repel"]
        return out

    def run(self, on_batch: Callable[[], None] | None = None) -> list[dict[str, float]]:
        """``epochs`` epochs; returns the costs at the start and after every epoch."""
        rng = np.random.default_rng(self.config.seed)
        fixed_rng = np.random.default_rng([self.config.seed, 1])  # the trace's batches, drawn once
        fixed = {s: self.batches(s, fixed_rng) for s in (ATTRACT, REPEL)}
        trace = [self.objective(fixed)]
        for _ in range(self.config.epochs):
            work = {s: self.batches(s, rng) for s in (ATTRACT, REPEL)}
            kinds = rng.permutation([ATTRACT] * len(work[ATTRACT]) + [REPEL] * len(work[REPEL]))
            position = {ATTRACT: 0, REPEL: 0}
            for sign in kinds:
                self.step(work[sign][position[sign]], sign, rng)
                position[sign] += 1
                if on_batch is not None:
                    on_batch()
            trace.append(self.objective(fixed))
        return trace

    def batches_per_epoch(self) -> int:
        """How many steps one epoch takes."""
        size = self.config.batch_size
        return sum(-(-len(p) // size) for p in (self.attract, self.repel))

    def vectors(self, q0: np.ndarray) -> np.ndarray:
        """``q0`` with the trained rows' directions written in at their input norms; other rows untouched."""
        q = np.array(q0, np.float32)
        x, _ = _unit(self.w)
        q[self.rows] = x * np.linalg.norm(q0[self.rows], axis=1, keepdims=True)
        return q
