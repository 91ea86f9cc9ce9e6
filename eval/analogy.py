"""Word analogy a:b :: c:? by 3CosAdd and 3CosMul (Levy & Goldberg 2014), over the top-N words.

Files: ``a b c d`` per line (a:b :: c:d) with optional ``: section`` header lines (Google layout),
or a CSV with header ``,type,word1,word2,word3,target`` (vecto's SemEval-2012 layout, scored per
``type``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ctx2static.errors import InputError
from ctx2static.eval.reading import csv_rows, lines
from ctx2static.eval.results import Score
from ctx2static.memory import check_fits
from ctx2static.options import Options, Rule, at_least, opt, positive
from ctx2static.resources import BENCHMARK_DIR
from ctx2static.vectors import Vectors


@dataclass(frozen=True)
class AnalogySet:
    """Questions ``a:b :: c:d``; ``sections[i]`` labels question i ("" without sections).

    ``per_section`` sets are scored as the mean accuracy over sections (SemEval-2012 subcategories).
    """

    name: str
    questions: list[tuple[str, str, str, str]]
    sections: list[str]
    per_section: bool = False


SEMEVAL2012 = BENCHMARK_DIR / "analogy" / "semeval2012.csv"
"""Bundled but not run by default: this copy has no gold relational-similarity ratings, only analogy
questions built per subcategory, whose accuracy (near zero for every vectors file: the semeval2012
row of the Results page's substitutes) is noise, not a result; pass it with ``--analogy`` to
see it."""


def read_analogy(path: str | os.PathLike) -> AnalogySet:
    """Read Google-layout questions (``: section`` lines optional) or a vecto SemEval CSV, streamed.

    A word or section name is one string however many questions hold it.
    """
    path = Path(path)
    questions: list[tuple[str, str, str, str]] = []
    sections: list[str] = []
    seen: dict[str, str] = {}
    if path.suffix.lower() == ".csv":
        for _, (kind, *words) in csv_rows(path, ("type", "word1", "word2", "word3", "target")):
            questions.append(tuple(seen.setdefault(w, w) for w in words))  # type: ignore[arg-type]
            sections.append(seen.setdefault(kind, kind))
    else:
        section = ""
        for n, line in lines(path):
            if line.startswith(":"):
                section = line[1:].strip()
                continue
            words = line.split()
            if len(words) != 4:
                raise InputError(
                    path, f"{path}: line {n} has {len(words)} words; expected 'a b c d' (a:b :: c:d)"
                )
            questions.append(tuple(seen.setdefault(w, w) for w in words))  # type: ignore[arg-type]
            sections.append(section)
    if not questions:
        raise InputError(path, f"{path}: no analogy questions found")
    return AnalogySet(path.stem, questions, sections, per_section=path.suffix.lower() == ".csv")


@dataclass(frozen=True)
class AnalogyConfig(Options):
    """Search restricted to the ``top_n`` most frequent words (the vectors' first rows).

    ``eps`` is 3CosMul's epsilon (Levy & Goldberg 2014). Questions are solved in groups
    sharing at most ``group_words`` distinct words (one matrix product per group, memory about
    3 x group_words x top_n x 4 bytes), scored ``chunk`` questions at a time (cache-sized).
    """

    top_n: int = opt(30000, "Analogy search over the N most frequent words.")
    eps: float = opt(1e-3, "3CosMul's epsilon (Levy & Goldberg 2014).")
    group_words: int = opt(256, "Distinct words per matrix product (memory).")
    chunk: int = opt(16, "Questions scored at a time.")

    def rules(self) -> Iterable[Rule]:
        """Sizes positive; eps positive (3CosMul divides by the third cosine term plus eps)."""
        return [*at_least(self, 1, "top_n", "group_words", "chunk"), *positive(self, "eps")]


def question_rows(vectors: Vectors, questions: Sequence[tuple[str, ...]], top_n: int) -> np.ndarray:
    """Rows (q, 4) of the words via ``Vectors.row_of``; -1 where a word is absent or not in the top N."""
    rows = np.full((len(questions), 4), -1, dtype=np.int64)
    row_of: dict[str, int] = {}
    for q, words in enumerate(questions):
        for k, w in enumerate(words):
            if w not in row_of:
                i = vectors.row_of(w)
                row_of[w] = i if i is not None and i < top_n else -1
            rows[q, k] = row_of[w]
    return rows


def scorable(rows: np.ndarray) -> np.ndarray:
    """The questions of ``rows`` (:func:`question_rows`) that are covered and answerable.

    Covered: all four words found in the top N. Answerable: the answer is none of the three
    question words, which :func:`solve` never returns (the usual rule), so "a a b b" could only
    ever be scored wrong; such a question counts as not covered.
    """
    return (rows >= 0).all(axis=1) & (rows[:, 3:] != rows[:, :3]).all(axis=1)


def _groups(abc: np.ndarray, max_words: int) -> Iterator[slice]:
    """Consecutive slices of the questions, each with at most ``max_words`` distinct words (or one row)."""
    start, seen = 0, set[int]()
    for i, row in enumerate(abc.tolist()):
        new = seen.union(row)
        if len(new) > max_words and i > start:
            yield slice(start, i)
            start, new = i, set(row)
        seen = new
    if start < len(abc):
        yield slice(start, len(abc))


def solve(unit: np.ndarray, abc: np.ndarray, config: AnalogyConfig) -> tuple[np.ndarray, np.ndarray]:
    """Answers of a:b :: c:? for rows ``abc`` (q, 3) of unit vectors ``unit``, by 3CosAdd and 3CosMul.

    3CosAdd: argmax_d cos(d,b) - cos(d,a) + cos(d,c)  (= argmax cos(d, b - a + c) for unit vectors;
    Eq. 16 of Wang et al. 2021, after Levy & Goldberg 2014).
    3CosMul (Levy & Goldberg 2014): argmax_d cos'(d,b) cos'(d,c) / (cos'(d,a) + eps) with shifted
    cosines cos' = (cos + 1) / 2. The three question words are never answers.
    """
    distinct, top_n = min(config.group_words, len(np.unique(abc))), len(unit)
    check_fits(  # a group's cosines, shifted and reciprocal; a chunk's 3CosAdd and 3CosMul scores
        3 * distinct * top_n * 4 + 2 * min(config.chunk, len(abc)) * top_n * 4,
        f"analogy with --top-n {top_n} --group-words {config.group_words} --chunk {config.chunk}",
        "lower --group-words or --chunk (or --top-n)",
    )
    add_out = np.empty(len(abc), dtype=np.int64)
    mul_out = np.empty(len(abc), dtype=np.int64)
    for group in _groups(abc, config.group_words):
        words, inv = np.unique(abc[group], return_inverse=True)
        inv = inv.reshape(-1, 3)
        cos = unit[words] @ unit.T  # cosines of the group's distinct words with every candidate
        shifted = cos + 1.0
        shifted *= 0.5
        recip = shifted + config.eps
        np.reciprocal(recip, out=recip)
        for s in range(0, len(inv), config.chunk):
            a, b, c = inv[s : s + config.chunk].T
            q = abc[group][s : s + config.chunk]
            add = cos[b]
            add -= cos[a]
            add += cos[c]
            mul = shifted[b]
            mul *= shifted[c]
            mul *= recip[a]
            rows = np.arange(len(q))[:, None]
            add[rows, q] = -np.inf
            mul[rows, q] = -np.inf
            out = slice(group.start + s, group.start + s + len(q))
            add_out[out] = add.argmax(axis=1)
            mul_out[out] = mul.argmax(axis=1)
    return add_out, mul_out


def _mean_by_section(correct: np.ndarray, sections: np.ndarray) -> float:
    """Mean over sections of the per-section accuracy (sections with no question left out)."""
    accs = [correct[sections == s].mean() for s in np.unique(sections)]
    return float(np.mean(accs)) if accs else float("nan")


def _acc(correct: np.ndarray) -> float:
    return float(correct.mean()) if len(correct) else float("nan")


def analogy_coverage(vectors: Vectors, bench: AnalogySet, config: AnalogyConfig) -> np.ndarray:
    """Which questions :func:`scorable` keeps: all four words in the top N, the answer not asked."""
    return scorable(question_rows(vectors, bench.questions, min(config.top_n, len(vectors))))


def evaluate_analogy(
    vectors: Vectors, bench: AnalogySet, config: AnalogyConfig | None = None, only: np.ndarray | None = None
) -> list[Score]:
    """Accuracy x 100 on the covered questions (all 4 words in the top N, :func:`scorable`), with coverage.

    Rows: 3CosAdd and 3CosMul overall, and per semantic / syntactic split when the sections mix
    ``gram*`` (syntactic) and other sections (Google). ``per_section`` sets (SemEval-2012) give one
    row: 3CosAdd accuracy per section (subcategory), averaged over the covered sections. ``only``
    (a mask over the questions) restricts the scored questions further.
    """
    config = config or AnalogyConfig()
    top_n = min(config.top_n, len(vectors))
    rows = question_rows(vectors, bench.questions, top_n)
    covered = scorable(rows) & (True if only is None else only)
    sections = np.array(bench.sections)
    total = len(bench.questions)
    top = np.asarray(vectors.matrix[:top_n], dtype=np.float32)
    unit = top / np.maximum(np.linalg.norm(top, axis=1, keepdims=True), 1e-12)
    add, mul = solve(unit, rows[covered, :3], config)
    gold = rows[covered, 3]
    hit_add, hit_mul = add == gold, mul == gold
    if bench.per_section:
        score = 100.0 * _mean_by_section(hit_add, sections[covered])
        metric = "analogy acc per subcategory, mean (3CosAdd)"
        return [Score(bench.name, "analogy", metric, score, int(covered.sum()), total)]
    syntactic = np.char.startswith(sections, "gram")
    splits = [(bench.name, np.ones(total, dtype=bool))]
    if syntactic.any() and not syntactic.all():
        splits += [(f"{bench.name}/semantic", ~syntactic), (f"{bench.name}/syntactic", syntactic)]
    scores = []
    for name, mask in splits:
        sub = mask[covered]
        n_cov, n_tot = int((covered & mask).sum()), int(mask.sum())
        scores.append(Score(name, "analogy", "3CosAdd acc", 100.0 * _acc(hit_add[sub]), n_cov, n_tot))
        scores.append(Score(name, "analogy", "3CosMul acc", 100.0 * _acc(hit_mul[sub]), n_cov, n_tot))
    return scores
