"""GloVe (Pennington et al. 2014): weighted least squares on log co-occurrences, trained by AdaGrad.

Loss (Pennington Eq. 8, SemGloVe Eq. 2-3), with GloVe C's factor 1/2::

    J = sum_{X_ij > 0} 1/2 f(X_ij) (w_i . w~_j + b_i + b~_j - log X_ij)^2,
    f(x) = min(1, (x / xmax)^alpha)

The trainer (:func:`train_glove`) takes any non-negative square co-occurrence matrix, so the
SemGloVe students reuse it with X built from a teacher's attention or substitutes; :func:`fit`
is the plain baseline on window counts (:mod:`ctx2static.students.cooc`). Training mirrors
GloVe C (``glove.c``): parameters in float64, uniform init in (-0.5, 0.5)/dim, AdaGrad
accumulators initialised to 1 and fed the squared *learning-rate-scaled* gradient, per-coordinate
gradient clipping, Hogwild updates over the nonzeros (shuffled each epoch here; GloVe C shuffles
once), output ``w + w~``. Checkpoints hold the AdaGrad state, so a resumed run continues exactly.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import zipfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from ctx2static.errors import InputError, OptionError, UserError
from ctx2static.fileio.atomic import atomic_write
from ctx2static.fileio.outputs import check_writable
from ctx2static.fileio.temps import remove_stale_temps
from ctx2static.memory import check_fits
from ctx2static.options import Options, Rule, at_least, opt, positive, rate_rule, seed_rule
from ctx2static.students.budget import FLOAT32, FLOAT64, Sizes
from ctx2static.students.cooc import window_cooccurrence
from ctx2static.students.student import TextStudent
from ctx2static.text.encoded import EncodedCorpus
from ctx2static.text.vocab import Vocab
from ctx2static.threads import numba_threads, threads_rule
from ctx2static.transforms.postprocess import abtt_rule
from ctx2static.vectors import Vectors

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Config(Options):
    """GloVe defaults (Pennington 2014; SemGloVe Sec. 3.1; GloVe C ``glove.c`` / ``demo.sh``)."""

    dim: int = opt(100, "Vector size (paper and SemGloVe: 300; 100 as the sgns/cbow baselines).")
    window: int = opt(10, "Symmetric window, 1/d weights (paper Sec. 4.2; GloVe C demo.sh: 15).")
    xmax: float = opt(10.0, "Cap of f(x) (SemGloVe Eq. 3, GloVe C demo.sh; paper and glove.c: 100).")
    alpha: float = opt(0.75, "Exponent of f(x) (Pennington Eq. 9).")
    lr: float = opt(0.05, "AdaGrad initial rate (glove.c -eta).")
    epochs: int = opt(25, "Passes over the nonzeros (glove.c; demo.sh 15, paper 50-100, SemGloVe 100).")
    grad_clip: float = opt(100.0, "Clip of the lr-scaled gradient per coordinate (glove.c -grad-clip).")
    threads: int = opt(0, "Numba threads (0 = all cores).")
    seed: int = opt(1, "Random seed.")
    checkpoint_every: int = opt(
        0, "Write the checkpoint every N epochs (0 = off; glove.c -checkpoint-every)."
    )
    checkpoint: str | None = opt(None, "Checkpoint file: resumed from when it exists, written as above.")
    abtt: int | None = opt(None, "All-but-the-top on the result (transforms/postprocess.py; none = off).")

    def rules(self) -> Iterable[Rule]:
        """Sizes and rates positive (the rate below 1); a checkpoint needs a file path."""
        return [
            *at_least(self, 1, "dim", "window", "epochs"),
            *positive(self, "xmax", "alpha"),
            rate_rule("lr", self.lr),
            abtt_rule(self.abtt, self.dim),
            seed_rule(self.seed),
            *positive(self, "grad_clip"),
            threads_rule(self.threads, "all cores"),
            ("checkpoint_every", self.checkpoint_every >= 0, "0 (off) or more"),
            (
                "checkpoint_every",
                not self.checkpoint_every or bool(self.checkpoint),
                "0 without checkpoint=PATH",
            ),
            (
                "checkpoint",
                not (self.checkpoint and os.path.isdir(self.checkpoint)),
                "a file path, not a folder",
            ),
        ]


@dataclass
class GloveState:
    """Parameters and AdaGrad accumulators, laid out as GloVe C: ``[word|context][row][dim + bias]``."""

    params: np.ndarray  # (2, V, dim + 1) float64
    gradsq: np.ndarray  # (2, V, dim + 1) float64, squared lr-scaled gradients (+1)
    epoch: int = 0  # epochs done
    costs: list[float] = field(default_factory=list)  # mean J per nonzero, per epoch
    seconds: list[float] = field(default_factory=list)  # wall time of each epoch run by this process

    @property
    def W(self) -> np.ndarray:
        """Word vectors ``w_i``."""
        return self.params[0, :, :-1]

    @property
    def W_ctx(self) -> np.ndarray:
        """Context vectors ``w~_j``."""
        return self.params[1, :, :-1]

    @property
    def b(self) -> np.ndarray:
        """Word biases ``b_i``."""
        return self.params[0, :, -1]

    @property
    def b_ctx(self) -> np.ndarray:
        """Context biases ``b~_j``."""
        return self.params[1, :, -1]

    def vectors(self) -> np.ndarray:
        """The output embedding ``w + w~`` (Pennington 2014 Sec. 4.2), float32."""
        return (self.W + self.W_ctx).astype(np.float32)


def weighting(x: np.ndarray, xmax: float, alpha: float) -> np.ndarray:
    """``f(x) = (x / xmax)^alpha`` capped at 1 (Pennington Eq. 9, SemGloVe Eq. 3)."""
    return np.minimum(1.0, (np.asarray(x, dtype=np.float64) / xmax) ** alpha)


SIZED_BY = ("dim",)
# The training arrays per nonzero of X: row and column ids, log X and f(X) (4 bytes each) and the
# shuffled order (int32 up to 2**31 nonzeros), beside the CSR matrix (8-byte value, 4-byte column).
BYTES_PER_NONZERO = 5 * 4 + 12


def memory(config: Config, sizes: Sizes) -> int:
    """Bytes of the parameters and AdaGrad sums, 2 x (2, words, dim + 1) float64, and of the result.

    The window counts come on top; their size is known only once they are built (:func:`train_glove`).
    """
    n, d = sizes.n_words, config.dim
    return 2 * 2 * n * (d + 1) * FLOAT64 + n * d * (FLOAT64 + FLOAT32)  # + W + W~, then as float32


def init_state(n_words: int, config: Config) -> GloveState:
    """GloVe C's init: every parameter uniform in (-0.5, 0.5) / dim, accumulators 1."""
    rng = np.random.default_rng(config.seed)
    params = (rng.random((2, n_words, config.dim + 1)) - 0.5) / config.dim
    return GloveState(params, np.ones_like(params))


@numba.njit(parallel=True, cache=True)
def _adagrad_epoch(
    params: np.ndarray,
    gradsq: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    logx: np.ndarray,
    fx: np.ndarray,
    order: np.ndarray,
    lr: float,
    clip: float,
    costs: np.ndarray,
) -> None:
    """One Hogwild epoch: thread ``t`` updates nonzeros ``order[t*n/T:(t+1)*n/T]`` (glove.c's inner loop).

    Per nonzero, with ``diff = w.w~ + b + b~ - log x`` and ``g = lr f(x) diff``: the word vector
    takes ``-clip(g w~) / sqrt(G)`` and its accumulator ``G += clip(g w~)^2`` (likewise for the
    context vector and both biases), the gradient of ``1/2 f diff^2`` scaled by ``lr``.
    """
    n_threads = len(costs)
    n = len(order)
    dim = params.shape[2] - 1
    word, ctx = params[0], params[1]
    gword, gctx = gradsq[0], gradsq[1]
    for t in numba.prange(n_threads):
        cost = 0.0
        for k in range(t * n // n_threads, (t + 1) * n // n_threads):
            e = order[k]
            i = rows[e]
            j = cols[e]
            diff = word[i, dim] + ctx[j, dim] - logx[e]
            for d in range(dim):
                diff += word[i, d] * ctx[j, d]
            fdiff = fx[e] * diff
            if not np.isfinite(fdiff):
                continue
            cost += 0.5 * fdiff * diff
            fdiff *= lr
            for d in range(dim):
                g1 = min(max(fdiff * ctx[j, d], -clip), clip)
                g2 = min(max(fdiff * word[i, d], -clip), clip)
                word[i, d] -= g1 / np.sqrt(gword[i, d])
                ctx[j, d] -= g2 / np.sqrt(gctx[j, d])
                gword[i, d] += g1 * g1
                gctx[j, d] += g2 * g2
            word[i, dim] -= fdiff / np.sqrt(gword[i, dim])
            ctx[j, dim] -= fdiff / np.sqrt(gctx[j, dim])
            gword[i, dim] += fdiff * fdiff
            gctx[j, dim] += fdiff * fdiff
        costs[t] = cost


def train_glove(cooc: sp.spmatrix, config: Config, progress: bool = True) -> GloveState:
    """Fit GloVe to a square co-occurrence matrix (rows: words, columns: contexts) by AdaGrad.

    Minimises ``J`` of the module docstring over the positive entries of ``cooc``; explicit
    zeros are skipped, negative entries are an error. Returns the state after ``config.epochs``
    epochs, resuming from ``config.checkpoint`` when that file exists (whose folder must be
    writable before the first epoch; temps that killed runs left beside it go on success).
    """
    x = sp.csr_matrix(cooc, dtype=np.float64)
    if x.shape[0] != x.shape[1]:
        raise UserError(f"co-occurrence matrix is {x.shape[0]}x{x.shape[1]}; GloVe needs a square one")
    if x.nnz and x.data.min() < 0:
        raise UserError("co-occurrence matrix has negative entries; GloVe fits log X, so X must be >= 0")
    x.eliminate_zeros()
    if x.nnz == 0:
        raise UserError("the co-occurrence matrix is empty; the corpus needs sentences of 2+ known words")
    check_fits(
        x.nnz * BYTES_PER_NONZERO + memory(config, Sizes(x.shape[0])),
        f"GloVe with dim={config.dim} on {x.nnz:,} co-occurrences of {x.shape[0]:,} words",
        "lower --dim or --window, or keep fewer words (--min-count, --max-vocab)",
    )
    fingerprint = _fingerprint(x)
    if config.checkpoint:
        check_writable(config.checkpoint)
    state = _resume(config, fingerprint, x.shape[0]) if config.checkpoint else None
    state = state or init_state(x.shape[0], config)
    rows = np.repeat(np.arange(x.shape[0], dtype=np.int32), np.diff(x.indptr))
    cols = x.indices.astype(np.int32)
    logx = np.log(x.data).astype(np.float32)
    fx = weighting(x.data, config.xmax, config.alpha).astype(np.float32)
    index_type = np.int32 if x.nnz < 2**31 else np.int64
    del x
    with numba_threads(config.threads) as n_threads:
        costs = np.zeros(n_threads)
        bar = tqdm(range(state.epoch, config.epochs), desc="glove", unit="epoch", disable=not progress)
        for epoch in bar:
            start = time.perf_counter()
            order = np.arange(len(logx), dtype=index_type)
            np.random.default_rng([config.seed, epoch]).shuffle(order)
            _adagrad_epoch(
                state.params, state.gradsq, rows, cols, logx, fx, order, config.lr, config.grad_clip, costs
            )
            state.epoch = epoch + 1
            state.costs.append(float(costs.sum() / len(logx)))
            state.seconds.append(time.perf_counter() - start)
            bar.set_postfix(cost=f"{state.costs[-1]:.5f}", s=f"{state.seconds[-1]:.1f}")
            if config.checkpoint and config.checkpoint_every and state.epoch % config.checkpoint_every == 0:
                save_checkpoint(state, config, fingerprint)
    if config.checkpoint:
        remove_stale_temps(config.checkpoint)
    return state


def fit(corpus: EncodedCorpus, vocab: Vocab, config: Config) -> Vectors:
    """GloVe baseline: window co-occurrences of the corpus, then :func:`train_glove`; vectors ``w + w~``."""
    start = time.perf_counter()
    with numba_threads(config.threads):
        cooc = window_cooccurrence(corpus, len(vocab), config.window)
    cooc_seconds = time.perf_counter() - start
    state = train_glove(cooc, config)
    per_epoch = float(np.mean(state.seconds)) if state.seconds else 0.0
    log.info(
        "glove: %s nonzeros in %.1f s; %d epochs, %.2f s/epoch, cost %.5f -> %.5f",
        f"{cooc.nnz:,}", cooc_seconds, state.epoch, per_epoch, state.costs[0], state.costs[-1],
    )  # fmt: skip
    train: dict[str, Any] = {
        "nonzeros": int(cooc.nnz),
        "cooc_seconds": round(cooc_seconds, 2),
        "seconds_per_epoch": round(per_epoch, 3),
        "loss_per_epoch": state.costs,
    }
    return Vectors(list(vocab.words), state.vectors(), vocab.counts, {"train": train})


_RESUME_KEYS = ("dim", "xmax", "alpha", "lr", "grad_clip", "seed")


def save_checkpoint(state: GloveState, config: Config, fingerprint: str) -> Path:
    """Write weights, AdaGrad accumulators, epoch and costs to ``config.checkpoint`` atomically."""
    if not config.checkpoint:
        raise OptionError("set checkpoint=PATH to write checkpoints", "checkpoint")
    path = Path(config.checkpoint)
    settings = {k: v for k, v in asdict(config).items() if k in _RESUME_KEYS}
    with atomic_write(path, "wb") as fh:
        np.savez(
            fh,
            params=state.params,
            gradsq=state.gradsq,
            epoch=np.int64(state.epoch),
            costs=np.asarray(state.costs, dtype=np.float64),
            fingerprint=np.str_(fingerprint),
            settings=np.str_(json.dumps(settings, sort_keys=True)),
        )
    return path


def _resume(config: Config, fingerprint: str, n_words: int) -> GloveState | None:
    path = Path(config.checkpoint or "")
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            state = GloveState(z["params"], z["gradsq"], int(z["epoch"]), z["costs"].tolist())
            saved_fp, saved = str(z["fingerprint"]), json.loads(str(z["settings"]))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        raise InputError(
            path,
            f"{path}: not a readable GloVe checkpoint; name a new checkpoint path (or, if this was "
            "one, delete it to start afresh)",
        ) from None
    settings = {k: v for k, v in asdict(config).items() if k in _RESUME_KEYS}
    if saved != settings or saved_fp != fingerprint:
        changed = [k for k in settings if saved.get(k) != settings[k]]
        what = f"options {', '.join(changed)} differ" if changed else "the co-occurrence matrix differs"
        raise InputError(
            path, f"{path}: checkpoint is from another run ({what}); delete it or pick another path"
        )
    shape = (2, n_words, config.dim + 1)  # the kernel indexes both tables unchecked
    if state.params.shape != shape or state.gradsq.shape != shape:
        raise InputError(
            path, f"{path}: checkpoint tables have the wrong shape (damaged); delete it to start afresh"
        )
    if not (np.isfinite(state.params).all() and np.isfinite(state.gradsq).all()):
        raise InputError(
            path, f"{path}: checkpoint holds NaN or infinity (the run diverged: lower lr); delete it"
        )
    if state.epoch > config.epochs:
        raise InputError(
            path, f"{path}: checkpoint is at epoch {state.epoch} > epochs={config.epochs}; raise epochs"
        )
    log.info("glove: resuming from %s at epoch %d", path, state.epoch)
    return state


def _fingerprint(x: sp.csr_matrix) -> str:
    h = hashlib.sha256(f"{x.shape}".encode())
    for a in (x.indptr, x.indices, x.data):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


STUDENT = TextStudent(Config, fit, memory, SIZED_BY)
