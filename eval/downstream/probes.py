"""Fixed, cheap probes on frozen vectors: a window tagger and a mean-vector classifier.

Both are scikit-learn pipelines of a :class:`~sklearn.preprocessing.StandardScaler` and a softmax
(multinomial logistic) regression fitted by L-BFGS with a fixed iteration budget, so the same
vectors always give the same scores and every vectors file gets the same model.

- Window tagger (Collobert et al. 2011, "NLP (almost) from scratch", the window approach with
  frozen word vectors): the feature vector of word i is the L2-normalised vectors of words
  i-w..i+w concatenated, each followed by a flag that is 1 when that word is out of the
  vocabulary (the flag has the unit norm of a found word's vector); positions beyond the sentence
  are all zero (neither a vector nor the flag).
- Mean-vector classifier: the mean of the L2-normalised vectors of a text's known words (zero when
  none is known), the "average of word vectors" baseline of sentence classification.

The hyper-parameters (:class:`ProbeConfig`) were chosen once, on development data, with SGNS
vectors; see data/downstream/README.md.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ctx2static.errors import UserError
from ctx2static.memory import check_fits
from ctx2static.options import Options, Rule, at_least, opt, positive
from ctx2static.vectors import Vectors

OOV = -1
PAD = -2
CHUNK = 16384
"""Rows of features built at once when predicting (bounds the memory of large test sets)."""


@dataclass(frozen=True)
class ProbeConfig(Options):
    """The probes' fixed hyper-parameters (chosen once with SGNS on dev data: data/downstream/README.md)."""

    window: int = opt(2, "Words either side of the tagged word (w-2..w+2; Collobert et al. 2011).")
    pos_c: float = opt(0.01, "POS: inverse L2 strength of the window tagger (scikit-learn's C).")
    ner_c: float = opt(0.1, "NER: inverse L2 strength of the window tagger (C).")
    sentiment_c: float = opt(1.0, "Sentiment: inverse L2 strength of the mean-vector classifier (C).")
    max_iter: int = opt(50, "L-BFGS iterations at most (a fixed budget, the same for every file).")
    pos_stride: int = opt(12, "POS: train on every N-th sentence of each training fold's files.")
    ner_folds: int = opt(3, "NER: cross-validation folds (tweet i is in fold i mod k).")
    sentiment_folds: int = opt(10, "Sentiment: cross-validation folds (text i is in fold i mod k).")

    def rules(self) -> Iterable[Rule]:
        """Sizes positive, at least two folds."""
        return [
            ("window", self.window >= 0, "0 or more"),
            *positive(self, "pos_c", "ner_c", "sentiment_c"),
            *at_least(self, 1, "max_iter", "pos_stride"),
            *at_least(self, 2, "ner_folds", "sentiment_folds"),
        ]


def folds(n: int, k: int) -> np.ndarray:
    """Fold of each of ``n`` items: item i is in fold ``i mod k`` (fixed, no random draw)."""
    return np.arange(n) % k


def has_sklearn() -> bool:
    """Whether scikit-learn (extra ``downstream``), which the probes fit with, is installed."""
    return importlib.util.find_spec("sklearn") is not None


def require_sklearn(family: str = "downstream") -> None:
    """A one-line :class:`UserError` naming ``family`` when scikit-learn (extra ``downstream``) is missing."""
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise UserError(
            f"the {family} family needs scikit-learn: pip install 'ctx2static[downstream]'"
        ) from None


def softmax_regression(c: float, max_iter: int) -> Any:
    """Standardised features -> multinomial logistic regression (L-BFGS, at most ``max_iter`` steps)."""
    require_sklearn()
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(copy=False), LogisticRegression(C=c, max_iter=max_iter))


def fit(x: np.ndarray, y: np.ndarray, c: float, max_iter: int) -> Any:
    """Fit :func:`softmax_regression` (the iteration cap is deliberate: no convergence warning)."""
    model = softmax_regression(c, max_iter)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(converge|ITERATIONS|iterations).*")
        model.fit(x, y)
    return model


@dataclass(frozen=True)
class Encoded:
    """Sentences as one token stream: ``rows[i]`` indexes ``unit`` (or is OOV), ``sent[i]`` its sentence."""

    unit: np.ndarray  # L2-normalised vectors of the words that occur, float32
    rows: np.ndarray
    sent: np.ndarray

    @property
    def found(self) -> int:
        """Tokens found in the vocabulary."""
        return int((self.rows >= 0).sum())


def encode(vectors: Vectors, sentences: Sequence[Sequence[str]]) -> Encoded:
    """Look every token up (exact, then lower-cased: :meth:`Vectors.row_of`) and keep the rows used."""
    cache: dict[str, int] = {}
    ids = np.fromiter(
        (
            cache[w] if w in cache else cache.setdefault(w, -1 if (i := vectors.row_of(w)) is None else i)
            for s in sentences
            for w in s
        ),
        dtype=np.int64,
    )
    used, rows = np.unique(ids[ids >= 0], return_inverse=True)
    compact = np.full(len(ids), OOV, dtype=np.int64)
    compact[ids >= 0] = rows
    unit = np.asarray(vectors.matrix[used], dtype=np.float64)
    unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    sent = np.repeat(np.arange(len(sentences)), [len(s) for s in sentences])
    return Encoded(unit, compact, sent)


def window_features(enc: Encoded, tokens: np.ndarray, window: int) -> np.ndarray:
    """Features of the tokens at ``tokens``: ``2w+1`` blocks of (unit vector, OOV flag)."""
    n, d = len(enc.rows), enc.unit.shape[1]
    shape = (len(tokens), (2 * window + 1) * (d + 1))
    check_fits(  # the probe standardises a copy of the features, and its solver holds a third
        3 * shape[0] * shape[1] * 8,
        f"a downstream probe on {d:,}-dim vectors ({shape[0]:,} tokens x {shape[1]:,} features)",
        "evaluate without the downstream family, or reduce the vectors first (export --dims)",
    )
    x = np.zeros(shape, dtype=np.float64)
    for k, offset in enumerate(range(-window, window + 1)):
        pos = tokens + offset
        inside = (pos >= 0) & (pos < n)
        inside[inside] = enc.sent[pos[inside]] == enc.sent[tokens[inside]]
        nbr = np.full(len(tokens), PAD, dtype=np.int64)
        nbr[inside] = enc.rows[pos[inside]]
        block = k * (d + 1)
        found = nbr >= 0
        x[found, block : block + d] = enc.unit[nbr[found]]
        x[:, block + d] = nbr == OOV
    return x


def predict_windows(model: Any, enc: Encoded, tokens: np.ndarray, window: int) -> np.ndarray:
    """Predicted labels of the tokens at ``tokens``, built and scored :data:`CHUNK` rows at a time."""
    parts = [
        model.predict(window_features(enc, tokens[i : i + CHUNK], window))
        for i in range(0, len(tokens), CHUNK)
    ]
    return np.concatenate(parts) if parts else np.array([], dtype=object)


def mean_features(enc: Encoded) -> np.ndarray:
    """Mean of the unit vectors of each sentence's known words (zero rows for none known)."""
    from scipy.sparse import csr_matrix

    n_sent = int(enc.sent.max(initial=-1)) + 1
    found = enc.rows >= 0
    counts = np.bincount(enc.sent[found], minlength=n_sent)
    weights = (1.0 / np.maximum(counts, 1)[enc.sent[found]]).astype(np.float32)
    pick = csr_matrix((weights, (enc.sent[found], np.arange(found.sum()))), shape=(n_sent, int(found.sum())))
    return np.asarray(pick @ enc.unit[enc.rows[found]])
