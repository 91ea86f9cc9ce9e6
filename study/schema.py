"""What a study is: corpus, teachers, student runs, references, retrofits, evaluation and report (TOML).

Every option inside is one of the stage configs (:class:`CorpusConfig`, :class:`VocabConfig`,
:class:`TeacherConfig`, :class:`ExtractConfig`, a student's ``Config``, :class:`RetrofitConfig`,
:class:`AnalogyConfig`), so a study key and a CLI option are the same field with the same default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.families import INTRINSIC, Family, all_tasks, file_families
from ctx2static.options import Options, Rule, at_least, opt
from ctx2static.pipeline.config import EngineConfig, ExtractConfig, TeacherConfig
from ctx2static.retrofit.config import RetrofitConfig
from ctx2static.students.registry import spec
from ctx2static.text.corpus import CorpusConfig
from ctx2static.text.vocab import VocabConfig
from ctx2static.transforms.combine import CombineConfig
from ctx2static.vectors.outputs import vector_files


@dataclass(frozen=True)
class CorpusSpec:
    """The text every step reads (``files`` resolved against the TOML file's folder)."""

    files: tuple[Path, ...]
    text: CorpusConfig = field(default_factory=CorpusConfig)
    vocab: VocabConfig = field(default_factory=VocabConfig)


@dataclass(frozen=True)
class TeacherSpec:
    """One teacher: which model, how it runs, and what extract caches from it."""

    name: str
    model: str  # minilm, smollm2, bert-base, ..., a folder or a hub id
    teacher: TeacherConfig = field(default_factory=TeacherConfig)
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)  # where it runs; not in the cache identity


@dataclass(frozen=True)
class StudentRun:
    """One student to train; ``name`` names its output, ``teacher`` is set for cache students."""

    name: str
    student: str
    config: Options
    teacher: str | None = None
    baseline: str | None = None  # the output its deltas are taken against (default: its spec's)


@dataclass(frozen=True)
class Reference:
    """Vectors made elsewhere (a peer's model): evaluated and reported like the outputs, never trained."""

    name: str
    vectors: Path


@dataclass(frozen=True)
class RetrofitRun:
    """Retrofit the vectors named ``vectors`` to ``lexicons`` (and ``antonyms``); the output is ``name``."""

    name: str
    vectors: str
    lexicons: tuple[str, ...]
    config: RetrofitConfig
    antonyms: tuple[str, ...] = ()


@dataclass(frozen=True)
class CombineRun:
    """Combine the outputs named ``inputs`` (students, references, retrofits) into the output ``name``."""

    name: str
    inputs: tuple[str, ...]
    config: CombineConfig


@dataclass(frozen=True)
class EvalSpec:
    """Which benchmarks every vectors output is scored on (bundled families plus extra files)."""

    families: tuple[Family | str, ...] = INTRINSIC  # str: a family registered after import
    tasks: tuple[str, ...] = field(default_factory=all_tasks)  # run when their family is listed
    files: Mapping[str, tuple[Path, ...]] = field(default_factory=dict)  # extra files by family
    analogy_config: AnalogyConfig = field(default_factory=AnalogyConfig)

    @property
    def downstream(self) -> bool:
        """Whether the downstream family runs."""
        return Family("downstream") in self.families

    def extra(self) -> dict[str, tuple[Path, ...]]:
        """Extra benchmark files by family: each family of files, and a family of tasks given some.

        A family of tasks that also reads files (sentences) takes a user's own files under its key.
        """
        return {**{name: () for name in file_families()}, **{k: tuple(v) for k, v in self.files.items()}}


@dataclass(frozen=True)
class ReportSpec(Options):
    """What the report shows besides the tables (defaults: Context-to-Vec's Table 5 words, and bank)."""

    words: tuple[str, ...] = opt(("light", "while", "bank"), "Words whose nearest neighbours are listed.")
    neighbours: int = opt(8, "Neighbours listed per word.")
    pairs: str = opt("family", "Section of the Google analogy set whose word pairs are plotted.")
    max_pairs: int = opt(12, "Pairs plotted at most.")

    def rules(self) -> Iterable[Rule]:
        """Counts positive."""
        return [
            *at_least(self, 1, "neighbours"),
            ("max_pairs", self.max_pairs >= 2, ">= 2"),
        ]


@dataclass(frozen=True)
class Study:
    """A whole study as read from its TOML file."""

    path: Path
    corpus: CorpusSpec
    teachers: Mapping[str, TeacherSpec]
    students: tuple[StudentRun, ...]
    retrofits: tuple[RetrofitRun, ...] = ()
    eval: EvalSpec = field(default_factory=EvalSpec)
    report: ReportSpec = field(default_factory=ReportSpec)
    references: tuple[Reference, ...] = ()
    combines: tuple[CombineRun, ...] = ()

    @property
    def inputs(self) -> list[Path | str]:
        """What the study reads besides its own file (corpus, references, lexicons, extra benchmarks).

        The output folder must hold none of them; the study file itself may lie there (``run``
        copies it to ``study.toml``, and re-running that copy rewrites it with the same text).
        """
        lexicons = [x for r in self.retrofits for x in (*r.lexicons, *r.antonyms)]
        extra = [p for paths in self.eval.extra().values() for p in paths]
        references = [f for r in self.references for f in vector_files(r.vectors)]
        return [*self.corpus.files, *references, *lexicons, *extra]

    @property
    def outputs(self) -> list[str]:
        """Names of every vectors output: students, references, retrofits, combinations (file order)."""
        return [
            *(s.name for s in self.students),
            *(r.name for r in self.references),
            *(r.name for r in self.retrofits),
            *(c.name for c in self.combines),
        ]

    def baseline(self, name: str) -> str | None:
        """What ``name`` is set against: a retrofit's input, a combination's first, a student's plain one."""
        for r in self.retrofits:
            if r.name == name:
                return r.vectors
        for c in self.combines:
            if c.name == name:
                return c.inputs[0]
        run = next((s for s in self.students if s.name == name), None)
        if run is None:  # a reference
            return None
        if run.baseline is not None:
            return run.baseline
        plain = spec(run.student).baseline
        return next((s.name for s in self.students if s.student == plain), None)
