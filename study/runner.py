"""Running a study: extract -> fit-student (each) -> references -> retrofit -> combine -> eval -> report.

Each output records its *provenance*: a hash of its step's configuration and of the provenance of
everything upstream, the seconds it took and when it was written. A rerun skips every step whose
output records the hash it would have now, so changing one student's option redoes that student
and what depends on it, and a rerun after a crash (or after adding a student) costs only the
missing work. References (vectors made elsewhere) are copied in, keyed by their files' content,
and evaluated like the outputs. The output folder's layout is
:class:`~ctx2static.study.layout.StudyLayout`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from ctx2static.errors import (
    InputError,
    OptionError,
    Style,
    TeacherUnavailableError,
    UserError,
    speaking_to,
    spell,
)
from ctx2static.eval.benchmarks import Benchmark
from ctx2static.eval.comparison import Comparison, compare
from ctx2static.eval.results import Score
from ctx2static.fileio.atomic import atomic_write, write_json
from ctx2static.fileio.digests import sha256_file
from ctx2static.fileio.locks import folder_lock
from ctx2static.fileio.outputs import check_writable
from ctx2static.interrupts import sigterm_as_interrupt
from ctx2static.memory import PeakRss, release_freed
from ctx2static.pipeline.config import AUTO_LAYER, AUTO_TEMPLATE, Backend
from ctx2static.pipeline.models import WORD_DEFAULTS, need_teacher_stage, teacher_layer, teacher_stage_missing
from ctx2static.study.layout import StudyLayout, read_record
from ctx2static.study.schema import CombineRun, Reference, RetrofitRun, StudentRun, Study, TeacherSpec
from ctx2static.vectors import Vectors
from ctx2static.vectors.outputs import vector_files

log = logging.getLogger(__name__)


@contextlib.contextmanager
def measured() -> Iterator[dict[str, float]]:
    """Time a step and sample its peak resident memory; the dict is filled when the block ends.

    The heap's free pages are handed back first: what an earlier step freed (a teacher pass leaves
    hundreds of MB free but resident) is neither this step's memory nor counted in its peak.
    """
    step: dict[str, float] = {}
    release_freed()
    start = time.perf_counter()
    with PeakRss() as peak:
        yield step
    step.update(seconds=round(time.perf_counter() - start, 2), peak_rss_mb=round(peak.megabytes))


def digest(obj: Any) -> str:
    """Short sha256 of a JSON-able object (keys sorted): the identity of a step's configuration."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class StudyRunner:
    """The state of one :func:`run_study` call: the provenance of every output made or found so far."""

    study: Study
    layout: StudyLayout
    provenance: dict[str, dict[str, Any]] = field(default_factory=dict)  # output -> meta["study"]
    _ready: set[str] = field(default_factory=set)  # teachers whose cache is complete
    _corpus_key: dict[str, Any] | None = None
    _teacher_hashes: dict[str, str] = field(default_factory=dict)
    _layers: dict[str, str] = field(default_factory=dict)  # resolving "auto" reads the config
    _benchmarks: list | None = None

    @property
    def corpus_key(self) -> dict[str, Any]:
        """The corpus files' content hashes and how they are read (the text students' input)."""
        if self._corpus_key is None:
            from ctx2static.text.corpus import Corpus

            c = self.study.corpus
            files = Corpus(list(c.files), c.text).identity()
            self._corpus_key = {
                "files": [[f["path"], f["sha256"]] for f in files],
                "text": c.text.tokens(),
                "vocab": c.vocab.to_dict(),
                "reading": [{k: v for k, v in f.items() if k not in ("path", "sha256")} for f in files],
            }
        return self._corpus_key

    def teacher_hash(self, name: str) -> str:
        """Hash of everything that determines teacher ``name``'s cache."""
        if name not in self._teacher_hashes:
            t = self.study.teachers[name]
            teacher = {k: v for k, v in t.teacher.to_dict().items() if k in ("layer", "precision")}
            # what "auto" resolves to, as the cache records it: the same layers spelled out are the same cache
            teacher["layer"] = self.teacher_layer(name)
            if t.teacher.backend is not Backend.TORCH:  # keyed only when not torch: older studies' keys stand
                teacher["backend"] = t.teacher.backend.value
            extract = t.extract.to_dict()
            if not t.extract.max_words:  # no word budget is no key, as in the cache's identity: keys stand
                del extract["max_words"]
            if t.extract.word_template == AUTO_TEMPLATE or t.extract.word_layer == AUTO_LAYER:
                # auto's word settings follow the loaded teacher's family, which its config alone does not
                # tell (MPNet's weights lack the MLM head its config names): every family's defaults key it
                extract["word_defaults"] = {kind.value: list(v) for kind, v in WORD_DEFAULTS.items()}
            key = {"corpus": self.corpus_key, "model": t.model, **teacher, "extract": extract}
            self._teacher_hashes[name] = h = digest(key)
            record = self.layout.cache_record(name)
            kept = read_record(record)
            if kept.get("hash") == h and "layer" not in kept:  # an older record: keep it for the core install
                write_json(record, {**kept, "layer": teacher["layer"]})
        return self._teacher_hashes[name]

    def teacher_layer(self, name: str) -> str:
        """The layer spec teacher ``name``'s cache reads: ``auto`` resolved from the teacher's config.

        Without the teacher stage (the core install) the config is not read: ``auto`` is what the
        record of the cache made with it says, so a study whose caches exist runs its students.
        """
        if name not in self._layers:
            t = self.study.teachers[name]
            spec = t.teacher.layer
            if spec == AUTO_LAYER and teacher_stage_missing():
                recorded = read_record(self.layout.cache_record(name)).get("layer")
                if not isinstance(recorded, str):
                    need_teacher_stage(
                        f"teacher '{name}' (layer auto, read from its config: its cache's record lacks it)"
                    )
                spec = str(recorded)
            self._layers[name] = teacher_layer(t.model, spec)
        return self._layers[name]

    def ensure_cache(self, name: str) -> Path:
        """Extract teacher ``name``'s cache unless a complete one of the same configuration exists."""
        from ctx2static.cache.reader import read_manifest

        folder, record = self.layout.cache(name), self.layout.cache_record(name)
        if name in self._ready:
            return folder
        self._ready.add(name)
        h = self.teacher_hash(name)
        stale = (folder.exists() or folder.is_symlink()) and read_record(record).get("hash") != h
        manifest = read_manifest(folder) if folder.is_dir() and not stale else None
        if manifest is not None and manifest.get("complete") and _intact(folder):
            log.info("skip extract %s: %s is complete", name, folder)
            return folder
        need_extract(name, folder)  # before anything is removed: a cache this install cannot make is kept
        if stale:
            _remove_cache(folder, name)
        t = self.study.teachers[name]
        log.info("run extract %s: teacher %s -> %s%s", name, t.model, folder, " (resuming)" * bool(manifest))
        write_json(record, {"hash": h, "layer": self.teacher_layer(name)})
        with measured() as step:
            m = self._extract(t, folder)
        rate = m.get("run", {}).get("teacher_tokens_per_s", 0.0)
        write_json(
            record,
            {"hash": h, "layer": self.teacher_layer(name), **step, "teacher_tokens_per_s": round(rate)},
        )
        return folder

    def _extract(self, t: TeacherSpec, folder: Path) -> dict[str, Any]:
        """The command line's extract (here or on Ray, as ``engine`` says) on the study's corpus."""
        from ctx2static.pipeline.extract import extract_with
        from ctx2static.text.corpus import Corpus
        from ctx2static.text.vocab import Vocab

        c = self.study.corpus

        def inputs() -> tuple[Corpus, Vocab]:
            # the whole corpus's vocabulary, as the plain baselines: words the teacher does not read in
            # context (max_sentences) keep the teacher's word-alone vectors (students' init=auto)
            corpus = Corpus(list(c.files), c.text)
            return corpus, Vocab.build(corpus, c.vocab)

        return extract_with(t.model, t.teacher, inputs, folder, t.extract, t.engine)

    def check_extracts(self) -> None:
        """Refuse now a study that must extract where this install has no teacher stage.

        Asked before the study's folder is written (its lock, ``study.toml``): a cache student whose
        vectors are not up to date needs its teacher's cache, and where no complete cache of the
        study's configuration is there, :meth:`ensure_cache` would refuse it once earlier steps had
        run. A complete cache's checksums are read there only (a damaged one is refused then).
        """
        from ctx2static.cache.reader import read_manifest

        if not teacher_stage_missing():
            return
        for s in self.study.students:
            if not s.teacher or self.recorded(s.name).get("hash") == self.student_hash(s):
                continue
            folder = self.layout.cache(s.teacher)
            h = self.teacher_hash(s.teacher)
            made = read_record(self.layout.cache_record(s.teacher)).get("hash") == h
            manifest = read_manifest(folder) if made and folder.is_dir() else None
            if not (manifest and manifest.get("complete")):
                need_extract(s.teacher, folder)

    def recorded(self, name: str) -> dict[str, Any]:
        """The provenance output ``name`` records ({} where it is missing, damaged or not a study's)."""
        path = self.layout.vectors(name)
        try:
            study = Vectors.load(path, mmap=True).meta.get("study") if path.exists() else None
        except UserError:
            return {}
        return study if isinstance(study, dict) else {}

    def is_up_to_date(self, name: str, h: str, what: str) -> bool:
        """True (and says so) when output ``name`` loads and records hash ``h``; else the step must run."""
        path = self.layout.vectors(name)
        if not path.exists():
            log.info("run %s", what)
            return False
        recorded = self.recorded(name)
        if recorded.get("hash") == h:
            log.info("skip %s: %s is up to date", what, path)
            self.provenance[name] = recorded
            return True
        log.info("redo %s: %s was made from another configuration (or is damaged)", what, path)
        return False

    def vectors_step(
        self, name: str, h: str, what: str, make: Callable[[], Vectors], before: Callable[[], Any] = bool
    ) -> None:
        """Make output ``name`` (``make``, measured) and save it, unless it is up to date with hash ``h``.

        ``before`` runs first when the step must run, outside its measures: the extract a student
        waits for has its own row.
        """
        if self.is_up_to_date(name, h, what):
            return
        before()
        with measured() as step:
            vectors = make()
        self.save(name, vectors, h, step)

    def student_hash(self, s: StudentRun) -> str:
        """Hash of everything that determines student ``s``'s vectors: its config and its input's hash."""
        upstream = self.teacher_hash(s.teacher) if s.teacher else self.corpus_key
        return digest({"student": s.student, "config": s.config.to_dict(), "input": upstream})

    def fit(self, s: StudentRun) -> None:
        """Train student ``s`` unless its vectors are up to date."""
        from ctx2static.students.registry import fit_cache_student, fit_text_student
        from ctx2static.text.corpus import Corpus

        h = self.student_hash(s)

        def train() -> Vectors:
            if s.teacher:
                return fit_cache_student(s.student, self.ensure_cache(s.teacher), s.config)
            c = self.study.corpus
            return fit_text_student(s.student, Corpus(list(c.files), c.text), c.vocab, s.config)

        extract = (lambda: self.ensure_cache(s.teacher)) if s.teacher else bool
        self.vectors_step(s.name, h, f"student {s.name} ({s.student})", train, extract)

    def reference(self, r: Reference) -> None:
        """Copy reference ``r`` into the study's vectors (its provenance: the content of its files)."""
        if r.vectors.is_dir():
            files = sorted(p for p in r.vectors.iterdir() if p.is_file())
        else:  # a vectors file, its sidecar (metadata, counts) and its composer's files
            files = vector_files(r.vectors)
        h = digest({"reference": [[p.name, sha256_file(p)] for p in files if p.is_file()]})
        self.vectors_step(r.name, h, f"reference {r.name}", lambda: Vectors.load(r.vectors))

    def save(self, name: str, vectors: Vectors, h: str, step: dict[str, float]) -> None:
        """Write output ``name`` with its provenance: the step's hash, seconds, peak memory, and when.

        Later steps hash the provenance, so a retrained input (even with the same configuration,
        after its folder was deleted) redoes its retrofits and evaluations.
        """
        written = datetime.now(timezone.utc).isoformat(timespec="microseconds")  # unique per write
        self.provenance[name] = {"hash": h, **step, "written": written}
        vectors.meta["study"] = self.provenance[name]
        vectors.save(self.layout.vectors(name))

    def retrofit(self, r: RetrofitRun) -> None:
        """Retrofit ``r.vectors`` unless the output is up to date."""
        from ctx2static.retrofit.solver import retrofit_vectors

        h = digest(
            {
                "input": self.provenance[r.vectors],
                "lexicons": r.lexicons,
                "antonyms": r.antonyms,
                "config": r.config.to_dict(),
            }
        )

        def make() -> Vectors:
            vectors = Vectors.load(self.layout.vectors(r.vectors))
            return retrofit_vectors(vectors, r.lexicons, r.config, r.antonyms)[0]

        self.vectors_step(r.name, h, f"retrofit {r.name}", make)

    def combine(self, c: CombineRun) -> None:
        """Combine the outputs ``c.inputs`` unless the output is up to date."""
        from ctx2static.transforms.combine import combine_vectors

        h = digest({"inputs": [self.provenance[i] for i in c.inputs], "config": c.config.to_dict()})

        def make() -> Vectors:
            paths = [self.layout.vectors(i) for i in c.inputs]
            return combine_vectors([(str(p), Vectors.load(p, mmap=True)) for p in paths], c.config)

        self.vectors_step(c.name, h, f"combine {c.name}", make)

    @property
    def benchmarks(self) -> list[Benchmark]:
        """The study's benchmarks, read once."""
        from ctx2static.eval import load_benchmarks

        if self._benchmarks is None:
            spec = self.study.eval
            self._benchmarks = load_benchmarks(spec.families, spec.extra(), bundled=True, tasks=spec.tasks)
        return self._benchmarks

    def evaluate(self, name: str, only: Mapping[str, np.ndarray] | None = None) -> list[Score]:
        """Scores of output ``name`` (on the ``only`` items when given), read back when up to date."""
        from ctx2static.eval import evaluate
        from ctx2static.eval.families import opt_in_key

        spec = self.study.eval
        key = {
            "families": [f.value if isinstance(f, Enum) else f for f in spec.families],
            **opt_in_key(spec.families, spec.tasks, spec.analogy_config),
            "extra": {f: [[str(p), sha256_file(p)] for p in ps] for f, ps in spec.extra().items()},
            "analogy": spec.analogy_config.to_dict(),
            "only": None
            if only is None
            else {k: digest(np.flatnonzero(m).tolist()) for k, m in only.items()},
        }
        h = digest({"vectors": self.provenance[name], "eval": key})
        path = self.layout.scores(name, common=only is not None)
        what = f"eval {name}" + " (common items)" * (only is not None)
        rec = read_record(path)
        if rec.get("hash") == h:
            log.info("skip %s: %s is up to date", what, path)
            return [Score.from_json(d) for d in rec["scores"]]
        log.info("run %s", what)
        with measured() as step:
            scores = evaluate(
                Vectors.load(self.layout.vectors(name)), self.benchmarks, spec.analogy_config, only
            )
        write_json(path, {"hash": h, **step, "scores": [s.to_json() for s in scores]})
        return scores


def _remove_cache(folder: Path, name: str) -> None:
    """Remove the cache ``folder`` of teacher ``name`` made from another configuration (or unrecorded).

    A link in its place is not the study's own: what it points to is never deleted (an empty
    folder needs nothing removed); anything else there is a one-line error.
    """
    if not folder.is_symlink():
        log.info("redo extract %s: its configuration changed; removing %s", name, folder)
        shutil.rmtree(folder)
    elif not folder.is_dir() or any(folder.iterdir()):
        raise InputError(
            folder,
            f"{folder}: a symbolic link (to {os.readlink(folder)}) in the place of a cache the study did "
            "not make from this configuration; it never deletes through a link: remove the link, "
            "or point it at an empty folder, then re-run",
        )


def need_extract(teacher: str, folder: Path) -> None:
    """Refuse, where this install has no teacher stage, to make teacher ``teacher``'s cache ``folder``."""
    need_teacher_stage(f"teacher '{teacher}' (its cache {folder} is missing, unfinished or of other options)")


def _intact(folder: Path) -> bool:
    """Whether every file of the cache in ``folder`` matches its checksum (else extract repairs it)."""
    from ctx2static.cache import Cache

    try:
        Cache.open(folder).verify_for(["attention"])
    except UserError as exc:
        log.warning("repair extract: %s", exc)
        return False
    return True


@speaking_to(Style.KEY)
def run_study(study: Study, out: str | Path) -> Comparison:
    """Run every step of ``study`` into ``out`` that is not up to date; write results.md and report.md.

    Every output is scored twice: on the items it covers, and on the items every output covers
    (the fair comparison, the report's main table). Outputs are in the study's order. The folder
    is locked while the study runs: a second run into it is a one-line error naming the first.
    SIGTERM stops it as Ctrl-C does (a ``KeyboardInterrupt``, temporaries removed).
    """
    check_engines(study)
    layout = StudyLayout(Path(out))
    check_teachers(study, layout)
    runner = StudyRunner(study, layout)
    runner.check_extracts()
    with sigterm_as_interrupt(), folder_lock(layout.root, "study"):
        return _run(study, runner)


def check_engines(study: Study) -> None:
    """Refuse a teacher whose engine is not installed (Ray), before any file is written or teacher loads."""
    from ctx2static.pipeline.config import Engine

    for name, t in study.teachers.items():
        if t.engine.engine is not Engine.RAY:
            continue
        try:
            import ray  # noqa: F401  (the engine imports it anyway, once the teacher has loaded)
        except ImportError:
            raise InputError(
                study.path,
                f"{study.path}: teacher {name} runs on engine ray, and Ray is not installed: "
                "pip install 'ctx2static[scale]', or drop engine = \"ray\" to run it here",
            ) from None


def check_teachers(study: Study, layout: StudyLayout) -> None:
    """Read the config of each teacher whose cache is to be made, before any corpus is read.

    Its name, and the options its config decides (its layers, ``pca``), are refused here.

    The text students train first, so a misspelt model would otherwise fail minutes into the run,
    after the corpus was read; its config is enough to refuse it (no weights load). A complete cache
    needs no teacher, nor does a core install that only runs students (its missing caches fail in
    :meth:`StudyRunner.ensure_cache`, naming the extra).
    """
    from ctx2static.cache.reader import read_manifest
    from ctx2static.pipeline.extract import check_teacher_options

    if teacher_stage_missing():
        return
    for name, t in study.teachers.items():
        folder = layout.cache(name)
        manifest = read_manifest(folder) if folder.is_dir() else None
        if manifest and manifest.get("complete"):
            continue
        try:
            check_teacher_options(t.model, t.teacher, t.extract)
        except TeacherUnavailableError as exc:  # said as the study file writes it: model = "..."
            said = str(exc).replace(spell("teacher", t.model), spell("model", t.model), 1)
            raise TeacherUnavailableError(t.model, f"{study.path}: teachers.{name}: {said}") from None
        except OptionError as exc:  # a layer or pca its config rules out, named where the file sets it
            raise OptionError(f"{study.path}: teachers.{name}: {exc}", *exc.options) from None


def run_study_file(study: str | os.PathLike | None = None, out: str | os.PathLike | None = None) -> str:
    """Run the study file ``study`` (without one, the bundled default study) as ``ctx2static run`` does.

    ``out`` (default ``runs/<study file name>``) is checked writable before any step. Returns the
    console's text: the study's verdict, where the vectors and the report are, the disk used; the
    tables (a row per benchmark, a column per output) go to the debug log (``-v``) and to the report.
    """
    from ctx2static.eval.results import format_text
    from ctx2static.eval.suite import notes
    from ctx2static.resources import DEFAULT_STUDY
    from ctx2static.study.loader import load_study
    from ctx2static.study.report import start_outputs, summary_lines, where_lines

    path = Path(study) if study else DEFAULT_STUDY
    spec = load_study(path)
    check_engines(spec)
    folder = Path(out) if out else Path("runs") / path.stem
    check_writable(folder, inside=True, inputs=spec.inputs)
    results = run_study(spec, folder)
    table = notes(spec.eval.analogy_config, common=True, families=spec.eval.families)
    log.debug("%s", format_text(results.common, table, results.own).rstrip())
    layout = StudyLayout(folder)
    lines = [*summary_lines(results.common, start_outputs(spec), layout), *where_lines(layout)]
    verdict = [line.replace("**", "").replace("`", "") for line in lines if line]
    return "\n".join([*verdict, f"- report, tables and figures: {layout.report}"])


def _run(study: Study, runner: StudyRunner) -> Comparison:
    from ctx2static.eval.results import write_markdown
    from ctx2static.eval.suite import notes
    from ctx2static.study.report import write_report  # matplotlib loads only here

    layout = runner.layout
    with atomic_write(layout.study_toml, "w", encoding="utf-8") as fh:
        fh.write(study.path.read_text(encoding="utf-8"))
    for s in study.students:
        runner.fit(s)
    for ref in study.references:
        runner.reference(ref)
    for r in study.retrofits:
        runner.retrofit(r)
    for c in study.combines:
        runner.combine(c)
    results = compare(
        study.outputs,
        runner.evaluate,
        lambda name: Vectors.load(layout.vectors(name), mmap=True),
        runner.benchmarks,
        study.eval.analogy_config,
    )
    lines = notes(study.eval.analogy_config, common=True, families=study.eval.families)
    write_markdown(layout.results, results.common, lines, results.own)
    write_report(study, layout, results)
    log.info("report: %s", layout.report)
    return results
