"""Which evaluation families exist and everything the suite, the CLI and a study need of each.

A family is one kind of benchmark set (word similarity, analogy, categorization, the downstream
probes, the sentence sets). Its module holds the set type, the reader of its files, its scoring
and its coverage; its row in :data:`FAMILIES` says how they are wired. Everything else is
derived from the table: ``eval --family`` and the per-family option ``--NAME`` (extra files, or
the tasks to run), the study's ``[eval]`` keys, the suite's dispatch on a set's type, which sets
share a common-items mask, which words ``--compose`` composes, and the protocol lines under a
table and in its JSON.
A set whose type no family claims is an error, never scored as another family's.

A family's module (``eval/NAME.py``, or a package like ``eval/downstream/``) imports nothing
above ``eval`` and gives its row what it names:

- a frozen dataclass per set type, each with a ``name`` unique among loaded sets (the rows of
  the table and the masks are keyed by it);
- either ``read(path) -> set`` (a family of files: its bundled files go in
  ``data/benchmarks/NAME/``, users add theirs with ``--NAME FILE`` or the study key ``NAME``),
  or ``load(tasks) -> list of sets`` (bundled data split into named tasks, picked with
  ``--NAME TASK`` or the study key ``NAME``; task names unique across families), or both (a
  family of tasks whose ``eval --NAME`` also takes a user's file: a value that names no task is
  read as one);
- ``evaluate(vectors, set, analogy, only) -> list[Score]``, each ``Score.family == NAME``;
- ``coverage(vectors, set, analogy) -> mask`` when its items can be restricted to those every
  compared file covers; None when it scores every token (then it runs on each file's own items
  only and its rows are added to the common-items table as they are, like the downstream probes);
- ``words(set)`` when ``--compose`` should give its words vectors (its ``evaluate`` then
  receives the table with the composed words), else None;
- ``note`` / ``protocol``: its fixed protocol as lines under the table and as JSON entries
  (those of a ``default=False`` family also enter a study's evaluation hash);
- ``headline``, when a study's summary should compare the outputs on it: its summary row, or
  the mean of its scores, and the words that name the number.

A sentence-level family (texts encoded into vectors, a logistic regression over fixed folds) is a
family of tasks: ``load``, ``coverage=None``, ``words=None``, ``default=False``, its probe config
in ``note`` / ``protocol``. The checklist of a new family is the contributing guide's.
"""

from __future__ import annotations

import os
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ctx2static.errors import UserError, did_you_mean
from ctx2static.eval.analogy import (
    AnalogyConfig,
    AnalogySet,
    analogy_coverage,
    evaluate_analogy,
    read_analogy,
)
from ctx2static.eval.categorization import (
    CLUSTERING,
    CategorizationSet,
    categorization_coverage,
    evaluate_categorization,
    read_categorization,
)
from ctx2static.eval.downstream import DownstreamTask, ProbeConfig, Task, evaluate_downstream, load_downstream
from ctx2static.eval.downstream.tasks import protocol as downstream_protocol
from ctx2static.eval.results import Score
from ctx2static.eval.sentences import TASKS as SENTENCE_TASKS
from ctx2static.eval.sentences import (
    SentenceConfig,
    SentenceSet,
    evaluate_sentences,
    load_sentences,
    read_sentence_file,
)
from ctx2static.eval.sentences import protocol as sentences_protocol
from ctx2static.eval.similarity import (
    SimilaritySet,
    evaluate_similarity,
    read_similarity,
    similarity_coverage,
)
from ctx2static.vectors import Vectors


class Benchmark(Protocol):
    """One set of any family: the suite needs its name (the masks and the table rows are keyed by it)."""

    @property
    def name(self) -> str:
        """The set's name, unique among the sets loaded together."""
        ...


Mask = np.ndarray
"""A boolean mask over a set's items (pairs, questions, items)."""


@dataclass(frozen=True)
class Headline:
    """A family's number in a study's summary, named there by ``words``.

    Its summary ``row`` (a benchmark's name), or without one the mean of the family's scores.
    """

    words: str
    row: str | None = None


AVG5_WORDS = "mean Spearman of the five similarity sets (avg5)"


@dataclass(frozen=True)
class FamilySpec:
    """One evaluation family: its sets' types, how they are read, scored and described."""

    name: str
    types: tuple[type, ...]  # the set types it reads; the suite dispatches on them
    evaluate: Callable[[Vectors, Any, AnalogyConfig, Mask | None], list[Score]]
    coverage: Callable[[Vectors, Any, AnalogyConfig], Mask] | None = None  # None: every token, own items
    words: Callable[[Any], list[str]] | None = None  # the words --compose gives vectors (None: none)
    read: Callable[[str | os.PathLike], Any] | None = None  # one file (--NAME FILE, the study key NAME)
    bundled: tuple[str, ...] = ()  # files in data/benchmarks/NAME/ read by ``read``
    load: Callable[[Sequence[str]], list[Any]] | None = None  # the bundled sets of the named tasks
    tasks: tuple[str, ...] = ()  # what --NAME / the study key NAME picks (naming one asks for the family)
    task_noun: str = ""  # "a downstream task", in the error naming a task that is not one
    note: Callable[[AnalogyConfig], list[str]] = lambda analogy: []  # protocol lines under the table
    protocol: Callable[[AnalogyConfig], dict[str, Any]] = lambda analogy: {}  # the same in the JSON
    help: str = ""  # the help of its CLI option --NAME
    default: bool = True  # run when no family is named (False: slow, run only when asked)
    headline: Headline | None = None  # its number in a study's summary (None: the family has none)

    def __post_init__(self) -> None:
        if self.read is None and self.load is None:
            raise ValueError(f"family {self.name}: give read (files), load (tasks) or both")


def _one(score: Callable[[Vectors, Any, Mask | None], Score]) -> Callable[..., list[Score]]:
    """A family scoring a set in one row, as the uniform ``evaluate`` (it takes no analogy config)."""
    return lambda vectors, bench, analogy, only: [score(vectors, bench, only)]


def _plain(coverage: Callable[[Vectors, Any], Mask]) -> Callable[[Vectors, Any, AnalogyConfig], Mask]:
    """A coverage that needs no analogy config, as the uniform ``coverage``."""
    return lambda vectors, bench, analogy: coverage(vectors, bench)


def _analogy_note(analogy: AnalogyConfig) -> list[str]:
    return [
        f"analogy: search over the top N={analogy.top_n} most frequent words (all if fewer), "
        f"3CosMul eps={analogy.eps}; covered = all 4 words in the top N and the answer not a question "
        "word (question words are excluded from the answers)"
    ]


FAMILIES: dict[str, FamilySpec] = {
    f.name: f
    for f in [
        FamilySpec(
            "similarity", (SimilaritySet,), _one(evaluate_similarity), _plain(similarity_coverage),
            words=lambda bench: [w for pair in bench.pairs for w in pair],
            read=read_similarity,
            bundled=("ws353.txt", "ws353_sim.txt", "ws353_rel.txt", "simlex999.txt", "men3k.txt", "rw.txt",
                     "rg65.txt", "mturk287.txt"),
            help="Extra TSV 'w1 w2 score'.",
            headline=Headline(AVG5_WORDS, "avg5"),
        ),
        FamilySpec(
            "analogy", (AnalogySet,), evaluate_analogy, analogy_coverage,
            read=read_analogy, bundled=("google.txt", "msr.txt"),
            note=_analogy_note,
            protocol=lambda analogy: {"analogy_top_n": analogy.top_n, "analogy_eps": analogy.eps},
            help="Extra 'a b c d' file, or CSV ',type,word1,word2,word3,target'.",
            headline=Headline("mean accuracy of the analogy scores"),
        ),
        FamilySpec(
            "categorization", (CategorizationSet,), _one(evaluate_categorization),
            _plain(categorization_coverage),
            words=lambda bench: [w for item in bench.items for w in item.split()],  # phrase: mean of words
            read=read_categorization, bundled=("ap.csv", "battig.csv", "essli2008.csv"),
            note=lambda analogy: [
                f"categorization: purity of {CLUSTERING}; multi-word items = mean of their word vectors"
            ],
            protocol=lambda analogy: {"clustering": CLUSTERING},
            help="Extra CSV ',category,word'.",
        ),
        FamilySpec(
            "downstream", typing.get_args(DownstreamTask),
            lambda vectors, task, analogy, only: evaluate_downstream(vectors, task),
            load=load_downstream, tasks=tuple(t.value for t in Task), task_noun="a downstream task",
            note=lambda analogy: downstream_protocol(ProbeConfig()),
            protocol=lambda analogy: {"downstream_probes": ProbeConfig().to_dict()},
            help="Downstream tasks to run (repeat; implies --family downstream; default with it: all).",
            default=False,  # minutes per file
            headline=Headline("mean of the downstream scores"),
        ),
        FamilySpec(
            "sentences", typing.get_args(SentenceSet),
            lambda vectors, bench, analogy, only: evaluate_sentences(vectors, bench),
            read=read_sentence_file, load=load_sentences, tasks=SENTENCE_TASKS, task_noun="a sentence set",
            note=lambda analogy: sentences_protocol(SentenceConfig()),
            protocol=lambda analogy: {"sentence_probes": SentenceConfig().to_dict()},
            help="Sentence sets to run: a bundled set's name, or a file of your own ('label<TAB>text' "
            "lines, two labels at least; 'score<TAB>text<TAB>text'; or a 'query<TAB>document' header "
            "then such lines); repeat; implies --family sentences; default with it: all bundled sets.",
            default=False,  # about half a minute per file; the default study's table stays as it was
            headline=Headline("mean accuracy of the labelled sentence sets", "sentences-mean"),
        ),
    ]
}  # fmt: skip

Family = Enum("Family", [(name.upper(), name) for name in FAMILIES], type=str)  # type: ignore[misc]
Family.__doc__ = "The evaluation families, by name (the rows of FAMILIES)."

INTRINSIC = tuple(Family(name) for name, f in FAMILIES.items() if f.default)
"""The families run by default (downstream and sentences train probes: asked for explicitly)."""


def family(name: str | Enum) -> FamilySpec:
    """The spec of family ``name``; an unknown name is a one-line error listing the families."""
    key = name.value if isinstance(name, Enum) else name
    found = FAMILIES.get(key)
    if found is None:
        raise UserError(
            f"unknown benchmark family '{key}'{did_you_mean(key, FAMILIES)}; "
            f"choose one of: {', '.join(FAMILIES)}"
        )
    return found


def member(name: str) -> Family | str:
    """Family ``name`` as a :class:`Family` member; a family registered after import keeps its name.

    An unknown name is a one-line error listing the families.
    """
    key = family(name).name
    return Family(key) if key in {m.value for m in Family} else key


def family_of(bench: Benchmark) -> FamilySpec:
    """The family whose set type ``bench`` is; a type no family claims is an error (a wiring bug)."""
    found = next((f for f in FAMILIES.values() if type(bench) in f.types), None)
    if found is None:
        raise TypeError(
            f"{type(bench).__name__} is the set type of no evaluation family ({', '.join(FAMILIES)}); "
            "register its family in ctx2static.eval.families.FAMILIES"
        )
    return found


def file_families() -> list[str]:
    """The families of files only: each has an extra-file option and study key named after it."""
    return [name for name, f in FAMILIES.items() if f.read is not None and not f.tasks]


def task_families() -> list[str]:
    """The families split into named tasks: each has a task option and study key named after it."""
    return [name for name, f in FAMILIES.items() if f.tasks]


def tasks_and_files(
    name: str, given: Sequence[str], base: Path = Path()
) -> tuple[tuple[str, ...], tuple[Path, ...]]:
    """The tasks and the user's files among the values ``given`` to family ``name`` (``--NAME`` or its key).

    A value that names no task is a file of the user's own (relative to ``base``: the study file's
    folder in a study), for a family that reads files; one that is neither is a one-line error
    listing the tasks.
    """
    spec = family(name)
    files = []
    for value in given:
        if value in spec.tasks:
            continue
        choose = f"choose from {', '.join(spec.tasks)}"
        if spec.read is None:
            raise UserError(f"{value!r} is not {spec.task_noun}; {choose}")
        if not (base / value).is_file():
            raise UserError(f"{value}: neither {spec.task_noun} nor a file; {choose}, or give a file's path")
        files.append(base / value)
    return tuple(v for v in given if v in spec.tasks), tuple(files)


def all_tasks() -> tuple[str, ...]:
    """Every task of every family (what runs of a family asked for without naming its tasks)."""
    return tuple(t for f in FAMILIES.values() for t in f.tasks)


def with_named_tasks(
    picked: Sequence[Any], named: Mapping[str, Sequence[str]]
) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """``picked`` families plus every family whose tasks were named, and the tasks to run.

    A family whose tasks were not named runs all of them.
    """
    asked = tuple(picked) + tuple(member(name) for name in named if name not in picked)
    tasks = tuple(t for name, f in FAMILIES.items() for t in (named[name] if name in named else f.tasks))
    return asked, tasks


def opt_in_key(families: Sequence[Any], tasks: Sequence[str], analogy: AnalogyConfig) -> dict[str, Any]:
    """The tasks and protocol of the families asked for that do not run by default (scores depend on them)."""
    asked = {family(f).name for f in families}
    out: dict[str, Any] = {}
    for name, f in FAMILIES.items():
        if not f.default and name in asked:
            out |= {name: [t for t in tasks if t in f.tasks], **f.protocol(analogy)}
    return out
