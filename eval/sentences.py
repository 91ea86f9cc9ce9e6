"""Sentence-level evaluation: texts pooled into one vector each, then a fixed linear probe or cosines.

Static vectors are mostly used to embed sentences; the word-level families cannot show how a
table serves that use. Each bundled set (data/sentences/README.md, and the two movie-review
sets of data/downstream/) is a task of the ``sentences`` family:

- a labelled set (``label<TAB>text`` lines: sentiment of tweets, editorials, product and movie
  reviews; spam or not of e-mail subjects): standardised features -> logistic regression
  (scikit-learn), scored by accuracy over fixed stratified folds (one seeded shuffle), mean ±
  standard deviation over the folds, as SentEval and MTEB probe sentence embeddings;
- a pair set (``score<TAB>text<TAB>text`` lines: Lee et al.'s document similarity, the STS
  sets): Spearman correlation of the two texts' cosine with the gold score, no training;
- a retrieval set (a ``query<TAB>document`` header, then one query and a document it should find
  a line): every query ranks all the set's documents by cosine, scored by nDCG@10 and MRR (two
  rows, the second named ``NAME-mrr``), as search over a static index is used; no training.

A user's own file (``cli.py eval --sentences FILE``, :func:`read_sentence_file`) is any form,
labelled sets with any labels, two at least, named after the file and scored the same way; the
headline ``sentences-mean`` stays the mean over the bundled labelled sets.

A text's vector is :meth:`Vectors.encode`, as a user embeds it; coverage counts the texts (or
pairs) that got a vector, i.e. with at least one known (or composed) word. :func:`score_encoder`
takes any text encoder instead (a peer's Model2Vec model, an exported folder), so other models are
scored under the same probe, folds and subsample. The downstream family keeps its
own 10-fold sentiment rows on the two movie-review sets; this family scores them again under its
protocol, under other names, so both tables stay as they were.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ctx2static.errors import InputError
from ctx2static.eval.downstream.data import LabelledTexts, read_labelled
from ctx2static.eval.downstream.probes import fit, require_sklearn
from ctx2static.eval.results import Score, summary
from ctx2static.fileio.reading import read_lines
from ctx2static.options import Options, Rule, at_least, opt, positive, seed_rule
from ctx2static.resources import DOWNSTREAM_DIR, SENTENCES_DIR
from ctx2static.text.normal import nfc
from ctx2static.threads import blas_threads
from ctx2static.vectors import Vectors
from ctx2static.vectors.encoding import Weighting

FAMILY = "sentences"


@dataclass(frozen=True)
class SentenceConfig(Options):
    """The probe's fixed settings (the same for every vectors file, so their scores compare)."""

    c: float = opt(1.0, "Inverse L2 strength of the logistic regression (scikit-learn's C).")
    max_iter: int = opt(100, "L-BFGS iterations at most (a fixed budget, the same for every file).")
    folds: int = opt(5, "Stratified cross-validation folds of a labelled set.")
    seed: int = opt(0, "Seed of the folds' shuffle and of the subsample.")
    max_texts: int = opt(
        8000, "Texts at most per labelled set; a larger one is subsampled (seeded): a file in < 30 CPU s."
    )
    weighting: Weighting = opt(
        Weighting.NONE, "Word weights in a text's mean (Vectors.encode): none, sif or zipf."
    )

    def rules(self) -> Iterable[Rule]:
        """Positive strength and budget, at least two folds, a fold's worth of texts."""
        return [
            *positive(self, "c"),
            *at_least(self, 1, "max_iter"),
            *at_least(self, 2, "folds"),
            seed_rule(self.seed),
            ("max_texts", self.max_texts >= self.folds, "at least the number of folds"),
        ]


@dataclass(frozen=True)
class PairSet:
    """Text pairs with a gold similarity each."""

    name: str
    first: list[str]
    second: list[str]
    scores: list[float]


@dataclass(frozen=True)
class RetrievalSet:
    """Queries, the documents they search, and each query's relevant documents (indices into them)."""

    name: str
    queries: list[str]
    documents: list[str]
    relevant: list[tuple[int, ...]]


SentenceSet = LabelledTexts | PairSet | RetrievalSet

RETRIEVAL_HEADER = "query\tdocument"
"""The first line of a retrieval file: what tells it from a labelled one (also two fields a line)."""
NDCG_AT = 10

SETS: dict[str, tuple[Path, tuple[str, ...] | None]] = {
    "rt-movies": (DOWNSTREAM_DIR / "sentiment-rt.tsv.xz", ("pos", "neg")),
    "vader-movies": (DOWNSTREAM_DIR / "sentiment-vader-movies.tsv.xz", ("pos", "neg")),
    "vader-tweets": (SENTENCES_DIR / "vader-tweets.tsv.xz", ("pos", "neg")),
    "vader-nyt": (SENTENCES_DIR / "vader-nyt.tsv.xz", ("pos", "neg")),
    "vader-amazon": (SENTENCES_DIR / "vader-amazon.tsv.xz", ("pos", "neg")),
    "spam-subjects": (SENTENCES_DIR / "spam-subjects.tsv.xz", ("spam", "ham")),
    "lee-docsim": (SENTENCES_DIR / "lee-docsim.tsv.xz", None),
}
"""Task name -> its bundled file and its labels (None: a pair set)."""

TASKS = tuple(SETS)

Encoder = Callable[[Sequence[str]], np.ndarray]
"""Texts -> one row each (a zero row: the text got no vector)."""


def read_pairs(path: str | os.PathLike) -> PairSet:
    """Read ``score<TAB>text<TAB>text`` lines (a bad line is a one-line error naming file and line)."""
    path = Path(path)
    return _pairs(path, list(read_lines(path, "score<TAB>text<TAB>text lines")))


def _pairs(path: Path, lines: Sequence[tuple[int, str]]) -> PairSet:
    """The pair set of ``(line number, line)`` items of ``path``."""
    first, second, scores = [], [], []
    for n, line in lines:
        line = nfc(line)  # the corpus is read in NFC: a word in NFD would miss its row
        parts = line.split("\t")
        score = _number(parts[0])
        if len(parts) != 3 or not np.isfinite(score) or not parts[1].strip() or not parts[2].strip():
            raise InputError(
                path,
                f"{path}: line {n} is not 'score<TAB>text<TAB>text' with a finite score; "
                "fix or remove the line",
            )
        first.append(parts[1])
        second.append(parts[2])
        scores.append(score)
    return PairSet(_stem(path), first, second, scores)


def _number(text: str) -> float:
    """``text`` as a float; NaN when it is not a number."""
    try:
        return float(text)
    except ValueError:
        return float("nan")


def _stem(path: Path) -> str:
    """A set's name: its file name up to the first dot (``topics.tsv.xz`` -> ``topics``)."""
    return path.name.split(".")[0]


FORMS = (
    "label<TAB>text lines (two labels at least), score<TAB>text<TAB>text lines, or a "
    "'query<TAB>document' header then query<TAB>document lines"
)


def read_sentence_file(path: str | os.PathLike, folds: int = SentenceConfig.folds) -> SentenceSet:
    """A user's own sentence set, named after the file, scored as the bundled ones are.

    The first line decides the form: the header ``query<TAB>document`` makes a retrieval set (a
    query and a document it should find a line); three tab-separated fields, the first a number, a
    pair set (``score<TAB>text<TAB>text``); anything else a labelled set (``label<TAB>text``, any labels,
    two at least, each with ``folds`` texts so that every fold holds it). Blank lines are skipped;
    a line that fits neither form is a one-line error naming the file, the line and the fix.
    """
    path = Path(path)
    lines = [(n, line) for n, line in read_lines(path, FORMS) if line.strip()]
    if not lines:
        raise InputError(path, f"{path}: no text in it; write {FORMS}")
    if lines[0][1].rstrip("\r") == RETRIEVAL_HEADER:
        return _retrieval(path, lines[1:])
    head = lines[0][1].split("\t")
    if len(head) == 3 and np.isfinite(_number(head[0])):
        return _pairs(path, lines)
    return _labelled(path, lines, folds)


def _retrieval(path: Path, lines: Sequence[tuple[int, str]]) -> RetrievalSet:
    """The retrieval set of ``(line number, line)`` items after the header.

    A query on several lines finds each of their documents; a document on several lines is one.
    """
    queries: dict[str, list[int]] = {}
    documents: dict[str, int] = {}
    for n, line in lines:
        parts = nfc(line).split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise InputError(path, f"{path}: line {n} is not 'query<TAB>document'; fix or remove the line")
        doc = documents.setdefault(parts[1], len(documents))
        queries.setdefault(parts[0], []).append(doc)
    if len(documents) < 2:
        raise InputError(path, f"{path}: fewer than two documents to rank; write query<TAB>document lines")
    relevant = [tuple(dict.fromkeys(docs)) for docs in queries.values()]
    return RetrievalSet(_stem(path), list(queries), list(documents), relevant)


def _labelled(path: Path, lines: Sequence[tuple[int, str]], folds: int) -> LabelledTexts:
    """The labelled set of ``(line number, line)`` items of ``path``, checked to be one a probe can learn."""
    texts, labels = [], []
    for n, line in lines:
        label, sep, text = nfc(line).partition("\t")  # NFC as the corpus: a word in NFD would miss its row
        label = label.strip()
        if not sep:
            raise InputError(
                path, f"{path}: line {n} has no tab; write label<TAB>text (or score<TAB>text<TAB>text)"
            )
        if not label or not text.strip():
            raise InputError(path, f"{path}: line {n} has an empty label or text; write label<TAB>text")
        texts.append(text)
        labels.append(label)
    counts = Counter(labels)
    if len(counts) < 2:
        raise InputError(
            path,
            f"{path}: every text has the label {labels[0]!r}; a labelled set needs two labels at least "
            "(label<TAB>text lines)",
        )
    rare, n = min(counts.items(), key=lambda item: item[1])
    if n < folds:
        raise InputError(
            path,
            f"{path}: label {rare!r} has {n} text{'s' * (n != 1)}, fewer than the {folds} folds; "
            f"give every label {folds} texts at least",
        )
    return LabelledTexts(_stem(path), texts, labels)


def load_sentences(tasks: Sequence[str] = TASKS) -> list[SentenceSet]:
    """The bundled sets of ``tasks``, each named after its task."""
    require_sklearn(FAMILY)
    out: list[SentenceSet] = []
    for task in tasks:
        path, labels = SETS[task]
        if not path.is_file():
            raise InputError(
                path,
                f"{path}: missing sentence set; reinstall ctx2static or run bench/data/prepare_sentences.py",
            )
        data = read_pairs(path) if labels is None else read_labelled(path, labels)
        out.append(dataclasses.replace(data, name=task))
    return out


def embed(vectors: Vectors, texts: Sequence[str], config: SentenceConfig) -> np.ndarray:
    """One unit-length row per text, as a user encodes it (:meth:`Vectors.encode`; zero: no known word)."""
    return vectors.encode(texts, weighting=config.weighting)


def _found(x: np.ndarray) -> np.ndarray:
    """Rows that got a vector (a text with no known word is a zero row)."""
    return np.any(x != 0, axis=1)


def subsample(n: int, config: SentenceConfig) -> np.ndarray:
    """Indices of the items kept: all up to ``max_texts``, else a seeded draw in file order."""
    if n <= config.max_texts:
        return np.arange(n)
    return np.sort(np.random.default_rng(config.seed).choice(n, config.max_texts, replace=False))


def fold_accuracies(x: np.ndarray, y: np.ndarray, config: SentenceConfig) -> list[float]:
    """Accuracy on each stratified fold of the probe trained on the other folds."""
    from sklearn.model_selection import StratifiedKFold

    splits = StratifiedKFold(config.folds, shuffle=True, random_state=config.seed).split(x, y)
    return [
        float(np.mean(fit(x[train], y[train], config.c, config.max_iter).predict(x[test]) == y[test]))
        for train, test in splits
    ]


def evaluate_labelled(encode: Encoder, data: LabelledTexts, config: SentenceConfig) -> Score:
    """k-fold accuracy of logistic regression on the texts' vectors (module docstring)."""
    keep = subsample(len(data.texts), config)
    x = np.asarray(encode([data.texts[i] for i in keep]), dtype=np.float32)
    acc = fold_accuracies(x, np.array(data.labels)[keep], config)
    return Score(
        data.name, FAMILY, "accuracy", 100.0 * float(np.mean(acc)), int(_found(x).sum()), len(keep),
        std=100.0 * float(np.std(acc)),
    )  # fmt: skip


def evaluate_pairs(encode: Encoder, data: PairSet) -> Score:
    """Spearman correlation of the pairs' cosines with the gold scores, over pairs with both vectors."""
    from scipy.stats import spearmanr

    x = np.asarray(encode([*data.first, *data.second]), dtype=np.float32)
    a, b = x[: len(data.first)], x[len(data.first) :]
    both = _found(a) & _found(b)
    cos = np.sum(a * b, axis=1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    rho = spearmanr(cos[both], np.array(data.scores)[both])[0] if both.sum() > 1 else float("nan")
    return Score(data.name, FAMILY, "spearman (cosine)", 100.0 * float(rho), int(both.sum()), len(both))


def ranks(sims: np.ndarray, relevant: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    """Each query's relevant documents' 1-based ranks among all documents, ties counted against them.

    ``sims``: queries x documents; a document without a vector holds -inf, below every other.
    """
    out = []
    for row, rel in zip(sims, relevant, strict=True):
        at = row[np.asarray(rel)][:, None]
        out.append(np.sum(row[None, :] > at, axis=1) + np.sum(row[None, :] == at, axis=1))
    return out


def ndcg_mrr(found: np.ndarray, query_ranks: Sequence[np.ndarray]) -> tuple[float, float]:
    """Mean nDCG@10 and mean reciprocal rank over the queries (0 for a query without a vector).

    nDCG (Järvelin & Kekäläinen 2002) with binary relevance: the sum of 1/log2(rank + 1) over the
    relevant documents in the first 10 places, over its best value (the relevant documents first,
    at most 10 of them); the reciprocal rank is 1/rank of the first relevant document, at any rank.
    """
    ndcg, rr = [], []
    for ok, r in zip(found, query_ranks, strict=True):
        ideal = np.sum(1.0 / np.log2(np.arange(2, min(len(r), NDCG_AT) + 2)))
        hits = r[r <= NDCG_AT]
        ndcg.append(float(np.sum(1.0 / np.log2(hits + 1)) / ideal) if ok else 0.0)
        rr.append(1.0 / float(r.min()) if ok else 0.0)
    return float(np.mean(ndcg)), float(np.mean(rr))


def evaluate_retrieval(encode: Encoder, data: RetrievalSet) -> list[Score]:
    """nDCG@10 and MRR of ranking every document by its cosine with each query (module docstring)."""
    q = np.asarray(encode(data.queries), dtype=np.float32)
    d = np.asarray(encode(data.documents), dtype=np.float32)
    found, missing = _found(q), ~_found(d)
    q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
    d = d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
    query_ranks: list[np.ndarray] = []
    for start in range(0, len(q), 512):  # a block of queries at a time: memory bounded by the documents
        sims = q[start : start + 512] @ d.T
        sims[:, missing] = -np.inf
        query_ranks += ranks(sims, data.relevant[start : start + 512])
    ndcg, mrr = ndcg_mrr(found, query_ranks)
    covered, total = int(found.sum()), len(found)
    return [
        Score(data.name, FAMILY, f"nDCG@{NDCG_AT} (cosine)", 100.0 * ndcg, covered, total),
        Score(f"{data.name}-mrr", FAMILY, "MRR (cosine)", 100.0 * mrr, covered, total),
    ]


def evaluate_sentences(
    vectors: Vectors, data: SentenceSet, config: SentenceConfig | None = None
) -> list[Score]:
    """The scores of ``vectors`` on one sentence set (two rows for a retrieval set, else one)."""
    config = config or SentenceConfig()
    return score_encoder(lambda texts: embed(vectors, texts, config), data, config)


def score_encoder(encode: Encoder, data: SentenceSet, config: SentenceConfig | None = None) -> list[Score]:
    """The scores of any text encoder on one sentence set, under the family's probe and folds."""
    config = config or SentenceConfig()
    with blas_threads(1):  # deterministic, and no busy-waiting BLAS threads on a shared machine
        if isinstance(data, RetrievalSet):
            return evaluate_retrieval(encode, data)
        if isinstance(data, PairSet):
            return [evaluate_pairs(encode, data)]
        return [evaluate_labelled(encode, data, config)]


def mean_accuracy(scores: Sequence[Score]) -> Score | None:
    """The family's headline: mean accuracy over every labelled set (None unless all were run)."""
    by_name = {s.benchmark: s for s in scores if s.family == FAMILY and s.metric == "accuracy"}
    labelled = [name for name, (_, labels) in SETS.items() if labels is not None]
    if not all(name in by_name for name in labelled):
        return None
    metric = f"mean accuracy ({', '.join(labelled)})"
    return summary([by_name[name] for name in labelled], "sentences-mean", metric)


PAIRS_MEAN = "pairs-mean"


def mean_spearman(scores: Sequence[Score], names: Sequence[str] | None = None) -> Score | None:
    """The mean Spearman over the pair sets scored (of ``names`` when given); None below two of them.

    The STS sets are scored one file each; their mean is the number a cosine task is judged by.
    """
    picked = [
        s for s in scores
        if s.family == FAMILY and s.metric.startswith("spearman") and (names is None or s.benchmark in names)
    ]  # fmt: skip
    if len(picked) < 2:
        return None
    return summary(picked, PAIRS_MEAN, f"mean Spearman ({', '.join(s.benchmark for s in picked)})")


def protocol(config: SentenceConfig) -> list[str]:
    """Lines stating the sentence protocol under a results table."""
    return [
        f"sentences: a text's vector = Vectors.encode (mean of its words' vectors, weighting "
        f"{config.weighting.value}, unknown words composed when the vectors carry a composer, unit "
        "length); coverage = texts (pairs) that got a vector; every text scored, no common-items "
        "restriction",
        f"sentences, labelled sets: standardised vectors -> logistic regression (scikit-learn, C={config.c}, "
        f"L-BFGS, at most {config.max_iter} iterations), accuracy mean ±std over {config.folds} stratified "
        f"folds (shuffle seed {config.seed}); sets over {config.max_texts} texts subsampled (same seed)",
        "sentences, lee-docsim: Spearman of the cosine of the two documents' vectors with the mean human "
        "similarity (1,225 pairs of 50 news documents); a pair file (STS) the same, pairs-mean their mean",
        f"sentences, retrieval files: each query ranks every document of its file by cosine; nDCG@{NDCG_AT} "
        "(binary relevance) and MRR (NAME-mrr) over the queries, 0 for a query without a vector",
    ]
