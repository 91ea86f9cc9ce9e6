"""The Python API: one call from a corpus and a teacher to trained vectors, and each stage as a function.

    from ctx2static import distill
    vectors = distill(["corpus.txt.xz"], teacher="minilm", student="x2static")
    vectors.most_similar("bank")

Every keyword option is a field of a config dataclass, with the defaults the command line shows
(``ctx2static extract --help``, ``fit-student --set``): corpus reading (``lowercase``...),
vocabulary (``min_count``...), teacher (``device``, ``threads``...), extract (``vectors``,
``paragraph``, ``max_sentences``...), engine (``engine="ray"``, ``workers``...) and the student's
own options (``epochs``, ``dim``...), typed for editors and type checkers (each stage's and
student's set in :mod:`~ctx2static.api_options`; ``api.pyi``, the stub they read for this module,
gives ``fit`` and ``distill`` a signature per student). ``threads`` sets the teacher's and the
student's. An unknown option or name (a student, a family), or a value of the wrong type
(``max_sentences="10"``: text is parsed only on the command line and in study files), is a
one-line ``OptionError`` naming it.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import itertools
import logging
import os
import reprlib
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from ctx2static.api_options import CombineOptions, ExportOptions, ExtractOptions, RetrofitOptions
from ctx2static.console import StderrLines
from ctx2static.errors import OptionError, Style, UserError, did_you_mean, speaking_to, spell
from ctx2static.eval import AnalogyConfig, Score, load_benchmarks
from ctx2static.fileio.atomic import atomic_write
from ctx2static.fileio.outputs import check_writable, refuse_inputs
from ctx2static.fileio.temps import temp_folder
from ctx2static.interrupts import sigterm_as_interrupt
from ctx2static.options import Options, field_names
from ctx2static.pipeline.config import EngineConfig, ExtractConfig, TeacherConfig
from ctx2static.pipeline.models import need_teacher_stage
from ctx2static.retrofit.config import RetrofitConfig
from ctx2static.text.corpus import Corpus, CorpusConfig
from ctx2static.text.split import Split
from ctx2static.text.vocab import VocabConfig
from ctx2static.vectors import Vectors
from ctx2static.vectors.outputs import vector_files

if sys.version_info >= (3, 11):
    from typing import Unpack
else:
    from typing_extensions import Unpack

P = ParamSpec("P")
R = TypeVar("R")

__all__ = ["Vectors", "combine", "distill", "evaluate", "export", "extract", "fit", "retrofit"]

log = logging.getLogger(__name__)


def _said_on_stderr(func: Callable[P, R]) -> Callable[P, R]:
    """The command line's lines (what is read, the teacher, the summary) for a Python caller too.

    Only while the call runs, and only where the caller's program has set up no logging of its own
    (no handler on the root or the package's logger, no level on the package's): a program that
    configures logging gets the records there instead, once.
    """

    @functools.wraps(func)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        package = logging.getLogger("ctx2static")
        if package.handlers or logging.getLogger().handlers or package.level != logging.NOTSET:
            return func(*args, **kwargs)
        handler = StderrLines()
        package.addHandler(handler)
        package.setLevel(logging.INFO)
        try:
            return func(*args, **kwargs)
        finally:
            package.removeHandler(handler)
            package.setLevel(logging.NOTSET)

    return call


CorpusLike = str | os.PathLike | Iterable[str | os.PathLike]
"""Corpus files or folders, or an iterable of sentences (one string each; "" ends a paragraph)."""

DEFAULT_STUDENT = "x2static"
"""The student ``fit`` and ``distill`` train unless told (the command line's ``fit-student -s`` too)."""

CORPUS_FILE = "corpus.txt"
"""Where sentences given as strings are written: inside the cache folder, so a rerun resumes."""

EXTRACT_CONFIGS: tuple[type[Options], ...] = (
    CorpusConfig,
    VocabConfig,
    TeacherConfig,
    ExtractConfig,
    EngineConfig,
)


def _split(options: Mapping[str, Any], configs: Sequence[type[Options]], rest: bool) -> list[dict[str, Any]]:
    """The options of each config (a name several share goes to each), then, with ``rest``, the others."""
    parts: list[dict[str, Any]] = [{k: v for k, v in options.items() if k in field_names(c)} for c in configs]
    claimed = {k for part in parts for k in part}
    others = {k: v for k, v in options.items() if k not in claimed}
    if not rest:
        _check_keywords(others, {n for c in configs for n in field_names(c)})
    return [*parts, others] if rest else parts


def _check_keywords(options: Iterable[str], known: Iterable[str]) -> None:
    """An unknown keyword is one line listing every keyword the call takes, the closest one first."""
    names = sorted(set(known))
    for key in options:
        if key not in names:
            raise OptionError(
                f"unknown option '{key}'{did_you_mean(key, names)}; the options are: {', '.join(names)}", key
            )


def _check_student_keywords(call: str, options: Iterable[str], known: Iterable[str], student: str) -> None:
    """An unknown keyword to ``distill`` or ``fit`` is one short line: the name meant, or who takes it.

    A keyword some other student takes (``epochs`` to ``ase``) names those students; else the
    closest name of the call's stages (``max_word``: ``max_words``); else where the options are
    listed (the type checker names them too: ``api.pyi``). ``known``: the reading or extract options
    and the student's.
    """
    from ctx2static.students.registry import students_with

    known = set(known)
    for key in options:
        if key in known:
            continue
        takers = students_with(key)
        if takers:
            raise OptionError(
                f"unknown option '{key}' for student '{student}'; the students that take it: "
                + ", ".join(takers),
                key,
            )
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'?" if close else f"help(ctx2static.{call}) lists the options"
        raise OptionError(f"unknown option '{key}' ({hint})", key)


def _wrong(param: str, value: Any, want: str) -> UserError:
    return OptionError(f"{param}={reprlib.repr(value)}: pass {want}, not {type(value).__name__}", param)


def _check(param: str, value: Any, kinds: tuple[type, ...], want: str) -> None:
    """A parameter of the wrong type is a one-line error naming it, never a value read as something else."""
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise _wrong(param, value, want)


def _choice(param: str, name: str, choices: Iterable[str], noun: str, value: object = None) -> None:
    """A name that is none of ``choices`` (a student, a family, a task): one line naming ``param``.

    ``value``: the whole argument, where ``name`` is one of its items (``families=[...]``).
    """
    names = list(choices)
    if name not in names:
        named = "" if value is None else f" '{name}'"
        shown = reprlib.repr(name if value is None else value)
        hint = did_you_mean(name, names)
        raise OptionError(
            f"{param}={shown}: unknown {noun}{named}{hint}; choose one of: {', '.join(names)}", param
        )


def _is_path(name: str) -> bool:
    """Whether ``name`` names a corpus file or folder (a long or odd sentence is simply not one)."""
    try:
        return Path(name).exists()
    except (OSError, ValueError):
        return False


def _check_corpus(corpus: Any) -> None:
    """The corpus's own type, checked before a teacher loads (its items are checked as they are read)."""
    if isinstance(corpus, (bytes, bytearray)) or not isinstance(corpus, (str, os.PathLike, Iterable)):
        raise _wrong("corpus", corpus, "a file, a list of files or an iterable of sentences (str)")


def _corpus(corpus: CorpusLike, folder: Path, config: CorpusConfig) -> Corpus:
    """A :class:`Corpus` of the files given, or of the sentences written to ``folder/corpus.txt``.

    Files given must lie outside ``folder``, which is written. Sentences must be ``str``: a number,
    ``None`` or ``bytes`` would otherwise become the words ``1``, ``none`` or ``b'a``; the first
    other item is a one-line error naming its position.
    """
    if isinstance(corpus, (str, os.PathLike)):
        refuse_inputs(folder, [corpus])
        return Corpus([corpus], config)
    _check_corpus(corpus)
    items = iter(corpus)
    first = next(items, None)
    if first is None:
        raise UserError("the corpus is empty: pass corpus files or an iterable of sentences")
    items = itertools.chain([first], items)
    if isinstance(first, os.PathLike) or (isinstance(first, str) and _is_path(first)):
        files = list(items)
        for i, name in enumerate(files):
            _check(f"corpus[{i}]", name, (str, os.PathLike), "a corpus file like the first item")
        refuse_inputs(folder, files)
        return Corpus(files, config)
    path = folder / CORPUS_FILE
    with atomic_write(path, "w", encoding="utf-8") as fh:
        for i, sentence in enumerate(items):
            if not isinstance(sentence, str):
                raise _wrong(f"corpus[{i}]", sentence, "sentences as str (decode bytes first)")
            fh.write(sentence.rstrip("\n") + "\n")
    if config.split is Split.AUTO:  # strings given one by one are sentences already
        config = dataclasses.replace(config, split=Split.LINES)
    return Corpus([path], config)


def _given_files(corpus: CorpusLike) -> list[str | os.PathLike]:
    """The corpus files named by ``corpus`` when it can be read twice (a path, or a list of paths)."""
    if isinstance(corpus, (str, os.PathLike)):
        return [corpus]
    if isinstance(corpus, (list, tuple)) and all(
        isinstance(c, os.PathLike) or (isinstance(c, str) and _is_path(c)) for c in corpus
    ):
        return list(corpus)
    return []


@_said_on_stderr
@speaking_to(Style.KEYWORD, unless_said=True)
def extract(
    corpus: CorpusLike,
    teacher: str = "minilm",
    out: str | os.PathLike | None = None,
    **options: Unpack[ExtractOptions],
) -> Path:
    """Run ``teacher`` over ``corpus`` into a cache folder (as ``ctx2static extract``); return the folder.

    ``out`` defaults to a new temporary folder (yours to delete); a folder given resumes an
    interrupted run. Options: corpus, vocabulary, teacher, extract and engine fields
    (``engine="ray"``: the teacher runs on Ray workers).

    :param corpus: corpus files or folders (text, JSONL, CSV, Parquet, saved datasets), or an iterable of
        sentences, one string each ("" ends a paragraph)
    :param teacher: a short name (``minilm``, ``mpnet``, ``nomic``...), a model folder or a hub id
    :param out: the cache folder (a new temporary one when None)
    """
    need_teacher_stage("extract")
    from ctx2static.pipeline.extract import check_teacher_options, extract_with, read_vocab
    from ctx2static.text.vocab import Vocab

    teacher, out = _teacher(teacher), _folder("out", out)
    _check_corpus(corpus)
    parts = _split(options, EXTRACT_CONFIGS, False)
    text, vocab_cfg = CorpusConfig(**parts[0]), VocabConfig(**parts[1])
    teacher_cfg, cfg, engine = TeacherConfig(**parts[2]), ExtractConfig(**parts[3]), EngineConfig(**parts[4])
    check_teacher_options(teacher, teacher_cfg, cfg)  # before a folder is made or the corpus opened
    folder = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="ctx2static-cache-"))
    check_writable(folder, inside=True, inputs=_given_files(corpus))  # before the folder and its lock
    folder.mkdir(parents=True, exist_ok=True)

    def inputs() -> tuple[Corpus, Vocab]:
        source = _corpus(corpus, folder, text)
        return source, read_vocab(source, vocab_cfg, cfg)

    extract_with(teacher, teacher_cfg, inputs, folder, cfg, engine)
    return folder


@_said_on_stderr
@speaking_to(Style.KEYWORD, unless_said=True)
@sigterm_as_interrupt()
def fit(
    source: str | os.PathLike | CorpusLike,
    student: str = DEFAULT_STUDENT,
    compose: bool = True,
    **options: Any,
) -> Vectors:
    """Train ``student`` (as ``ctx2static fit-student``) from a cache folder, or a corpus (sgns/cbow/glove).

    Options are the student's (``epochs``, ``dim``...; a text student also takes corpus and
    vocabulary fields). With ``compose``, cache students' vectors carry a composer for unknown words.

    :param source: a cache folder (``extract``'s), or for sgns, cbow and glove a corpus as ``extract`` takes
    :param student: the student's name (``x2static``, ``ase``, ``sgns``...: the Students guide)
    :param compose: give the vectors a composer for words outside the table (cache students)
    """
    from ctx2static.students.registry import (
        STUDENTS,
        Source,
        fit_cache_student,
        fit_text_student,
        load_student,
        spec,
    )

    _check("student", student, (str,), "a student's name")
    _choice("student", student, STUDENTS, "student")
    _check("compose", compose, (bool,), "True or False")
    if spec(student).source is Source.CACHE:
        _check("source", source, (str, os.PathLike), "a cache folder")
        return fit_cache_student(student, source, options, compose)  # type: ignore[arg-type]
    student_fields = field_names(load_student(student).config)
    reading = [*field_names(CorpusConfig), *field_names(VocabConfig)]
    _check_student_keywords("fit", options, [*reading, *student_fields], student)
    text, vocab_cfg, student_options = _split(options, (CorpusConfig, VocabConfig), True)
    with temp_folder("ctx2static-corpus-") as tmp:
        corpus = _corpus(source, tmp, CorpusConfig(**text))
        return fit_text_student(student, corpus, VocabConfig(**vocab_cfg), student_options)


@_said_on_stderr
@speaking_to(Style.KEYWORD, unless_said=True)
@sigterm_as_interrupt()
def distill(
    corpus: CorpusLike,
    teacher: str = "minilm",
    student: str = DEFAULT_STUDENT,
    out: str | os.PathLike | None = None,
    **options: Any,
) -> Vectors:
    """Corpus -> ``teacher`` -> cache -> ``student`` -> vectors, with the command line's defaults.

    ``out`` is the cache folder (kept, and a rerun resumes); without it the cache lives in a
    temporary folder removed at the end, also after an error, Ctrl-C or SIGTERM (which raises
    ``KeyboardInterrupt`` during the call unless the program handles SIGTERM itself). The signals
    the student needs (``vectors``, ``paragraph``) are extracted unless an option turns them off;
    for ``token``, ``word`` and ``embed`` only the per-word tables are (``tables_only``: no pass over
    the sentences) unless an option asks for something the pass makes.
    The vectors carry a composer, so :meth:`Vectors.query` gives any word a vector.

    :param corpus: corpus files or folders (text, JSONL, CSV, Parquet, saved datasets), or an iterable of
        sentences, one string each ("" ends a paragraph)
    :param teacher: a short name (``minilm``, ``mpnet``, ``nomic``...), a model folder or a hub id
    :param student: a cache student's name (``x2static``, ``ase``, ``sentence``...)
    :param out: the cache folder to keep (None: a temporary one, removed at the end)
    """
    from ctx2static.cache.layout import SIGNALS
    from ctx2static.students import registry as reg

    teacher, out = _teacher(teacher), _folder("out", out)
    _check("student", student, (str,), "a student's name")
    _choice("student", student, reg.STUDENTS, "student")
    _check_corpus(corpus)
    if reg.spec(student).source is not reg.Source.CACHE:
        raise OptionError(
            f"student={student!r} trains from text, not a teacher: call fit(corpus, '{student}')", "student"
        )
    student_fields = field_names(reg.load_student(student).config)
    extract_fields = [n for c in EXTRACT_CONFIGS for n in field_names(c)]
    _check_student_keywords("distill", options, [*extract_fields, *student_fields], student)
    *extract_parts, student_options = _split(options, EXTRACT_CONFIGS, True)
    extract_options = {k: v for part in extract_parts for k, v in part.items()}
    if "threads" in options and "threads" in field_names(reg.load_student(student).config):
        student_options["threads"] = options["threads"]
    config = reg.student_config(student, student_options)
    if (
        reg.spec(student).reads is reg.Reads.TABLES
        and not ExtractConfig(**_extract_fields(extract_options)).pass_options()
    ):
        extract_options.setdefault("tables_only", True)  # its tables need no pass over the sentences
    switches = {f.name for f in dataclasses.fields(ExtractConfig) if isinstance(f.default, bool)}
    for signal in reg.needed_signals(student, config):
        option = SIGNALS[signal].option
        if option in switches:  # on or off; a size (--topk K, --attention S) is the user's to choose
            extract_options.setdefault(option, True)
    reg.check_signals(
        student,
        config,
        _signals(extract_options),
        f"distill(student='{student}')",
        "pass {}",
        bool(extract_options.get("tables_only")),
    )
    if out is not None:
        return reg.fit_cache_student(student, extract(corpus, teacher, out, **extract_options), config)
    with temp_folder("ctx2static-cache-") as tmp:
        vectors = reg.fit_cache_student(student, extract(corpus, teacher, tmp, **extract_options), config)
    vectors.meta.pop("cache", None)
    return vectors


def _extract_fields(extract_options: Mapping[str, Any]) -> dict[str, Any]:
    fields = field_names(ExtractConfig)
    return {k: v for k, v in extract_options.items() if k in fields}


def _signals(extract_options: Mapping[str, Any]) -> list[str]:
    from ctx2static.cache.layout import shard_signals

    return shard_signals(dataclasses.asdict(ExtractConfig(**_extract_fields(extract_options))))


@_said_on_stderr
@speaking_to(Style.KEYWORD, unless_said=True)
def retrofit(
    vectors: Vectors | str | os.PathLike,
    lexicons: str | Sequence[str] = "wordnet",
    antonyms: str | Sequence[str] = (),
    **options: Unpack[RetrofitOptions],
) -> Vectors:
    """Retrofit ``vectors`` to synonym lexicons (as ``ctx2static retrofit``; ``wordnet`` is bundled).

    ``antonyms`` (``method="attract-repel"`` only; ``wordnet-antonyms`` is bundled) are pushed apart.
    """
    from ctx2static.retrofit.solver import retrofit_vectors

    lexicons, antonyms = _names("lexicons", lexicons), _names("antonyms", antonyms)
    config = RetrofitConfig(**_split(options, (RetrofitConfig,), False)[0])
    return retrofit_vectors(_vectors(vectors), lexicons, config, antonyms)[0]


@_said_on_stderr
@speaking_to(Style.KEYWORD, unless_said=True)
def combine(vectors: Sequence[Vectors | str | os.PathLike], **options: Unpack[CombineOptions]) -> Vectors:
    """One table from several (as ``ctx2static combine``), holding the words every input holds.

    Options are :class:`~ctx2static.transforms.combine.CombineConfig`'s: ``method`` (``concat``: unit
    rows side by side; ``mean``: each input rotated onto the first, unit rows averaged), ``dim``
    (PCA of the result; 0 keeps all) and ``weights`` (one per input). The metadata names a table
    given as a path by its path, one given as :class:`Vectors` by its place (``vectors[1]``).
    """
    from ctx2static.transforms.combine import CombineConfig, combine_vectors

    if isinstance(vectors, (str, os.PathLike, Vectors)) or not isinstance(vectors, Sequence):
        raise _wrong("vectors", vectors, "a list of Vectors or of vectors files or folders")
    config = CombineConfig(**_split(options, (CombineConfig,), False)[0])
    for i, item in enumerate(vectors):
        _check(f"vectors[{i}]", item, (Vectors, str, os.PathLike), "Vectors, or a vectors file or folder")
    named = [(f"vectors[{i}]" if isinstance(v, Vectors) else os.fspath(v), v) for i, v in enumerate(vectors)]
    return combine_vectors([(name, _vectors(v)) for name, v in named], config)


@_said_on_stderr
@speaking_to(Style.KEYWORD, unless_said=True)
def evaluate(
    vectors: Vectors | str | os.PathLike,
    compose: bool = False,
    families: Sequence[str] = (),
    benchmarks: Mapping[str, Sequence[str | os.PathLike]] | None = None,
    bundled: bool = True,
) -> list[Score]:
    """Scores of ``vectors`` on the benchmarks ``ctx2static eval`` would run with the same choices.

    :param compose: words outside the table get vectors composed from subwords (similarity,
        categorization)
    :param families: the families to run (``similarity``, ``analogy``, ``categorization``,
        ``downstream``, ``sentences``); none named: the first three, as ``eval``
    :param benchmarks: per family, your own files to score as well, or the tasks to run (naming a
        task asks for its family): ``{"similarity": ["pairs.tsv"], "downstream": ["pos"]}``
    :param bundled: score the bundled sets of the families asked for (False: only your files)
    """
    from ctx2static.eval import evaluate as run
    from ctx2static.eval.files import asked_for, load_asked

    _check("compose", compose, (bool,), "True or False")
    _check("bundled", bundled, (bool,), "True or False")
    picked, tasks, extra = asked_for(_families(families), _benchmarks(benchmarks))
    return run(_vectors(vectors), load_asked(picked, tasks, extra, bundled), compose=compose)


@_said_on_stderr
@speaking_to(Style.KEYWORD, unless_said=True)
def export(
    vectors: Vectors | str | os.PathLike,
    fmt: str,
    out: str | os.PathLike,
    score: bool = True,
    add_words: Sequence[str] = (),
    card_sentences: Sequence[str | os.PathLike] = (),
    **options: Unpack[ExportOptions],
) -> Path:
    """Write ``vectors`` in the format ``fmt`` (word2vec, word2vec-bin, model2vec, sentence-transformers).

    The folder formats get a model card; with ``score`` it holds the bundled benchmarks' table
    (a second column scores every word, unknown ones composed, when the vectors have a composer),
    and the rows of ``card_sentences``: sentence files of the user's (``eval --sentences FILE``'s
    forms: an STS pair set, a retrieval set, a labelled set), so the card says what the folder was
    measured on beyond what ships.
    Options are :class:`~ctx2static.export.ExportConfig`'s, as ``ctx2static export``'s flags:
    ``weighting`` (none, sif, zipf), ``sif_a``, ``normalize`` (the pooling a folder encodes with,
    as :meth:`Vectors.encode`), ``quantize`` (float32, float16, int8) and ``dims`` (PCA; 0 keeps all).
    The table evaluated is the one exported (reduced to ``dims``, before quantization). ``add_words``
    gain composed rows where the table lacks them (the evaluation is of the table without them), so
    gensim and Model2Vec, which never compose, know them too.
    """
    from ctx2static.eval import evaluate as run
    from ctx2static.eval.benchmarks import Family
    from ctx2static.eval.downstream.data import LabelledTexts
    from ctx2static.eval.downstream.probes import has_sklearn
    from ctx2static.eval.results import format_markdown
    from ctx2static.eval.sentences import read_sentence_file
    from ctx2static.eval.suite import notes
    from ctx2static.export import (
        Card,
        ExportConfig,
        Format,
        check_output,
        check_pooling,
        export_vectors,
        format_hint,
        missing_words,
        reduced,
    )

    try:
        kind = Format(fmt)
    except ValueError:
        formats = ", ".join(f.value for f in Format)
        raise OptionError(f"fmt={fmt!r}{format_hint(str(fmt))}: choose one of {formats}", "fmt") from None
    _check("score", score, (bool,), "True or False")
    if isinstance(add_words, (str, bytes)) or not isinstance(add_words, Sequence):
        raise _wrong("add_words", add_words, "a list of words")
    for i, word in enumerate(add_words):
        _check(f"add_words[{i}]", word, (str,), "a word")
    if isinstance(card_sentences, (str, bytes, os.PathLike)) or not isinstance(card_sentences, Sequence):
        raise _wrong("card_sentences", card_sentences, "a list of sentence files")
    for i, file in enumerate(card_sentences):
        _check(f"card_sentences[{i}]", file, (str, os.PathLike), "a sentence file")
    config = ExportConfig(**_split(options, (ExportConfig,), False)[0])
    path = _path("out", out)
    named = vector_files(vectors) if isinstance(vectors, (str, os.PathLike)) else []
    check_output(path, kind, [*named, *([config.pca_text] if config.pca_text else []), *card_sentences])
    source = os.fspath(vectors) if isinstance(vectors, (str, os.PathLike)) else "VECTORS"
    vectors = _vectors(vectors)
    added = missing_words(vectors, add_words, source, config.dims, kind)
    check_pooling(kind, config)
    vectors, config = reduced(vectors, config)
    own = [read_sentence_file(file) for file in card_sentences] if score and kind.folder else []
    if not has_sklearn() and any(isinstance(s, LabelledTexts) for s in own):
        raise OptionError(
            f"{spell('card_sentences')}: a labelled set is scored by a probe, which needs scikit-learn: "
            "pip install 'ctx2static[downstream]'",
            "card_sentences",
        )
    evaluation = None
    if score and kind.folder:
        # the one slow step of an export: said before it starts
        log.info("evaluating for the model card (--no-eval, or score=False, skips it)...")
        start = time.perf_counter()
        # the bundled sentence sets (where scikit-learn is installed) score texts, whose words
        # outside the table a composer composes: they go in the composed column when there is one
        probes = has_sklearn()
        sentences = [*(load_benchmarks((Family("sentences"),)) if probes else []), *own]
        composing = vectors.composer is not None
        results = {"words in the table": run(vectors, load_benchmarks() + ([] if composing else sentences))}
        if composing:
            word_level = load_benchmarks((Family("similarity"), Family("categorization")))
            results["every word (unknown: composed)"] = run(vectors, [*word_level, *sentences], compose=True)
        stated = ["sentences"] if sentences else []
        evaluation = format_markdown(results, notes(AnalogyConfig(), families=stated))
        log.info("evaluated for the model card in %.1f s", time.perf_counter() - start)
    vectors = vectors.with_composed(added)
    return export_vectors(vectors, kind, path, Card.of(vectors, evaluation), config)


def _families(families: str | Sequence[str]) -> list[str]:
    """The families asked for: one family's name, or a list of them."""
    from ctx2static.eval.families import FAMILIES

    names = [families] if isinstance(families, str) else families
    if not isinstance(names, Sequence):
        raise _wrong("families", families, "a family's name or a list of them")
    for i, name in enumerate(names):
        _check(f"families[{i}]", name, (str,), "a family's name")
        _choice("families", name, FAMILIES, "benchmark family", families)
    return list(names)


def _benchmarks(
    benchmarks: Mapping[str, Sequence[str | os.PathLike]] | None,
) -> dict[str, Sequence[str | os.PathLike]]:
    """Per family the user's files or the tasks named, each checked: a string is never read as a list."""
    from ctx2static.eval.families import FAMILIES

    if benchmarks is None:
        return {}
    if not isinstance(benchmarks, Mapping):
        raise _wrong("benchmarks", benchmarks, "a dict of lists, such as {'similarity': ['pairs.tsv']}")
    for key, given in benchmarks.items():
        if not isinstance(key, str):
            raise _wrong("benchmarks", benchmarks, "family names as keys, such as {'similarity': [...]}")
        _choice("benchmarks", key, FAMILIES, "benchmark family", benchmarks)
        where = f"benchmarks[{key!r}]"
        if isinstance(given, (str, bytes, os.PathLike)) or not isinstance(given, Sequence):
            raise _wrong(where, given, "a list of files or task names")
        for i, item in enumerate(given):
            _check(f"{where}[{i}]", item, (str, os.PathLike), "a file or a task's name")
            if FAMILIES[key].read is None:  # a family of tasks alone: each value names one of them
                _choice(where, os.fspath(item), FAMILIES[key].tasks, "task", given)
    return dict(benchmarks)


def _vectors(vectors: Vectors | str | os.PathLike) -> Vectors:
    _check("vectors", vectors, (Vectors, str, os.PathLike), "Vectors, or a vectors file or folder")
    return vectors if isinstance(vectors, Vectors) else Vectors.load(vectors)


def _teacher(teacher: str | os.PathLike) -> str:
    _check("teacher", teacher, (str, os.PathLike), "a short name (minilm...), a model folder or a hub id")
    return os.fspath(teacher)


def _folder(param: str, path: str | os.PathLike | None) -> Path | None:
    return None if path is None else _path(param, path)


def _path(param: str, path: object) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise _wrong(param, path, "a path")
    return Path(path)


def _names(param: str, names: str | Sequence[str]) -> list[str]:
    """Lexicon names or files: one, or a list of them."""
    if isinstance(names, (str, os.PathLike)):
        return [os.fspath(names)]
    if not isinstance(names, Sequence):
        raise _wrong(param, names, "a name or file, or a list of them")
    for i, name in enumerate(names):
        _check(f"{param}[{i}]", name, (str, os.PathLike), "a lexicon name or file")
    return [os.fspath(n) for n in names]
