"""Which students exist and everything known about each: its input, plain counterpart and loss.

Every student module ends with its ``STUDENT`` (:mod:`ctx2static.students.student`): its ``Config``
(an :class:`~ctx2static.options.Options` dataclass with its paper's defaults, written once) and its
``fit``, typed. Text students (plain baselines) take the encoded corpus:
``fit(corpus: EncodedCorpus, vocab: Vocab, config: Config) -> Vectors``. Cache students (distilled
and the contextual baselines) take a teacher cache: ``fit(cache: Cache, config: Config) -> Vectors``;
their ``Config`` is a :class:`~ctx2static.students.cache_input.CacheConfig`, whose ``signals()``
names the cache signals the run needs, so a missing one is refused before any work (and, in a
study, before the teacher runs). A row here names the module, imported when the student is first
asked for.
"""

from __future__ import annotations

import enum
import importlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctx2static.cache import Cache
from ctx2static.cache.compose import composable, fit_composer
from ctx2static.cache.layout import SIGNALS, missing_signals
from ctx2static.errors import InputError, MissingSignalError, UserError, did_you_mean, spell
from ctx2static.fileio.outputs import check_writable
from ctx2static.fileio.temps import temp_folder
from ctx2static.options import Options, configure, field_names, pop_options
from ctx2static.students.budget import Sizes, check_student_memory
from ctx2static.students.cache_input import CacheConfig
from ctx2static.students.student import CacheStudent, TextStudent
from ctx2static.text.corpus import Corpus, CorpusConfig
from ctx2static.text.encoded import encode_corpus
from ctx2static.text.vocab import Vocab, VocabConfig
from ctx2static.transforms.postprocess import all_but_the_top
from ctx2static.vectors import Vectors
from ctx2static.vectors.outputs import check_replace, check_vectors_output, made_by

log = logging.getLogger(__name__)


class Source(str, enum.Enum):
    """What a student trains from."""

    TEXT = "text"
    CACHE = "cache"


class Reads(str, enum.Enum):
    """What of a cache a student reads: it decides which caches can train it."""

    SHARDS = "shards"  # per-occurrence signals, shard by shard
    SUMS = "sums"  # the per-word sums of the pass over the sentences (vocab.h5), no shard opened
    TABLES = "tables"  # the per-word tables alone: a cache extracted with --tables-only serves it


@dataclass(frozen=True)
class StudentSpec:
    """One trainable student: its CLI name, module, input and what the report says of it."""

    name: str
    module: str
    source: Source
    summary: str
    baseline: str | None = None  # the plain student it is compared with (the report's deltas)
    loss_label: str | None = None  # what its ``loss_per_epoch`` averages (None: it records none)
    presets: tuple[tuple[str, str], ...] = ()  # config values fixed by the name (e.g. table=word)
    reads: Reads = Reads.SHARDS


_MODULE = "ctx2static.students."
STUDENTS: dict[str, StudentSpec] = {
    s.name: s
    for s in [
        StudentSpec("sgns", _MODULE + "sgns", Source.TEXT, "skip-gram, negative sampling", None,
                    "online NS loss per pair"),
        StudentSpec("cbow", _MODULE + "cbow", Source.TEXT, "CBOW, negative sampling", None,
                    "online NS loss per centre word"),
        StudentSpec("glove", _MODULE + "glove", Source.TEXT, "GloVe on window co-occurrences", None,
                    "cost J per nonzero"),
        StudentSpec("bert-sg", _MODULE + "bert_sg", Source.CACHE, "BERT+Skip-gram", "sgns",
                    "loss per centre word"),
        StudentSpec("ctx2vec", _MODULE + "ctx2vec", Source.CACHE, "Context-to-Vec", "sgns",
                    "loss per centre word"),
        StudentSpec("x2static", _MODULE + "x2static", Source.CACHE, "X2Static (sent/para)", "cbow",
                    "loss per target"),
        StudentSpec("sentence", _MODULE + "sentence", Source.CACHE,
                    "rows whose sentence mean fits the teacher's (tokenlearn's target)", "cbow"),
        StudentSpec("sentence-kd", _MODULE + "sentence_kd", Source.CACHE,
                    "rows whose sentence means keep the teacher's in-batch sentence geometry", "cbow",
                    "in-batch loss per batch"),
        StudentSpec("semglove", _MODULE + "semglove", Source.CACHE, "SemGloVe (window/attention/lm)",
                    "glove", "cost J per nonzero"),
        StudentSpec("ase", _MODULE + "ase", Source.CACHE, "average contextual vectors", "sgns",
                    reads=Reads.SUMS),
        StudentSpec("token", _MODULE + "teacher_tables", Source.CACHE, "teacher input embeddings", "sgns",
                    presets=(("table", "token"),), reads=Reads.TABLES),
        StudentSpec("word", _MODULE + "teacher_tables", Source.CACHE, "teacher on each word alone", "sgns",
                    presets=(("table", "word"),), reads=Reads.TABLES),
        StudentSpec("embed", _MODULE + "teacher_tables", Source.CACHE,
                    "teacher's own sentence embedding of each word", "sgns",
                    presets=(("table", "embed"),), reads=Reads.TABLES),
    ]
}  # fmt: skip


def spec(name: str) -> StudentSpec:
    """The spec of student ``name``; an unknown name is a one-line error listing the students."""
    found = STUDENTS.get(name)
    if found is None:
        raise UserError(
            f"unknown student '{name}'{did_you_mean(name, STUDENTS)}; choose one of: {', '.join(STUDENTS)}"
        )
    return found


Student = TextStudent[Any] | CacheStudent[Any]


def load_student(name: str) -> Student:
    """Student ``name``: its module's ``STUDENT``, imported now (a wiring error is a TypeError)."""
    row = spec(name)
    found = getattr(importlib.import_module(row.module), "STUDENT", None)
    kind = TextStudent if row.source is Source.TEXT else CacheStudent
    if not isinstance(found, kind):
        raise TypeError(
            f"{row.module} must end with STUDENT = {kind.__name__}(Config, fit) "
            f"(its row says {row.source.value})"
        )
    return found


def cache_student(name: str) -> CacheStudent[Any]:
    """Student ``name``, which must train from a cache (a text student: one line saying what to pass)."""
    found = load_student(name)
    if not isinstance(found, CacheStudent):
        raise UserError(f"student '{name}' trains from the corpus text; pass {spell('corpus', 'FILE')}")
    return found


def text_student(name: str) -> TextStudent[Any]:
    """Student ``name``, which must train from text (a cache student: one line saying what to pass)."""
    found = load_student(name)
    if not isinstance(found, TextStudent):
        raise UserError(f"student '{name}' trains from a teacher cache; pass {spell('cache', 'DIR')}")
    return found


def student_config(name: str, overrides: Mapping[str, Any] | None = None) -> Options:
    """Student ``name``'s config: its defaults, then ``overrides``, then the presets its name fixes."""
    return configure(load_student(name).config, {**(overrides or {}), **dict(spec(name).presets)}, what=name)


def listing() -> str:
    """The students by input, as the command line's help lists them (read from :data:`STUDENTS`)."""
    text, cache = ([n for n, s in STUDENTS.items() if s.source is source] for source in Source)
    listed = f"{', '.join(text)} (from --corpus); {', '.join(cache)} (from --cache, no teacher needed)"
    return f"Students: {listed}."


def students_with(option: str) -> list[str]:
    """The students whose config has ``option``."""
    return [name for name in STUDENTS if option in field_names(load_student(name).config)]


def shortcut_overrides(name: str, shortcuts: Mapping[str, Any]) -> dict[str, Any]:
    """The command line's shortcut flags given (not None) as --set overrides of student ``name``.

    A shortcut is for the students whose config has its option; given to another, it is a one-line
    error naming the students it is for (``--threads`` with ``x2static``, whose Adam loop is serial).
    """
    given = {k: v for k, v in shortcuts.items() if v is not None}
    fields = field_names(load_student(name).config)
    for key in given:
        if key not in fields:
            raise UserError(
                f"--{key}: student '{name}' has no option '{key}' (the shortcut is for "
                f"{', '.join(students_with(key))}); drop it"
            )
    return given


def command_overrides(name: str, shortcuts: Mapping[str, Any], settings: Iterable[str]) -> dict[str, Any]:
    """The command line's overrides of student ``name``: its shortcut flags, then each ``--set KEY=VALUE``."""
    overrides = shortcut_overrides(name, shortcuts)
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"--set {item!r}: write KEY=VALUE, e.g. --set negative=10")
        overrides[key.strip()] = value.strip()
    return overrides


def needed_signals(name: str, config: Options) -> tuple[str, ...]:
    """The cache signals student ``name`` needs with ``config`` (none for text students)."""
    if spec(name).source is Source.TEXT:
        return ()
    if not isinstance(config, CacheConfig):
        raise TypeError(f"student '{name}': a cache student's Config derives from CacheConfig")
    return tuple(config.signals())


def check_signals(
    name: str,
    config: Options,
    available: Iterable[str],
    where: str,
    fix: str = "extract again with {}",
    tables_only: bool = False,
) -> None:
    """The one missing-signal policy of every entry point (command line, study, API).

    A cache (or the extract options that will make it, ``where``) without a signal student ``name``
    needs is refused before any work, in one line naming the option that writes it; ``fix`` says
    where to set it, its ``{}`` filled with the options as the caller writes them
    (:meth:`~ctx2static.cache.layout.Signal.setting`: flags, a study's keys, API keywords). So is
    a ``tables_only`` cache for a student that learns from the pass over the sentences.
    """
    if tables_only and spec(name).reads is not Reads.TABLES:
        takes = ", ".join(s.name for s in STUDENTS.values() if s.reads is Reads.TABLES)
        off = fix.format(spell("tables_only", False))
        raise MissingSignalError(  # all the pass writes is missing, whichever of it the student reads
            f"{where}: student '{name}' learns from the pass over the sentences, which "
            f"{spell('tables_only', True)} skips (it serves {takes}); {off}",
            needed_signals(name, config),
        )
    missing = missing_signals(needed_signals(name, config), available)
    if missing:
        options = ", ".join(dict.fromkeys(SIGNALS[s].setting() for s in missing))
        raise MissingSignalError(
            f"{where}: student '{name}' needs the cache signal '{missing[0]}', which this teacher does "
            f"not extract; {fix.format(options)}",
            missing,
        )


def _postprocess(vectors: Vectors, config: Options) -> Vectors:
    """Apply the config's ``abtt`` (all-but-the-top; None = off) to the trained table."""
    n_components = getattr(config, "abtt", None)
    if n_components is None:
        return vectors
    vectors.matrix = all_but_the_top(vectors.matrix, n_components)
    return vectors


def _timed(name: str, config: Options, n_tokens: int, began: float, fit: Callable[[], Vectors]) -> Vectors:
    """Run ``fit()`` and post-process; record the student, config, seconds and throughput.

    ``seconds`` counts from ``began`` (reading the corpus or cache included), ``train_seconds``
    only the fit; tokens/s are corpus tokens times epochs over the fit.
    """
    log.debug("%s: %s", name, config)
    start = time.perf_counter()
    vectors = _postprocess(fit(), config)
    end = time.perf_counter()
    epochs = getattr(config, "epochs", 1)
    vectors.meta.update(
        {
            "student": name,
            "config": config.to_dict(),
            "seconds": round(end - began, 2),
            "train_seconds": round(end - start, 2),
            "tokens_per_second": round(n_tokens * epochs / max(end - start, 1e-9)),
        }
    )
    return vectors


StudentOptions = Options | Mapping[str, Any] | None
"""A student's config, or overrides of its defaults (``{"epochs": 2}``), or None for the defaults."""


def _config(name: str, config: StudentOptions) -> Options:
    return config if isinstance(config, Options) else student_config(name, config)


def fit_cache_student(
    name: str, cache_dir: str | os.PathLike, config: StudentOptions = None, compose: bool = True
) -> Vectors:
    """Teacher cache -> student ``name`` -> vectors (with metadata); no teacher is loaded.

    With ``compose`` (and a finished cache) the vectors carry a composer for words outside the
    table (:func:`ctx2static.cache.compose.fit_composer`).
    """
    student = cache_student(name)
    config = _config(name, config)
    began = time.perf_counter()
    cache = Cache.open(cache_dir)
    check_signals(name, config, cache.signals, str(cache_dir), tables_only=cache.tables_only)
    if cache.n_shards == 0 and not cache.tables_only:
        raise InputError(cache_dir, f"{cache_dir}: the cache has no complete shard; run extract (it resumes)")
    checkpoint = getattr(config, "checkpoint", None)  # sentence-kd's resumable state, written every epoch
    if checkpoint:
        check_writable(checkpoint, inputs=[cache_dir], folder=False)
    if not cache.complete:
        log.warning("%s is incomplete (%d shards); training on what is there", cache_dir, cache.n_shards)
    largest = max((int(s.get("n_occurrences", 0)) for s in cache.manifest["shards"]), default=0)
    check_student_memory(
        name,
        student.memory,
        student.sized_by,
        config,
        Sizes(len(cache.vocab), largest),
        f"extract's {spell('min_count')}, {spell('max_vocab')}",
    )
    start = time.perf_counter()
    size = cache.verify_for(list(needed_signals(name, config)) if spec(name).reads is Reads.SHARDS else None)
    seconds = time.perf_counter() - start
    log.info("%s: checksums of %.0f MB verified in %.1f s", cache_dir, size / 1e6, seconds)
    vectors = _timed(name, config, cache.totals("n_words"), began, lambda: student.fit(cache, config))
    identity = cache.manifest["identity"]
    vectors.meta.update({"cache": str(cache_dir), "teacher": identity.get("teacher", {}).get("name")})
    if "corpus" in identity:  # provenance for model cards
        vectors.meta.update(
            {"corpus": [c["path"] for c in identity["corpus"]], "corpus_config": identity["corpus_config"]}
        )
    if compose and composable(cache):
        vectors.composer = fit_composer(cache, vectors)
    elif compose:
        log.warning("%s: no composer for unknown words (unfinished cache, or no tokenizer)", cache_dir)
    return vectors


def fit_text_student(
    name: str, corpus: Corpus, vocab_config: VocabConfig | None = None, config: StudentOptions = None
) -> Vectors:
    """Corpus -> vocabulary -> encoded corpus -> student ``name`` -> vectors (with metadata)."""
    student = text_student(name)
    config, vocab_config = _config(name, config), vocab_config or VocabConfig()
    checkpoint = getattr(config, "checkpoint", None)  # GloVe's resumable state, written every epoch
    if checkpoint:  # here, where every entry point (command, study, API) knows the corpus files
        check_writable(checkpoint, inputs=corpus.paths, folder=False)
    began = time.perf_counter()
    vocab = Vocab.build(corpus, vocab_config)
    check_student_memory(
        name,
        student.memory,
        student.sized_by,
        config,
        Sizes(len(vocab)),
        f"{spell('min_count')}, {spell('max_vocab')}",
    )
    with temp_folder("ctx2static-enc-") as work:
        encoded = encode_corpus(corpus, vocab, work)
        n_tokens = len(encoded.ids)
        log.info(
            "corpus: %s tokens, %s sentences, %s words",
            f"{n_tokens:,}",
            f"{encoded.n_sentences:,}",
            f"{len(vocab):,}",
        )
        vectors = _timed(name, config, n_tokens, began, lambda: student.fit(encoded, vocab, config))
    vectors.meta.update(
        {
            "corpus": [str(p) for p in corpus.paths],
            "corpus_config": corpus.config.to_dict(),
            "vocab_config": vocab_config.to_dict(),
        }
    )
    return vectors


def fit_student(
    name: str,
    out: str | os.PathLike,
    corpus: Sequence[str | os.PathLike] = (),
    cache_dir: str | os.PathLike | None = None,
    overrides: Mapping[str, Any] | None = None,
    text_options: Mapping[str, Any] | None = None,
    compose: bool = True,
    overwrite: bool = False,
) -> tuple[Vectors, Path]:
    """Student ``name`` from a ``corpus`` or a ``cache_dir``, saved at ``out`` (``fit-student``).

    Every check that can fail runs before the training: the config, the output (writable, not an
    input, not another maker's vectors unless ``overwrite``), GloVe's checkpoint apart from the
    output, one input. ``text_options`` are the corpus reading and vocabulary fields, read only for
    a corpus. Returns the vectors and the path they were saved at.
    """
    config = student_config(name, overrides)
    check_vectors_output(out, [*corpus, cache_dir])
    check_replace(out, made_by({"student": name}), overwrite)
    checkpoint = getattr(config, "checkpoint", None)  # the corpus is checked by fit_text_student
    if checkpoint and Path(checkpoint).resolve() == Path(out).resolve():
        raise UserError(f"{checkpoint}: is both the checkpoint and the output (-o); give each its own path")
    if cache_dir and corpus:
        raise UserError(
            f"pass either {spell('corpus')} (text students) or {spell('cache')} (cache students), not both"
        )
    if cache_dir:
        vectors = fit_cache_student(name, cache_dir, config, compose)
    elif corpus:
        options = dict(text_options or {})
        text = Corpus(list(corpus), pop_options(CorpusConfig, options))
        vectors = fit_text_student(name, text, pop_options(VocabConfig, options), config)
    else:
        raise UserError(
            f"pass {spell('corpus', 'FILE')} (text students) or {spell('cache', 'DIR')} (distilled students)"
        )
    return vectors, vectors.save(out)
