"""The downstream tasks: POS tagging (Brown, universal tags), NER (WNUT-2016) and sentiment (movie reviews).

Each task returns :class:`Score` rows with the mean over folds (or training folds) as ``score``,
their standard deviation as ``std`` and token coverage (1 - OOV rate) as covered/total.

- POS: split by Brown file, never by sentence: the file ``cXNN`` (genre X, number NN) is a test
  file when NN mod 5 = 0, a development file when NN mod 5 = 1 (used only to choose the
  hyper-parameters), and in training fold j = 0, 1, 2 when NN mod 5 = j + 2; every genre has files
  in every part. One window tagger per training fold (every ``pos_stride``-th sentence of its
  files) is scored on all test files and, when the prepared Penn-tagged set is present, on it
  (cross-domain, both mapped to the universal tags).
- NER: window tagger over BIO tags, k-fold over tweets; entity-level F1 (exact span and type, as
  conlleval counts: an I- tag that does not continue an entity of its type starts one).
- Sentiment: mean-vector classifier, k-fold accuracy on each labelled set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ctx2static.eval.downstream.data import (
    BROWN,
    SENTIMENT_FILES,
    WNUT,
    WSJ,
    LabelledTexts,
    TaggedSentences,
    Task,
    downstream_path,
    read_conll,
    read_labelled,
    read_slash_tagged,
)
from ctx2static.eval.downstream.probes import (
    Encoded,
    ProbeConfig,
    encode,
    fit,
    folds,
    mean_features,
    predict_windows,
    require_sklearn,
    window_features,
)
from ctx2static.eval.downstream.tagsets import brown_universal, ptb_universal
from ctx2static.eval.results import Score
from ctx2static.text.corpus import tokenize
from ctx2static.threads import blas_threads
from ctx2static.vectors import Vectors

FAMILY = "downstream"
POS_TRAIN_FOLDS = 3


@dataclass(frozen=True)
class PosTask:
    """Brown sentences (original tags) and an optional Penn-tagged cross-domain test set."""

    brown: TaggedSentences
    cross: TaggedSentences | None = None
    name: str = "pos-brown"


class _DataTask:
    """A task on one data set, named after it."""

    data: TaggedSentences | LabelledTexts

    @property
    def name(self) -> str:
        """The data set's name."""
        return self.data.name


@dataclass(frozen=True)
class NerTask(_DataTask):
    """BIO-tagged sentences for k-fold entity F1."""

    data: TaggedSentences


@dataclass(frozen=True)
class SentimentTask(_DataTask):
    """Labelled texts for k-fold accuracy."""

    data: LabelledTexts


DownstreamTask = PosTask | NerTask | SentimentTask


def load_downstream(tasks: Sequence[str] = tuple(Task)) -> list[DownstreamTask]:
    """Read the bundled data of ``tasks`` (tasks or their names; Penn-tagged too when prepared)."""
    require_sklearn()
    out: list[DownstreamTask] = []
    if Task.POS in tasks:
        wsj = downstream_path(WSJ)
        out.append(
            PosTask(
                read_slash_tagged(downstream_path(BROWN)), read_slash_tagged(wsj) if wsj.is_file() else None
            )
        )
    if Task.NER in tasks:
        out.append(NerTask(read_conll(downstream_path(WNUT))))
    if Task.SENTIMENT in tasks:
        out += [SentimentTask(read_labelled(downstream_path(name))) for name in SENTIMENT_FILES]
    return out


def _score(
    name: str, metric: str, values: Sequence[float], enc: Encoded, tokens: np.ndarray | None = None
) -> Score:
    """Mean and standard deviation x100 of ``values``; coverage = tokens found / tokens."""
    rows = enc.rows if tokens is None else enc.rows[tokens]
    return Score(
        name, FAMILY, metric, 100.0 * float(np.mean(values)), int((rows >= 0).sum()), len(rows),
        std=100.0 * float(np.std(values)),
    )  # fmt: skip


def brown_split(docs: Sequence[str]) -> np.ndarray:
    """Part of each sentence by its Brown file ``cXNN``: -1 test, -2 development, 0..2 training fold."""
    number = np.array([int(d[3:5]) for d in docs])
    return np.select([number % 5 == 0, number % 5 == 1], [-1, -2], number % 5 - 2)


def _token_index(sent: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """Indices of the tokens whose sentence is picked."""
    return np.flatnonzero(picked[sent])


def train_pos(enc: Encoded, gold: np.ndarray, part: np.ndarray, fold: int, config: ProbeConfig) -> Any:
    """Window tagger trained on every ``pos_stride``-th sentence of training fold ``fold``."""
    picked = np.zeros(len(part), dtype=bool)
    picked[np.flatnonzero(part == fold)[:: config.pos_stride]] = True
    train = _token_index(enc.sent, picked)
    return fit(window_features(enc, train, config.window), gold[train], config.pos_c, config.max_iter)


def pos_accuracy(
    model: Any, enc: Encoded, gold: np.ndarray, tokens: np.ndarray, config: ProbeConfig
) -> float:
    """Accuracy of ``model`` on the tokens at ``tokens``."""
    return float(np.mean(predict_windows(model, enc, tokens, config.window) == gold[tokens]))


def evaluate_pos(vectors: Vectors, task: PosTask, config: ProbeConfig) -> list[Score]:
    """Universal-tag accuracy of window taggers trained on the Brown training folds (module docstring)."""
    enc = encode(vectors, task.brown.words)
    gold = np.array([brown_universal(t) for s in task.brown.tags for t in s])
    part = brown_split(task.brown.docs)
    test = _token_index(enc.sent, part == -1)
    models = [train_pos(enc, gold, part, j, config) for j in range(POS_TRAIN_FOLDS)]
    acc = [pos_accuracy(m, enc, gold, test, config) for m in models]
    scores = [_score(task.name, "accuracy (universal tags)", acc, enc, test)]
    if task.cross is not None:
        cross = encode(vectors, task.cross.words)
        cross_gold = np.array([ptb_universal(t) for s in task.cross.tags for t in s])
        every = np.arange(len(cross_gold))
        acc = [pos_accuracy(m, cross, cross_gold, every, config) for m in models]
        scores.append(_score(task.cross.name, "accuracy (universal tags, Brown-trained)", acc, cross))
    return scores


def entities(tags: Sequence[str]) -> set[tuple[int, int, str]]:
    """Entity spans ``(start, end, type)`` of a BIO sequence, counted as conlleval does."""
    spans, start, kind = set(), 0, None
    for i, tag in enumerate([*tags, "O"]):
        prefix, _, t = tag.partition("-")
        continues = prefix == "I" and t == kind
        if kind is not None and not continues:
            spans.add((start, i, kind))
            kind = None
        if prefix in ("B", "I") and not continues:
            start, kind = i, t
    return spans


def entity_f1(gold: Sequence[str], pred: Sequence[str]) -> float:
    """Micro F1 over entities (exact span and type); 0 when neither side has an entity."""
    g, p = entities(gold), entities(pred)
    hit = len(g & p)
    return 2.0 * hit / (len(g) + len(p)) if g or p else 0.0


def ner_fold_f1(enc: Encoded, gold: np.ndarray, fold: np.ndarray, j: int, config: ProbeConfig) -> float:
    """Entity F1 on fold ``j`` of a window tagger trained on the other folds."""
    train, test = _token_index(enc.sent, fold != j), _token_index(enc.sent, fold == j)
    model = fit(window_features(enc, train, config.window), gold[train], config.ner_c, config.max_iter)
    pred = predict_windows(model, enc, test, config.window)
    # the test tokens are whole sentences in stream order: an "O" after each keeps entities apart
    ends = np.r_[enc.sent[test][1:] != enc.sent[test][:-1], True]
    return entity_f1(_with_breaks(gold[test], ends), _with_breaks(pred, ends))


def evaluate_ner(vectors: Vectors, task: NerTask, config: ProbeConfig) -> list[Score]:
    """Entity F1 of a BIO window tagger, k-fold over sentences (tweets)."""
    enc = encode(vectors, task.data.words)
    gold = np.array([t for s in task.data.tags for t in s])
    fold = folds(len(task.data.words), config.ner_folds)
    f1 = [ner_fold_f1(enc, gold, fold, j, config) for j in range(config.ner_folds)]
    return [_score(task.name, "entity F1 (BIO, exact span and type)", f1, enc)]


def _with_breaks(tags: np.ndarray, ends: np.ndarray) -> list[str]:
    """Tags with an "O" after each sentence's last token, so no entity spans two sentences."""
    out: list[str] = []
    for tag, end in zip(tags.tolist(), ends.tolist(), strict=True):
        out += [tag, "O"] if end else [tag]
    return out


def sentiment_fold_accuracy(
    x: np.ndarray, y: np.ndarray, fold: np.ndarray, j: int, config: ProbeConfig
) -> float:
    """Accuracy on fold ``j`` of the mean-vector classifier trained on the other folds."""
    model = fit(x[fold != j], y[fold != j], config.sentiment_c, config.max_iter)
    return float(np.mean(model.predict(x[fold == j]) == y[fold == j]))


def sentiment_features(vectors: Vectors, data: LabelledTexts) -> tuple[Encoded, np.ndarray]:
    """Texts tokenised as the corpus is (:func:`tokenize`, case kept for lookup), and their mean vectors."""
    enc = encode(vectors, [tokenize(t, lowercase=False) for t in data.texts])
    return enc, mean_features(enc)


def evaluate_sentiment(vectors: Vectors, task: SentimentTask, config: ProbeConfig) -> list[Score]:
    """k-fold accuracy of logistic regression on the mean word vector of each text."""
    enc, x = sentiment_features(vectors, task.data)
    y = np.array(task.data.labels)
    fold = folds(len(y), config.sentiment_folds)
    acc = [sentiment_fold_accuracy(x, y, fold, j, config) for j in range(config.sentiment_folds)]
    return [_score(task.name, "accuracy", acc, enc)]


def evaluate_downstream(
    vectors: Vectors, task: DownstreamTask, config: ProbeConfig | None = None
) -> list[Score]:
    """Scores of ``vectors`` on one downstream task."""
    config = config or ProbeConfig()
    with blas_threads(1):  # deterministic, and no busy-waiting BLAS threads on a shared machine
        if isinstance(task, PosTask):
            return evaluate_pos(vectors, task, config)
        if isinstance(task, NerTask):
            return evaluate_ner(vectors, task, config)
        return evaluate_sentiment(vectors, task, config)


def protocol(config: ProbeConfig) -> list[str]:
    """Lines stating the downstream protocol under a results table."""
    wsj = (
        ""
        if downstream_path(WSJ).is_file()
        else " (not bundled: bench/data/prepare_downstream.py --wsj adds it)"
    )
    return [
        "downstream: mean ±std over folds, every token scored (no common-items restriction); "
        "coverage = tokens found / all tokens (1 - OOV rate); "
        "every probe is standardised features -> softmax regression (scikit-learn, L-BFGS, at most "
        f"{config.max_iter} iterations), hyper-parameters fixed once on development data with SGNS",
        f"pos-brown: window tagger (unit vectors of w-{config.window}..w+{config.window} + OOV flags), "
        f"{POS_TRAIN_FOLDS} models, each trained on one fold of Brown files (every {config.pos_stride}th "
        "sentence), tested on the files cXNN with NN mod 5 = 0; 12 universal tags (Petrov et al. 2012); "
        "Brown text is also part of the full training corpus",
        f"pos-wsj: the same models on a Penn-tagged WSJ sample, mapped to universal tags{wsj}",
        f"ner-wnut16: the window tagger on BIO tags, {config.ner_folds}-fold (tweet i in fold i mod "
        f"{config.ner_folds}); F1 over entities with exact span and type",
        f"sentiment: mean of unit word vectors -> logistic regression, {config.sentiment_folds}-fold "
        f"(text i in fold i mod {config.sentiment_folds}); label = sign of the rating / fresh vs rotten",
    ]
