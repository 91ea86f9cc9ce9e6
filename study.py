"""A study: one TOML file naming the corpus, teachers, students, retrofitting, evaluation and report.

:func:`run_study` runs extract -> fit-student (each) -> retrofit -> eval -> report into one folder
and skips every step whose output exists and was made from the same configuration. Each output
records a hash of its step's configuration and of everything upstream of it, so changing one
student's option redoes that student and what depends on it, and a rerun after a crash (or after
adding a student) costs only the missing work. Layout of the output folder::

    study.toml                  the study as given
    caches/<teacher>/           teacher cache (extract; resumes after a crash)
    caches/<teacher>.json       its configuration hash and timing
    vectors/<name>/             every student and retrofit (native vectors folder; meta.json holds
                                the step's hash, seconds, config and loss per epoch)
    eval/<name>.json            the scores of one vectors folder and the hash they belong to
    results.md, report.md, *.png
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ctx2static.errors import UserError
from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.benchmarks import Family
from ctx2static.eval.results import Score
from ctx2static.fileio import atomic_write
from ctx2static.pipeline.corpus import CorpusConfig
from ctx2static.pipeline.extract import PRECISIONS, ExtractConfig
from ctx2static.retrofit.config import RetrofitConfig
from ctx2static.students.registry import STUDENTS, Source, configure, load_student

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

Echo = Callable[[str], None]

_NAME = re.compile(r"[A-Za-z0-9_+-]+")

PLAIN_COUNTERPART = {
    "bert-sg": "sgns",
    "ctx2vec": "sgns",
    "ase": "sgns",
    "token": "sgns",
    "word": "sgns",
    "x2static": "cbow",
    "semglove": "glove",
}
"""Default baseline of each distilled student in the report's deltas table (a study may override)."""


@dataclass(frozen=True)
class CorpusSpec:
    """The text every step reads (``files`` resolved against the TOML file's folder)."""

    files: tuple[Path, ...]
    text: CorpusConfig = field(default_factory=CorpusConfig)
    min_count: int = 5
    max_vocab: int = 0  # 0 = every word with min_count


@dataclass(frozen=True)
class TeacherSpec:
    """One teacher and what extract caches from it."""

    name: str
    model: str  # minilm, smollm2, bert-base, ..., a folder or a hub id
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    device: str = "cpu"
    threads: int = 0  # torch CPU threads (0 = torch's default)
    layer: int = -1  # hidden layer read (-1 = last; see Teacher.load)
    precision: str = "auto"  # forward dtype (see Teacher.load)


@dataclass(frozen=True)
class StudentRun:
    """One student to train; ``name`` names its output, ``teacher`` is set for cache students."""

    name: str
    student: str
    teacher: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    baseline: str | None = None  # the plain vectors its deltas are taken against


@dataclass(frozen=True)
class RetrofitRun:
    """Retrofit the vectors named ``vectors`` to ``lexicons``; the output is ``name``."""

    name: str
    vectors: str
    lexicons: tuple[str, ...]
    config: RetrofitConfig


@dataclass(frozen=True)
class EvalSpec:
    """Which benchmarks every vectors output is scored on (bundled families plus extra files)."""

    families: tuple[Family, ...] = tuple(Family)
    similarity: tuple[Path, ...] = ()
    analogy: tuple[Path, ...] = ()
    categorization: tuple[Path, ...] = ()
    top_n: int = AnalogyConfig.top_n


@dataclass(frozen=True)
class ReportSpec:
    """What the report shows besides the tables (defaults: the seeds' Table 5 words)."""

    words: tuple[str, ...] = ("light", "while", "bank")
    neighbours: int = 8
    pairs: str = "family"  # section of the Google analogy set whose word pairs are plotted
    max_pairs: int = 12


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

    @property
    def outputs(self) -> list[str]:
        """Names of every vectors output, students first, in the file's order."""
        return [s.name for s in self.students] + [r.name for r in self.retrofits]

    def baseline(self, name: str) -> str | None:
        """The vectors ``name`` is compared with: a retrofit's input, a student's plain counterpart."""
        for r in self.retrofits:
            if r.name == name:
                return r.vectors
        run = next(s for s in self.students if s.name == name)
        if run.baseline is not None:
            return run.baseline
        plain = PLAIN_COUNTERPART.get(run.student)
        return next((s.name for s in self.students if s.student == plain), None)


# ---------------------------------------------------------------------------------- reading the TOML
@contextlib.contextmanager
def _at(path: Path, where: str) -> Iterator[None]:
    """Prefix a :class:`UserError` raised inside with the file and the key."""
    try:
        yield
    except UserError as exc:
        raise UserError(f"{path}: {where}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise UserError(f"{path}: {where}: {exc}") from None


def _table(path: Path, data: Any, where: str, allowed: Sequence[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise UserError(f"{path}: {where} must be a table")
    unknown = [k for k in data if k not in allowed]
    if unknown:
        key = f"{where}.{unknown[0]}" if where else unknown[0]
        raise UserError(f"{path}: {key}: unknown key; allowed: {', '.join(allowed)}")
    return data


def _typed(path: Path, value: Any, where: str, kind: type) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise UserError(f"{path}: {where} must be {kind.__name__}, got {value!r}")
    return value


def _choice(path: Path, value: Any, where: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise UserError(f"{path}: {where} must be one of {', '.join(choices)}, got {value!r}")
    return value


def _strings(path: Path, value: Any, where: str) -> tuple[str, ...]:
    items = _typed(path, value, where, list)
    return tuple(_typed(path, v, f"{where}[{i}]", str) for i, v in enumerate(items))


def _files(path: Path, value: Any, where: str) -> tuple[Path, ...]:
    out = []
    for i, name in enumerate(_strings(path, value, where)):
        p = (path.parent / name).resolve()
        if not p.is_file():
            raise UserError(f"{path}: {where}[{i}]: {name}: no such file")
        out.append(p)
    return tuple(out)


def _options(path: Path, cls: type, data: Mapping[str, Any], where: str) -> Any:
    with _at(path, where):
        return configure(cls, dict(data))


def load_study(path: str | Path) -> Study:
    """Read and check a study file; every mistake is a one-line error naming the file and the key."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such study file")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not valid TOML ({exc})") from None
    top = _table(path, data, "", ("corpus", "teachers", "students", "retrofit", "eval", "report"))
    if "corpus" not in top:
        raise UserError(f"{path}: missing [corpus] table with files = [...]")
    if not top.get("students"):
        raise UserError(f"{path}: no [students.NAME] table; add at least one student")
    corpus = _corpus(path, top["corpus"])
    teachers = {
        name: _teacher(path, name, t)
        for name, t in _typed(path, top.get("teachers", {}), "teachers", dict).items()
    }
    students = tuple(
        _student(path, name, s, teachers)
        for name, s in _typed(path, top["students"], "students", dict).items()
    )
    names = [s.name for s in students]
    retrofits = tuple(
        _retrofit(path, i, r, names)
        for i, r in enumerate(_typed(path, top.get("retrofit", []), "retrofit", list))
    )
    outputs = names + [r.name for r in retrofits]
    for name in [*teachers, *outputs]:  # they name folders in the output
        if not _NAME.fullmatch(name):
            raise UserError(f"{path}: {name!r}: a name may hold only letters, digits, _, + and -")
    dupes = sorted({n for n in outputs if outputs.count(n) > 1})
    if dupes:
        raise UserError(f"{path}: two outputs are named {dupes[0]!r}; give the retrofit a name = ...")
    for s in students:
        if s.baseline is not None and s.baseline not in outputs:
            raise UserError(f"{path}: students.{s.name}.baseline: no output named {s.baseline!r}")
    return Study(
        path.resolve(),
        corpus,
        teachers,
        students,
        retrofits,
        _eval(path, top.get("eval", {})),
        _report(path, top.get("report", {})),
    )


def _corpus(path: Path, data: Any) -> CorpusSpec:
    text_keys = [f.name for f in dataclasses.fields(CorpusConfig)]
    t = _table(path, data, "corpus", ["files", "min_count", "max_vocab", *text_keys])
    if "files" not in t:
        raise UserError(f'{path}: corpus.files: missing; list the corpus files, e.g. files = ["corpus.txt"]')
    files = _files(path, t["files"], "corpus.files")
    if not files:
        raise UserError(f"{path}: corpus.files: empty; list at least one corpus file")
    text = _options(path, CorpusConfig, {k: t[k] for k in text_keys if k in t}, "corpus")
    return CorpusSpec(
        files,
        text,
        _typed(path, t.get("min_count", 5), "corpus.min_count", int),
        _typed(path, t.get("max_vocab", 0), "corpus.max_vocab", int),
    )


def _teacher(path: Path, name: str, data: Any) -> TeacherSpec:
    where = f"teachers.{name}"
    extract_keys = [f.name for f in dataclasses.fields(ExtractConfig)]
    t = _table(path, data, where, ["model", "device", "threads", "layer", "precision", *extract_keys])
    model = _typed(path, t.get("model", name), f"{where}.model", str)
    cfg = _options(path, ExtractConfig, {k: t[k] for k in extract_keys if k in t}, where)
    return TeacherSpec(
        name,
        model,
        cfg,
        _typed(path, t.get("device", "cpu"), f"{where}.device", str),
        _typed(path, t.get("threads", 0), f"{where}.threads", int),
        _typed(path, t.get("layer", -1), f"{where}.layer", int),
        _choice(path, t.get("precision", "auto"), f"{where}.precision", PRECISIONS),
    )


def _student(path: Path, name: str, data: Any, teachers: Mapping[str, TeacherSpec]) -> StudentRun:
    where = f"students.{name}"
    t = _table(path, data, where, ["student", "teacher", "options", "baseline"])
    student = _typed(path, t.get("student", name), f"{where}.student", str)
    if student not in STUDENTS:
        raise UserError(
            f"{path}: {where}.student: unknown student {student!r}; choose one of: {', '.join(STUDENTS)}"
        )
    spec = STUDENTS[student]
    teacher = t.get("teacher")
    if spec.source is Source.CACHE:
        if teacher is None:
            raise UserError(f"{path}: {where}.teacher: missing; {student} trains from a teacher cache")
        if teacher not in teachers:
            raise UserError(f"{path}: {where}.teacher: no [teachers.{teacher}] table in the study")
    elif teacher is not None:
        raise UserError(f"{path}: {where}.teacher: {student} trains from the corpus text; remove teacher")
    options = dict(_typed(path, t.get("options", {}), f"{where}.options", dict))
    module = load_student(student)
    fields = {f.name for f in dataclasses.fields(module.Config)}
    if "compute_loss" in fields:  # the report's training curves need the loss (about 15% slower)
        options = {"compute_loss": True, **options}
    _options(path, module.Config, {**options, **dict(spec.presets)}, f"{where}.options")
    baseline = t.get("baseline")
    if baseline is not None:
        _typed(path, baseline, f"{where}.baseline", str)
    return StudentRun(name, student, teacher, options, baseline)


def _retrofit(path: Path, i: int, data: Any, students: Sequence[str]) -> RetrofitRun:
    where = f"retrofit[{i}]"
    keys = [f.name for f in dataclasses.fields(RetrofitConfig)]
    t = _table(path, data, where, ["name", "vectors", "lexicons", *keys])
    vectors = _typed(path, t.get("vectors"), f"{where}.vectors", str)
    if vectors not in students:
        raise UserError(f"{path}: {where}.vectors: no student named {vectors!r} in the study")
    lexicons = _strings(path, t.get("lexicons", ["wordnet"]), f"{where}.lexicons")
    resolved = []
    for lex in lexicons:  # a bundled name (wordnet) or a file relative to the study
        local = path.parent / lex
        resolved.append(str(local.resolve()) if local.is_file() else lex)
    with _at(path, f"{where}.lexicons"):
        from ctx2static.retrofit.lexicon import resolve_lexicon

        for lex in resolved:
            resolve_lexicon(lex)
    config = _options(path, RetrofitConfig, {k: t[k] for k in keys if k in t}, where)
    default = f"{vectors}+{'+'.join(Path(x).name.split('.')[0] for x in lexicons)}"
    name = _typed(path, t.get("name", default), f"{where}.name", str)
    return RetrofitRun(name, vectors, tuple(resolved), config)


def _eval(path: Path, data: Any) -> EvalSpec:
    t = _table(path, data, "eval", ["families", "similarity", "analogy", "categorization", "top_n"])
    families = _strings(path, t.get("families", [f.value for f in Family]), "eval.families")
    with _at(path, "eval.families"):
        picked = tuple(Family(f) for f in families)
    top_n = _typed(path, t.get("top_n", AnalogyConfig.top_n), "eval.top_n", int)
    if top_n < 1:
        raise UserError(f"{path}: eval.top_n must be at least 1, got {top_n}")
    extra = {k: _files(path, t.get(k, []), f"eval.{k}") for k in ("similarity", "analogy", "categorization")}
    return EvalSpec(picked, top_n=top_n, **extra)


def _report(path: Path, data: Any) -> ReportSpec:
    t = _table(path, data, "report", ["words", "neighbours", "pairs", "max_pairs"])
    d = ReportSpec()
    return ReportSpec(
        _strings(path, t.get("words", list(d.words)), "report.words"),
        _typed(path, t.get("neighbours", d.neighbours), "report.neighbours", int),
        _typed(path, t.get("pairs", d.pairs), "report.pairs", str),
        _typed(path, t.get("max_pairs", d.max_pairs), "report.max_pairs", int),
    )


# ---------------------------------------------------------------------------------- running it
def vectors_dir(out: Path, name: str) -> Path:
    """Where output ``name`` (a student or a retrofit) is written."""
    return out / "vectors" / name


def cache_dir(out: Path, teacher: str) -> Path:
    """Where the cache of ``teacher`` is written."""
    return out / "caches" / teacher


def cache_ledger(out: Path, teacher: str) -> Path:
    """The JSON beside a cache: its configuration hash, extract seconds and teacher tokens/s."""
    return out / "caches" / f"{teacher}.json"


def eval_file(out: Path, name: str) -> Path:
    """The scores of output ``name``."""
    return out / "eval" / f"{name}.json"


def digest(obj: Any) -> str:
    """Short sha256 of a JSON-able object (keys sorted): the identity of a step's configuration."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; ``{}`` when it is missing or damaged (the step is then redone)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    with atomic_write(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
        fh.write("\n")


@dataclass
class _Run:
    """The state of one ``run_study`` call: the hash of every output made or found so far."""

    study: Study
    out: Path
    echo: Echo
    stamps: dict[str, dict[str, Any]] = field(default_factory=dict)  # output -> meta["study"]
    _ready: set[str] = field(default_factory=set)  # teachers whose cache is complete
    _corpus_key: dict[str, Any] | None = None
    _benchmarks: list | None = None

    @property
    def corpus_key(self) -> dict[str, Any]:
        """The corpus files' content hashes and how they are read (the text students' input)."""
        if self._corpus_key is None:
            from ctx2static.cache.store import sha256_file

            c = self.study.corpus
            self._corpus_key = {
                "files": [[str(p), sha256_file(p)] for p in c.files],
                "text": dataclasses.asdict(c.text),
                "min_count": c.min_count,
                "max_vocab": c.max_vocab,
            }
        return self._corpus_key

    def teacher_hash(self, name: str) -> str:
        """Hash of everything that determines teacher ``name``'s cache."""
        t = self.study.teachers[name]
        extract = dataclasses.asdict(t.extract)
        return digest(
            {
                "corpus": self.corpus_key,
                "model": t.model,
                "layer": t.layer,
                "precision": t.precision,
                "extract": extract,
            }
        )

    def ensure_cache(self, name: str) -> Path:
        """Extract teacher ``name``'s cache unless a complete one of the same configuration exists."""
        from ctx2static.cache.store import read_manifest

        folder, ledger = cache_dir(self.out, name), cache_ledger(self.out, name)
        if name in self._ready:
            return folder
        self._ready.add(name)
        h = self.teacher_hash(name)
        if folder.exists() and read_json(ledger).get("hash") != h:
            self.echo(f"redo extract {name}: its configuration changed; removing {folder}")
            shutil.rmtree(folder)
        manifest = read_manifest(folder) if folder.is_dir() else None
        if manifest is not None and manifest.get("complete"):
            self.echo(f"skip extract {name}: {folder} is complete")
            return folder
        t = self.study.teachers[name]
        self.echo(
            f"run extract {name}: teacher {t.model} -> {folder}" + " (resuming)" * (manifest is not None)
        )
        _write_json(ledger, {"hash": h})
        start = time.perf_counter()
        m = self._extract(t, folder)
        seconds = time.perf_counter() - start
        rate = m.get("run", {}).get("teacher_tokens_per_s", 0.0)
        _write_json(ledger, {"hash": h, "seconds": round(seconds, 2), "teacher_tokens_per_s": round(rate)})
        return folder

    def _extract(self, t: TeacherSpec, folder: Path) -> dict[str, Any]:
        from ctx2static.pipeline.corpus import Corpus
        from ctx2static.pipeline.extract import extract, set_threads
        from ctx2static.pipeline.teacher import Teacher
        from ctx2static.pipeline.vocab import Vocab

        c = self.study.corpus
        set_threads(t.threads)
        corpus = Corpus(list(c.files), c.text)
        teacher = Teacher.load(t.model, device=t.device, layer=t.layer, precision=t.precision)
        # the whole corpus's vocabulary, as the plain baselines: words the teacher does not read in
        # context (max_sentences) keep the teacher's word-alone vectors (students' init=auto)
        vocab = Vocab.build(corpus, c.min_count, c.max_vocab or None)
        self.echo(f"extract {t.name}: vocab {len(vocab):,} words; {t.extract}")
        return extract(corpus, vocab, teacher, folder, t.extract)

    def fresh(self, name: str, h: str, what: str) -> bool:
        """True (and says so) when output ``name`` loads and records hash ``h``; else the step must run."""
        from ctx2static.vectors import Vectors

        path = vectors_dir(self.out, name)
        if not path.exists():
            self.echo(f"run {what}")
            return False
        try:
            meta = Vectors.load(path, mmap=True).meta
        except (UserError, ValueError, OSError):
            meta = {}
        if meta.get("study", {}).get("hash") == h:
            self.echo(f"skip {what}: {path} is up to date")
            self.stamps[name] = meta["study"]
            return True
        self.echo(f"redo {what}: {path} was made from another configuration (or is damaged)")
        return False

    def fit(self, s: StudentRun) -> None:
        """Train student ``s`` unless its vectors are up to date."""
        from ctx2static.pipeline.corpus import Corpus
        from ctx2static.students.registry import fit_cache_student, fit_text_student

        module = load_student(s.student)
        config = configure(module.Config, {**s.options, **dict(STUDENTS[s.student].presets)})
        upstream = self.teacher_hash(s.teacher) if s.teacher else self.corpus_key
        h = digest({"student": s.student, "config": dataclasses.asdict(config), "input": upstream})
        if self.fresh(s.name, h, f"student {s.name} ({s.student})"):
            return
        if s.teacher:
            cache = self.ensure_cache(s.teacher)  # before the clock starts: extract has its own row
            start = time.perf_counter()
            vectors = fit_cache_student(s.student, cache, dict(s.options), echo=self.echo)
        else:
            start = time.perf_counter()
            c = self.study.corpus
            corpus = Corpus(list(c.files), c.text)
            vectors = fit_text_student(
                s.student, corpus, c.min_count, c.max_vocab or None, dict(s.options), echo=self.echo
            )
        self.save(s.name, vectors, h, time.perf_counter() - start)

    def save(self, name: str, vectors: Any, h: str, seconds: float) -> None:
        """Write output ``name`` with its stamp: the step's hash, seconds and when it was written.

        Later steps hash the stamp, so a retrained input (even with the same configuration, after
        its folder was deleted) redoes its retrofits and evaluations.
        """
        written = datetime.now(timezone.utc).isoformat(timespec="microseconds")  # unique per write
        self.stamps[name] = {"hash": h, "seconds": round(seconds, 2), "written": written}
        vectors.meta["study"] = self.stamps[name]
        vectors.save(vectors_dir(self.out, name))

    def retrofit(self, r: RetrofitRun) -> None:
        """Retrofit ``r.vectors`` unless the output is up to date."""
        from ctx2static.retrofit.solver import retrofit_vectors
        from ctx2static.vectors import Vectors

        h = digest({"input": self.stamps[r.vectors], "lexicons": r.lexicons, "config": r.config.to_dict()})
        if self.fresh(r.name, h, f"retrofit {r.name}"):
            return
        start = time.perf_counter()
        result, _ = retrofit_vectors(Vectors.load(vectors_dir(self.out, r.vectors)), r.lexicons, r.config)
        self.save(r.name, result, h, time.perf_counter() - start)

    def evaluate(self, name: str) -> list[Score]:
        """Scores of output ``name``, read back when its eval file matches, else computed."""
        from ctx2static.cache.store import sha256_file
        from ctx2static.eval import evaluate, load_benchmarks
        from ctx2static.vectors import Vectors

        spec = self.study.eval
        extra = {Family.SIMILARITY: spec.similarity, Family.ANALOGY: spec.analogy}
        extra[Family.CATEGORIZATION] = spec.categorization
        key = {
            "families": [f.value for f in spec.families],
            "extra": {f.value: [[str(p), sha256_file(p)] for p in ps] for f, ps in extra.items()},
            "top_n": spec.top_n,
        }
        h = digest({"vectors": self.stamps[name], "eval": key})
        path = eval_file(self.out, name)
        rec = read_json(path)
        if rec.get("hash") == h:
            self.echo(f"skip eval {name}: {path} is up to date")
            return [_score(d) for d in rec["scores"]]
        self.echo(f"run eval {name}")
        if self._benchmarks is None:
            self._benchmarks = load_benchmarks(spec.families, extra, bundled=True)
        start = time.perf_counter()
        scores = evaluate(Vectors.load(vectors_dir(self.out, name)), self._benchmarks, analogy_config(spec))
        seconds = round(time.perf_counter() - start, 2)
        _write_json(path, {"hash": h, "seconds": seconds, "scores": [s.to_json() for s in scores]})
        return scores


def _score(d: Mapping[str, Any]) -> Score:
    return Score(**{**d, "score": float("nan") if d["score"] is None else d["score"]})


def analogy_config(spec: EvalSpec) -> AnalogyConfig:
    """The analogy protocol of a study's evaluation."""
    return AnalogyConfig(top_n=spec.top_n)


def run_study(study: Study, out: str | Path, echo: Echo = print) -> dict[str, list[Score]]:
    """Run every step of ``study`` into ``out`` that is not up to date; write results.md and report.md.

    Returns the scores of every output (students first, then retrofits).
    """
    from ctx2static.eval.results import write_markdown
    from ctx2static.eval.suite import notes
    from ctx2static.report import write_report  # matplotlib loads only here

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / "study.toml", "w", encoding="utf-8") as fh:
        fh.write(study.path.read_text(encoding="utf-8"))
    run = _Run(study, out, echo)
    for s in study.students:
        run.fit(s)
    for r in study.retrofits:
        run.retrofit(r)
    results = {name: run.evaluate(name) for name in study.outputs}
    write_markdown(out / "results.md", results, notes(analogy_config(study.eval)))
    write_report(study, out, results)
    echo(f"report: {out / 'report.md'}")
    return results
