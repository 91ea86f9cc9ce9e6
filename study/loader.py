"""Reading a study's TOML file: every mistake is a one-line error naming the file and the key.

Keys of ``[corpus]``, ``[teachers.NAME]``, ``[students.NAME].options``, ``[[retrofit]]``,
``[combine.NAME]``, ``[eval]`` and ``[report]`` are the fields of the stage configs, checked by the
same code as the CLI's options; ``[references.NAME]`` names vectors made elsewhere
(``vectors = "path"``); ``[combine.NAME]`` names the outputs it combines (``inputs = [...]``). A
student whose teacher does not extract a signal it needs is refused here, before any teacher runs.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ctx2static.cache.layout import shard_signals
from ctx2static.errors import InputError, Style, UserError, did_you_mean, speaking_to
from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.families import (
    FAMILIES,
    INTRINSIC,
    Family,
    file_families,
    member,
    task_families,
    tasks_and_files,
    with_named_tasks,
)
from ctx2static.fileio.outputs import check_names
from ctx2static.options import Options, configure, field_names
from ctx2static.pipeline.config import EngineConfig, ExtractConfig, TeacherConfig
from ctx2static.retrofit.config import RetrofitConfig
from ctx2static.retrofit.lexicon import resolve_lexicon
from ctx2static.students.registry import (
    Source,
    check_signals,
    load_student,
    spec,
    student_config,
)
from ctx2static.study.layout import StudyLayout
from ctx2static.study.schema import (
    CombineRun,
    CorpusSpec,
    EvalSpec,
    Reference,
    ReportSpec,
    RetrofitRun,
    StudentRun,
    Study,
    TeacherSpec,
)
from ctx2static.teachers import BY_NAME
from ctx2static.text.corpus import CorpusConfig
from ctx2static.text.vocab import VocabConfig
from ctx2static.transforms.combine import CombineConfig, check_count

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

C = TypeVar("C", bound=Options)
_NAME = re.compile(r"[A-Za-z0-9_+-]+")


@contextlib.contextmanager
def _at(path: Path, where: str) -> Iterator[None]:
    """Prefix a :class:`UserError` raised inside with the file and the key."""
    try:
        yield
    except UserError as exc:
        raise InputError(path, f"{path}: {where}: {exc}") from None


def _table(path: Path, data: Any, where: str, allowed: Sequence[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InputError(path, f"{path}: {where} must be a table")
    unknown = [k for k in data if k not in allowed]
    if unknown:
        key = f"{where}.{unknown[0]}" if where else unknown[0]
        raise InputError(
            path,
            f"{path}: {key}: unknown key{did_you_mean(unknown[0], allowed)}; allowed: {', '.join(allowed)}",
        )
    return data


def _typed(path: Path, value: Any, where: str, kind: type) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InputError(path, f"{path}: {where} must be {kind.__name__}, got {value!r}")
    return value


def _strings(path: Path, value: Any, where: str) -> tuple[str, ...]:
    items = _typed(path, value, where, list)
    return tuple(_typed(path, v, f"{where}[{i}]", str) for i, v in enumerate(items))


def _files(path: Path, value: Any, where: str, folders: bool = False) -> tuple[Path, ...]:
    out = []
    for i, name in enumerate(_strings(path, value, where)):
        p = (path.parent / name).resolve()
        if not (p.exists() if folders else p.is_file()):
            raise UserError(f"{path}: {where}[{i}]: {name}: no such file" + " or folder" * folders)
        out.append(p)
    return tuple(out)


def _config(path: Path, cls: type[C], table: Mapping[str, Any], where: str) -> C:
    """The fields of ``cls`` found in ``table``, parsed and checked as the CLI's options are."""
    names = field_names(cls)
    with _at(path, where):
        return configure(cls, {k: v for k, v in table.items() if k in names}, what=where)


@speaking_to(Style.KEY)
def load_study(path: str | Path) -> Study:
    """Read and check a study file; every mistake is a one-line error naming the file and the key."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, f"{path}: no such study file")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(path, f"{path}: not valid TOML ({exc})") from None
    except RecursionError:  # tomllib parses nested arrays and tables by recursion
        raise InputError(
            path,
            f"{path}: not a study file: its arrays or tables nest deeper than Python can read; a study "
            "nests a few levels",
        ) from None
    top = _table(
        path,
        data,
        "",
        ("corpus", "teachers", "students", "references", "retrofit", "combine", "eval", "report"),
    )
    if "corpus" not in top:
        raise InputError(path, f"{path}: missing [corpus] table with files = [...]")
    if not top.get("students"):
        raise InputError(path, f"{path}: no [students.NAME] table; add at least one student")
    corpus = _corpus(path, top["corpus"])
    teachers = {
        name: _teacher(path, name, t)
        for name, t in _typed(path, top.get("teachers", {}), "teachers", dict).items()
    }
    students = tuple(
        _student(path, name, s, teachers)
        for name, s in _typed(path, top["students"], "students", dict).items()
    )
    references = tuple(
        _reference(path, name, r)
        for name, r in _typed(path, top.get("references", {}), "references", dict).items()
    )
    names = [s.name for s in students]
    retrofits = tuple(
        _retrofit(path, i, r, names)
        for i, r in enumerate(_typed(path, top.get("retrofit", []), "retrofit", list))
    )
    made = [*names, *(r.name for r in references), *(r.name for r in retrofits)]
    combines = tuple(
        _combine(path, name, c, made)
        for name, c in _typed(path, top.get("combine", {}), "combine", dict).items()
    )
    outputs = [*made, *(c.name for c in combines)]
    for name in [*teachers, *outputs]:  # they name folders in the output
        if not _NAME.fullmatch(name):
            raise InputError(path, f"{path}: {name!r}: a name may hold only letters, digits, _, + and -")
    _check_output_names(path, teachers, outputs)
    dupes = sorted({n for n in outputs if outputs.count(n) > 1})
    if dupes:
        raise InputError(
            path, f"{path}: two outputs are named {dupes[0]!r}; rename one (a retrofit: name = ...)"
        )
    for s in students:
        if s.baseline is not None and s.baseline not in outputs:
            raise InputError(path, f"{path}: students.{s.name}.baseline: no output named {s.baseline!r}")
    report = _config(
        path, ReportSpec, _table(path, top.get("report", {}), "report", field_names(ReportSpec)), "report"
    )
    evals = _eval(path, top.get("eval", {}))
    return Study(path.resolve(), corpus, teachers, students, retrofits, evals, report, references, combines)


def _check_output_names(path: Path, teachers: Iterable[str], outputs: Iterable[str]) -> None:
    """Refuse a name whose files in the output folder (or their temporary names) the filesystem cannot hold.

    Checked when the study loads, so a long name fails before any teacher or student runs.
    """
    layout = StudyLayout(Path())
    made = {name: [layout.cache(name), layout.cache_record(name)] for name in teachers}
    for name in outputs:
        made[name] = [layout.vectors(name), layout.scores(name), layout.scores(name, common=True)]
    for name, paths in made.items():
        with _at(path, f"the name {name[:20]}{'...' * (len(name) > 20)}"):
            for written in paths:
                check_names(written)


def _corpus(path: Path, data: Any) -> CorpusSpec:
    keys = ["files", *field_names(CorpusConfig), *field_names(VocabConfig)]
    t = _table(path, data, "corpus", keys)
    if "files" not in t:
        raise InputError(
            path, f'{path}: corpus.files: missing; list the corpus files, e.g. files = ["corpus.txt"]'
        )
    files = _files(path, t["files"], "corpus.files", folders=True)
    if not files:
        raise InputError(path, f"{path}: corpus.files: empty; list at least one corpus file")
    return CorpusSpec(
        files, _config(path, CorpusConfig, t, "corpus"), _config(path, VocabConfig, t, "corpus")
    )


def _teacher(path: Path, name: str, data: Any) -> TeacherSpec:
    where = f"teachers.{name}"
    configs = (TeacherConfig, ExtractConfig, EngineConfig)
    t = _table(path, data, where, ["model", *(f for c in configs for f in field_names(c))])
    model = _model(path, _typed(path, t.get("model", name), f"{where}.model", str), f"{where}.model")
    return TeacherSpec(
        name,
        model,
        _config(path, TeacherConfig, t, where),
        _config(path, ExtractConfig, t, where),
        _config(path, EngineConfig, t, where),
    )


def _model(path: Path, model: str, where: str) -> str:
    """A short name or hub id as written; a folder found against the study file's folder, as every path."""
    if model in BY_NAME:
        return model
    local = path.parent / Path(model).expanduser()  # an absolute path stays itself
    if os.path.isdir(local):  # False for a name too long to be a folder: a hub id, checked later
        return str(local.resolve())
    if model.startswith((".", "~", "/")):
        raise InputError(
            path, f"{path}: {where}: {model}: no such folder (relative to the study file's folder)"
        )
    return model  # a hub id


def _student(path: Path, name: str, data: Any, teachers: Mapping[str, TeacherSpec]) -> StudentRun:
    where = f"students.{name}"
    t = _table(path, data, where, ["student", "teacher", "options", "baseline"])
    student = _typed(path, t.get("student", name), f"{where}.student", str)
    with _at(path, f"{where}.student"):
        source = spec(student).source
    teacher = t.get("teacher")
    if source is Source.CACHE:
        if teacher is None:
            raise InputError(path, f"{path}: {where}.teacher: missing; {student} trains from a teacher cache")
        if teacher not in teachers:
            raise InputError(path, f"{path}: {where}.teacher: no [teachers.{teacher}] table in the study")
    elif teacher is not None:
        raise InputError(
            path, f"{path}: {where}.teacher: {student} trains from the corpus text; remove teacher"
        )
    options = dict(_typed(path, t.get("options", {}), f"{where}.options", dict))
    if "compute_loss" in field_names(load_student(student).config):  # the report's training curves
        options = {"compute_loss": True, **options}
    with _at(path, f"{where}.options"):
        config = student_config(student, options)
    if teacher is not None:
        _check_signals(path, where, student, config, teachers[teacher])
    baseline = t.get("baseline")
    if baseline is not None:
        _typed(path, baseline, f"{where}.baseline", str)
    return StudentRun(name, student, config, teacher, baseline)


def _check_signals(path: Path, where: str, student: str, config: Options, teacher: TeacherSpec) -> None:
    """Refuse a student whose teacher does not extract a signal it needs (before any extraction)."""
    available = shard_signals(teacher.extract.to_dict())
    fix = f"set {{}} in [teachers.{teacher.name}]"
    check_signals(student, config, available, f"{path}: {where}", fix, teacher.extract.tables_only)


def _reference(path: Path, name: str, data: Any) -> Reference:
    where = f"references.{name}"
    t = _table(path, data, where, ["vectors"])
    if "vectors" not in t:
        raise InputError(
            path, f'{path}: {where}.vectors: missing; vectors = "peer.bin" (relative to the study)'
        )
    given = _typed(path, t.get("vectors"), f"{where}.vectors", str)
    vectors = (path.parent / given).resolve()
    if not vectors.exists():
        raise InputError(
            path, f"{path}: {where}.vectors: {given}: no such vectors file or folder; write it first"
        )
    return Reference(name, vectors)


def _lexicons(path: Path, t: dict[str, Any], key: str, where: str, default: Sequence[str]) -> tuple[str, ...]:
    """Lexicon names of ``key``: bundled names or files relative to the study, checked to exist."""
    resolved = []
    for lex in _strings(path, t.get(key, list(default)), f"{where}.{key}"):
        local = path.parent / lex
        resolved.append(str(local.resolve()) if local.is_file() else lex)
    with _at(path, f"{where}.{key}"):
        for lex in resolved:
            resolve_lexicon(lex)
    return tuple(resolved)


def _retrofit(path: Path, i: int, data: Any, students: Sequence[str]) -> RetrofitRun:
    where = f"retrofit[{i}]"
    t = _table(path, data, where, ["name", "vectors", "lexicons", "antonyms", *field_names(RetrofitConfig)])
    vectors = _typed(path, t.get("vectors"), f"{where}.vectors", str)
    if vectors not in students:
        raise InputError(path, f"{path}: {where}.vectors: no student named {vectors!r} in the study")
    lexicons = _lexicons(path, t, "lexicons", where, ["wordnet"])
    antonyms = _lexicons(path, t, "antonyms", where, [])
    config = _config(path, RetrofitConfig, t, where)
    with _at(path, f"{where}.antonyms"):
        config.check_antonyms(antonyms)
    default = f"{vectors}+{'+'.join(Path(x).name.split('.')[0] for x in lexicons + antonyms)}"
    name = _typed(path, t.get("name", default), f"{where}.name", str)
    return RetrofitRun(name, vectors, lexicons, config, antonyms)


def _combine(path: Path, name: str, data: Any, outputs: Sequence[str]) -> CombineRun:
    """A ``[combine.NAME]`` table: the outputs it combines (students, references, retrofits), its options."""
    where = f"combine.{name}"
    t = _table(path, data, where, ["inputs", *field_names(CombineConfig)])
    if "inputs" not in t:
        raise InputError(
            path, f'{path}: {where}.inputs: missing; name the outputs to combine, e.g. inputs = ["a", "b"]'
        )
    inputs = _strings(path, t["inputs"], f"{where}.inputs")
    for i, given in enumerate(inputs):
        if given not in outputs:
            raise InputError(
                path,
                f"{path}: {where}.inputs[{i}]: no student, reference or retrofit named {given!r}"
                f"{did_you_mean(given, outputs)} in the study",
            )
        if given in inputs[:i]:
            raise InputError(
                path, f"{path}: {where}.inputs[{i}]: {given!r} is listed twice; combine different outputs"
            )
    config = _config(path, CombineConfig, t, where)
    with _at(path, where):
        check_count(inputs, config)
    return CombineRun(name, inputs, config)


def _eval(path: Path, data: Any) -> EvalSpec:
    """The ``[eval]`` table: ``families``, a key per family split into tasks, a key per family of files."""
    tasked, files = task_families(), file_families()
    t = _table(path, data, "eval", ["families", *tasked, *files, *field_names(AnalogyConfig)])
    families = _strings(path, t.get("families", [f.value for f in INTRINSIC]), "eval.families")
    with _at(path, "eval.families"):
        picked = tuple(_family(f) for f in families)
    extra = {name: _files(path, t.get(name, []), f"eval.{name}") for name in files}
    named: dict[str, tuple[str, ...]] = {}
    for name in tasked:
        if name in t:
            named[name], own = _tasks(path, name, t[name])
            if own:
                extra[name] = own
    picked, chosen = with_named_tasks(picked, named)  # naming tasks asks for their family
    return EvalSpec(picked, chosen, extra, _config(path, AnalogyConfig, t, "eval"))


def _family(name: str) -> Family | str:
    if name not in FAMILIES:
        raise UserError(f"{name!r} is not a benchmark family; choose from {', '.join(FAMILIES)}")
    return member(name)


def _tasks(path: Path, name: str, value: Any) -> tuple[tuple[str, ...], tuple[Path, ...]]:
    """The tasks of family ``name`` under its key, and the user's files among them (as ``eval --NAME``)."""
    with _at(path, f"eval.{name}"):
        tasks, own = tasks_and_files(name, _strings(path, value, f"eval.{name}"), base=path.parent)
    return tasks, tuple(p.resolve() for p in own)
