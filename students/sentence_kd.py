"""A sentence student that learns the teacher's sentence geometry, not only its mean.

The cache holds each sentence's embedding as the teacher's own head makes it (``sent_emb``:
``extract --sentence-embedding``), the vector a user of the teacher compares. Static rows r_w give a
sentence the mean m_s = (1/n_s) sum_{i in S_s} r_{w_i} of its in-vocabulary words, as
``Vectors.encode`` pools with ``--weighting none``; with hats for unit length, and a batch of B
sentences, the student minimises one of two in-batch losses:

``infonce`` (tokenlearn 0.3+, MinishLab 2025; van den Oord et al. 2018): each sentence must pick
its own teacher embedding among the batch's,

    L = (1/B) sum_i [ -s_ii + log sum_j exp(s_ij) ],   s_ij = m^_i . t^_j / tau           (K1)

``kl`` (Wada et al., EMNLP 2025): the student's in-batch similarity distribution must match the
teacher's, the diagonal left out of both,

    L = (1/B) sum_i KL(q_i || p_i),   q_ij = softmax_{j != i}(t^_i . t^_j / tau),
                                      p_ij = softmax_{j != i}(m^_i . m^_j / tau)           (K2)

Gradients (checked against finite differences in the tests): with G = dL/ds, (K1) gives
dL/dm^_i = sum_j G_ij t^_j / tau with G = (P - I) / B; (K2) gives dL/dm^_i = sum_j (G_ij + G_ji)
m^_j / tau with G = (P - Q) / B off the diagonal; through the normalisation,
dL/dm_i = (g_i - (g_i . m^_i) m^_i) / ||m_i||; and dL/dr_w = sum_i X_iw dL/dm_i with X_iw the
count of w in S_i over n_i, so a step touches only the batch's words (lazy Adam, as
torch.optim.SparseAdam). No output layer is kept (tokenlearn trains and throws away one): the rows
start in the target's space, the ``ase`` rows through the affine map that best carries their
sentence means onto the teacher's sentence embeddings (ridge least squares over the corpus, one
pass), so the rows the student returns are the ones it trained and a row's norm is its weight in
the mean. ``ridge`` pulls each touched row towards that start, as the ``sentence`` student's does.

Deterministic for a seed: each epoch visits the shards and, within one, the sentences in an order
drawn from (seed, epoch, shard). The student reads one cache; :func:`train_rows` reads several of
one teacher (a :class:`Source` each, mapping its word ids to the rows), their shards one list,
as one cache of all their text would be read. With ``checkpoint`` the rows, Adam's moments and the
epoch are written after every epoch, and a run with the same options resumes from the last one
written.
Memory: the rows, their start and Adam's two moments (four vocabulary x width float32 blocks), one
shard's targets and one batch.
"""

from __future__ import annotations

import enum
import hashlib
import json
import logging
import sys
import time
import zipfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from ctx2static.cache import Cache
from ctx2static.errors import InputError
from ctx2static.fileio.atomic import atomic_write
from ctx2static.options import Rule, at_least, opt, positive, rate_rule, seed_rule
from ctx2static.students.cache_input import CacheConfig, Init, teacher_table
from ctx2static.students.sentence import shard_design
from ctx2static.students.student import CacheStudent
from ctx2static.vectors import Vectors

log = logging.getLogger(__name__)

_KEY = "sent_emb"


class Loss(str, enum.Enum):
    """Which in-batch objective: (K1) or (K2) of the module docstring."""

    INFONCE = "infonce"
    KL = "kl"


@dataclass(frozen=True)
class Config(CacheConfig):
    """(K1)/(K2), tokenlearn's temperature, lazy Adam; loss, rate and epochs chosen on dev sentence sets."""

    loss: Loss = opt(
        Loss.KL,
        "infonce: (K1), tokenlearn's; kl: (K2), Wada et al.'s (on the dev sets: as good on the probes, "
        "lee-docsim 51.1 against 44.7; measured: Results page, sentences_potion_dev).",
    )
    temperature: float = opt(0.07, "tau of (K1)/(K2) (tokenlearn's InfoNCE: 0.07).")
    epochs: int = opt(3, "Passes over the cache's sentences.")
    batch_sentences: int = opt(256, "Sentences per Adam step: each one's in-batch negatives.")
    lr: float = opt(
        1e-4, "Lazy (sparse) Adam learning rate (1e-3 and 10 epochs drift on Brown's 57k sentences)."
    )
    ridge: float = opt(0.0, "Pull of each touched row towards its start (weight decay to the start).")
    seed: int = opt(1, "Random seed of the visiting order.")
    checkpoint: str | None = opt(None, "Checkpoint file: resumed from when it exists, written every epoch.")

    def rules(self) -> Iterable[Rule]:
        """Counts positive, the temperature positive, the rate in (0, 1), the ridge 0 or more."""
        return [
            *at_least(self, 1, "epochs"),
            *at_least(self, 2, "batch_sentences"),
            *positive(self, "temperature"),
            rate_rule("lr", self.lr),
            ("ridge", self.ridge >= 0, "0 (off) or more"),
            seed_rule(self.seed),
        ]

    def signals(self) -> tuple[str, ...]:
        """The teacher's sentence embeddings t_s."""
        return (_KEY,)


_RESUME_KEYS = ("loss", "temperature", "batch_sentences", "lr", "ridge", "seed")  # epochs may grow
_BETA1, _BETA2, _EPS = 0.9, 0.999, 1e-8  # Adam's defaults (Kingma & Ba 2015)


def _unit(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    norms = np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    return a / norms, norms


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def batch_loss(M: np.ndarray, T: np.ndarray, loss: Loss, tau: float) -> tuple[float, np.ndarray]:
    """(K1) or (K2) of a batch's student means ``M`` [B, d] against its targets ``T`` [B, e]; and dL/dM.

    (K1) needs d = e; (K2) compares similarity matrices, so the widths may differ.
    """
    B = len(M)
    mh, mn = _unit(M.astype(np.float64))
    th, _ = _unit(T.astype(np.float64))
    if Loss(loss) is Loss.INFONCE:
        s = mh @ th.T / tau
        P = _softmax(s)
        value = float(np.mean(np.log(np.exp(s - s.max(1, keepdims=True)).sum(1)) + s.max(1) - np.diag(s)))
        g = (P - np.eye(B)) @ th / (tau * B)
    else:
        off = ~np.eye(B, dtype=bool)
        s_t = np.where(off, th @ th.T / tau, -np.inf)
        s_s = np.where(off, mh @ mh.T / tau, -np.inf)
        Q, P = _softmax(s_t), _softmax(s_s)
        logq = np.log(np.where(off, Q, 1.0))
        logp = np.log(np.where(off, P, 1.0))
        value = float(np.sum(np.where(off, Q * (logq - logp), 0.0)) / B)
        G = np.where(off, P - Q, 0.0) / B
        g = (G + G.T) @ mh / tau
    grad = (g - np.sum(g * mh, axis=1, keepdims=True) * mh) / mn
    return value, grad


@dataclass
class _State:
    """What a checkpoint holds: the rows, their start, Adam's moments, the steps and epochs done."""

    R: np.ndarray
    R0: np.ndarray
    m: np.ndarray
    v: np.ndarray
    step: int = 0
    epoch: int = 0
    losses: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Source:
    """A cache whose sentences the student reads, and the rows its word ids stand for.

    ``columns`` maps the cache's word ids to rows (-1: left out), so one table can learn from the
    sentences of several caches of one teacher; None keeps the cache's own ids.
    """

    cache: Cache
    columns: np.ndarray | None = None

    def shard(self, i: int, n_words: int) -> tuple[sp.csr_matrix, np.ndarray]:
        """Shard ``i``'s X over ``n_words`` rows and its sentence embeddings."""
        shard = self.cache.shard(i, [_KEY])
        return shard_design(shard, n_words, self.columns), shard[_KEY]


def start_rows(sources: list[Source], ase: np.ndarray) -> np.ndarray:
    """The ``ase`` rows carried into the target's space by the affine map fitted on sentence means.

    Minimises sum_s ||m_s(ase) A + b - t_s||^2 + lambda ||A||^2 (lambda: 1e-3 of the mean diagonal
    of the normal matrix, so the solve stays defined when a direction is unused); since X's rows
    sum to 1, the mean of the rows ase A + b is the mapped mean.
    """
    ase = ase.astype(np.float64)
    n, d = ase.shape
    gram, cross = np.zeros((d + 1, d + 1)), None
    for source in sources:
        for i in range(source.cache.n_shards):
            X, T = source.shard(i, n)
            used = np.diff(X.indptr) > 0
            Z = np.hstack([X[used] @ ase, np.ones((int(used.sum()), 1))])
            T = T[used].astype(np.float64)
            gram += Z.T @ Z
            cross = Z.T @ T if cross is None else cross + Z.T @ T
    if cross is None:
        folder = sources[0].cache.folder
        raise InputError(folder, f"{folder}: the cache has no sentence; run extract on a corpus")
    lam = 1e-3 * float(np.trace(gram[:d, :d])) / d
    gram[:d, :d] += lam * np.eye(d)
    Ab = np.linalg.solve(gram, cross)
    return (ase @ Ab[:d] + Ab[d]).astype(np.float32)


def _fingerprint(sources: list[Source]) -> str:
    manifests = [s.cache.manifest for s in sources]
    text = json.dumps(manifests[0] if len(manifests) == 1 else manifests, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _settings(config: Config) -> dict[str, Any]:
    """The options a checkpoint must share with the run that resumes it, as JSON reads them back."""
    return json.loads(json.dumps({k: v for k, v in asdict(config).items() if k in _RESUME_KEYS}, default=str))


def _save(path: Path, state: _State, config: Config, fingerprint: str) -> None:
    with atomic_write(path, "wb") as fh:
        np.savez(
            fh, R=state.R, R0=state.R0, m=state.m, v=state.v, step=np.int64(state.step),
            epoch=np.int64(state.epoch), losses=np.asarray(state.losses, np.float64),
            fingerprint=np.str_(fingerprint), settings=np.str_(json.dumps(_settings(config), sort_keys=True)),
        )  # fmt: skip


def _resume(path: Path, config: Config, fingerprint: str, shape: tuple[int, int]) -> _State | None:
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            state = _State(
                z["R"], z["R0"], z["m"], z["v"], int(z["step"]), int(z["epoch"]), z["losses"].tolist()
            )
            saved_fp, saved = str(z["fingerprint"]), json.loads(str(z["settings"]))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        raise InputError(
            path, f"{path}: not a readable sentence-kd checkpoint; name a new checkpoint path or delete it"
        ) from None
    settings = json.loads(
        json.dumps({k: v for k, v in asdict(config).items() if k in _RESUME_KEYS}, default=str)
    )
    if saved != settings or saved_fp != fingerprint:
        changed = [k for k in settings if saved.get(k) != settings[k]]
        what = f"options {', '.join(changed)} differ" if changed else "the cache differs"
        raise InputError(
            path, f"{path}: checkpoint is from another run ({what}); delete it or pick another path"
        )
    if any(a.shape != shape for a in (state.R, state.R0, state.m, state.v)) or not np.isfinite(state.R).all():
        raise InputError(path, f"{path}: checkpoint tables are damaged; delete it to start afresh")
    return state


def _adam(state: _State, rows: np.ndarray, grad: np.ndarray, lr: float) -> None:
    """Lazy Adam on ``rows`` only: their moments move, the others' wait (torch.optim.SparseAdam)."""
    state.step += 1
    m = _BETA1 * state.m[rows] + (1 - _BETA1) * grad
    v = _BETA2 * state.v[rows] + (1 - _BETA2) * grad * grad
    state.m[rows], state.v[rows] = m, v
    size = lr * np.sqrt(1 - _BETA2**state.step) / (1 - _BETA1**state.step)
    state.R[rows] -= (size * m / (np.sqrt(v) + _EPS)).astype(np.float32)


def _epoch(sources: list[Source], state: _State, config: Config) -> float:
    """One pass over every shard's sentences in batches; the mean batch loss."""
    n = len(state.R)
    total, batches = 0.0, 0
    shards = [(source, i) for source in sources for i in range(source.cache.n_shards)]
    order = np.random.default_rng([config.seed, state.epoch]).permutation(len(shards))
    bar = tqdm(order, desc=f"sentence-kd epoch {state.epoch + 1}", file=sys.stderr, leave=False)
    for k in bar:
        source, i = shards[int(k)]
        X, T = source.shard(i, n)
        used = np.flatnonzero(np.diff(X.indptr) > 0)
        sents = np.random.default_rng([config.seed, state.epoch, int(k)]).permutation(used)
        for b in range(0, len(sents) - 1, config.batch_sentences):
            pick = sents[b : b + config.batch_sentences]
            if len(pick) < 2:
                continue
            Xb = X[pick]
            rows, cols = np.unique(Xb.indices, return_inverse=True)
            Xs = sp.csr_matrix((Xb.data, cols, Xb.indptr), shape=(len(pick), len(rows)))
            value, gM = batch_loss(Xs @ state.R[rows], T[pick], config.loss, config.temperature)
            grad = Xs.T @ gM
            if config.ridge:
                grad = grad + config.ridge * (state.R[rows] - state.R0[rows])
            _adam(state, rows, grad, config.lr)
            total, batches = total + value, batches + 1
        bar.set_postfix(loss=f"{total / max(batches, 1):.4f}")
    return total / max(batches, 1)


def fit(cache: Cache, config: Config) -> Vectors:
    """Train the rows from the mapped ``ase`` start on (K1) or (K2) over the cached sentence embeddings."""
    R, train = train_rows([Source(cache)], teacher_table(cache, Init.ASE), config)
    return Vectors(list(cache.vocab.words), R, cache.vocab.counts.copy(), {"train": train})


def train_rows(sources: list[Source], ase: np.ndarray, config: Config) -> tuple[np.ndarray, dict[str, Any]]:
    """Rows trained from ``ase`` (their start) over the sources' sentences, and what training did."""
    fingerprint = _fingerprint(sources)
    path = Path(config.checkpoint) if config.checkpoint else None
    start = time.perf_counter()
    state = None
    if path is not None:
        width = sources[0].cache.shard(0, [_KEY])[_KEY].shape[1]
        state = _resume(path, config, fingerprint, (len(ase), width))
    if state is None:
        R0 = start_rows(sources, ase)
        state = _State(R0.copy(), R0, np.zeros_like(R0), np.zeros_like(R0))
    while state.epoch < config.epochs:
        state.losses.append(_epoch(sources, state, config))
        state.epoch += 1
        if state.step == 0:  # rows never trained are the ase start under another name
            folders = ", ".join(str(s.cache.folder) for s in sources)
            raise InputError(
                sources[0].cache.folder,
                f"{folders}: no shard holds two sentences with a word of the table, and sentence-kd "
                "learns each sentence against the others of its batch; extract a corpus of more "
                "sentences (or use the ase student)",
            )
        log.info("sentence-kd: epoch %d, mean batch loss %.4f", state.epoch, state.losses[-1])
        if path is not None:
            _save(path, state, config, fingerprint)
    log.info(
        "sentence-kd (%s): %d epochs, %s Adam steps in %.1f s, loss %s",
        Loss(config.loss).value, state.epoch, f"{state.step:,}", time.perf_counter() - start,
        " -> ".join(f"{x:.4f}" for x in state.losses),
    )  # fmt: skip
    return state.R, {"adam_steps": state.step, "loss_per_epoch": state.losses}


STUDENT = CacheStudent(Config, fit)
