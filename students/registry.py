"""Which students exist, what each trains from, and how a run is configured.

Every student module exposes a ``Config`` dataclass (its paper's defaults, written once) and a
``fit`` function. Text students (plain baselines) take the encoded corpus:
``fit(corpus: EncodedCorpus, vocab: Vocab, config: Config) -> Vectors``.
Cache students (distilled and the contextual baselines) take a teacher cache:
``fit(cache: Cache, config: Config) -> Vectors``.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import os
import tempfile
import time
import types
import typing
from dataclasses import dataclass
from typing import Any

from ctx2static.errors import UserError
from ctx2static.pipeline.corpus import Corpus
from ctx2static.pipeline.vocab import Vocab, encode_corpus
from ctx2static.students.postprocess import all_but_the_top
from ctx2static.vectors import Vectors


class Source(str, enum.Enum):
    """What a student trains from."""

    TEXT = "text"
    CACHE = "cache"


@dataclass(frozen=True)
class StudentSpec:
    """One trainable student: its CLI name, module and input."""

    name: str
    module: str
    source: Source
    summary: str
    presets: tuple[tuple[str, str], ...] = ()  # config values fixed by the name (e.g. table=word)


STUDENTS: dict[str, StudentSpec] = {
    s.name: s
    for s in [
        StudentSpec("sgns", "ctx2static.students.sgns", Source.TEXT, "skip-gram, negative sampling"),
        StudentSpec("cbow", "ctx2static.students.cbow", Source.TEXT, "CBOW, negative sampling"),
        StudentSpec("glove", "ctx2static.students.glove", Source.TEXT, "GloVe on window co-occurrences"),
        StudentSpec("bert-sg", "ctx2static.students.bert_sg", Source.CACHE, "BERT+Skip-gram"),
        StudentSpec("ctx2vec", "ctx2static.students.ctx2vec", Source.CACHE, "Context-to-Vec"),
        StudentSpec("x2static", "ctx2static.students.x2static", Source.CACHE, "X2Static (sent/para)"),
        StudentSpec(
            "semglove", "ctx2static.students.semglove", Source.CACHE, "SemGloVe (window/attention/lm)"
        ),
        StudentSpec("ase", "ctx2static.students.ase", Source.CACHE, "average contextual vectors"),
        StudentSpec(
            "token",
            "ctx2static.students.teacher_tables",
            Source.CACHE,
            "teacher input embeddings",
            (("table", "token"),),
        ),
        StudentSpec(
            "word",
            "ctx2static.students.teacher_tables",
            Source.CACHE,
            "teacher on each word alone",
            (("table", "word"),),
        ),
    ]
}


def load_student(name: str) -> types.ModuleType:
    """Import the module of student ``name`` (it holds ``Config`` and ``fit``)."""
    spec = STUDENTS.get(name)
    if spec is None:
        raise UserError(f"unknown student '{name}'; choose one of: {', '.join(STUDENTS)}")
    try:
        return importlib.import_module(spec.module)
    except ModuleNotFoundError as exc:
        if exc.name == spec.module:
            raise UserError(f"student '{name}' is not built yet") from None
        raise


def configure(config_cls: type, overrides: dict[str, Any]) -> Any:
    """Build ``config_cls`` from its defaults plus ``overrides`` (strings are cast to field types).

    Unknown keys and values that do not parse are one-line :class:`UserError`s.
    """
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    hints = typing.get_type_hints(config_cls)
    kwargs: dict[str, Any] = {}
    for key, value in overrides.items():
        key = key.replace("-", "_")
        if key not in fields:
            raise UserError(
                f"{config_cls.__module__.rsplit('.', 1)[-1]} has no option '{key}'; "
                f"its options are: {', '.join(fields)}"
            )
        kwargs[key] = _cast(key, value, hints[key]) if isinstance(value, str) else value
    return config_cls(**kwargs)


def _cast(key: str, value: str, hint: Any) -> Any:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    target = args[0] if typing.get_origin(hint) in (typing.Union, types.UnionType) and args else hint
    try:
        if target is bool:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if value.lower() == "none" and type(None) in typing.get_args(hint):
            return None
        return target(value)
    except (TypeError, ValueError):
        raise UserError(
            f"option {key}={value!r} is not a valid {getattr(target, '__name__', target)}"
        ) from None


def _setup(
    name: str, source: Source, overrides: dict[str, Any] | None, echo: typing.Callable[[str], None]
) -> tuple[types.ModuleType, Any]:
    module = load_student(name)
    spec = STUDENTS[name]
    if spec.source is not source:
        want = "--cache DIR (a teacher cache)" if spec.source is Source.CACHE else "--corpus FILE"
        raise UserError(f"student '{name}' trains from {spec.source.value}; pass {want}")
    config = configure(module.Config, {**(overrides or {}), **dict(spec.presets)})
    echo(f"{name}: {config}")
    return module, config


def fit_cache_student(
    name: str,
    cache_dir: str | os.PathLike,
    overrides: dict[str, Any] | None = None,
    echo: typing.Callable[[str], None] = print,
) -> Vectors:
    """Teacher cache -> student ``name`` -> vectors (with metadata); no teacher is loaded."""
    from ctx2static.cache import Cache

    module, config = _setup(name, Source.CACHE, overrides, echo)
    cache = Cache.open(cache_dir)
    if not cache.complete:
        echo(f"warning: {cache_dir} is incomplete ({cache.n_shards} shards); training on what is there")
    n_tokens = int(cache.manifest.get("totals", {}).get("n_words", 0))
    start = time.perf_counter()
    vectors = _postprocess(module.fit(cache, config), config)
    seconds = time.perf_counter() - start
    epochs = getattr(config, "epochs", 1)
    vectors.meta.update(
        student=name,
        config=_jsonable(dataclasses.asdict(config)),
        cache=str(cache_dir),
        teacher=cache.manifest.get("identity", {}).get("teacher", {}).get("name"),
        train_seconds=round(seconds, 2),
        tokens_per_second=round(n_tokens * epochs / max(seconds, 1e-9)),
    )
    return vectors


def _postprocess(vectors: Vectors, config: Any) -> Vectors:
    """Apply the config's ``abtt`` (all-but-the-top; None = off) to the trained table."""
    n_components = getattr(config, "abtt", None)
    if n_components is None:
        return vectors
    vectors.matrix = all_but_the_top(vectors.matrix, n_components)
    return vectors


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v.value if isinstance(v, enum.Enum) else v for k, v in d.items()}


def fit_text_student(
    name: str,
    corpus: Corpus,
    min_count: int = 5,
    max_vocab: int | None = None,
    overrides: dict[str, Any] | None = None,
    echo: typing.Callable[[str], None] = print,
) -> Vectors:
    """Corpus -> vocabulary -> encoded corpus -> student ``name`` -> vectors (with metadata)."""
    module, config = _setup(name, Source.TEXT, overrides, echo)
    vocab = Vocab.build(corpus, min_count=min_count, max_vocab=max_vocab)
    with tempfile.TemporaryDirectory(prefix="ctx2static-enc-") as work:
        encoded = encode_corpus(corpus, vocab, work)
        n_tokens = len(encoded.ids)
        echo(f"corpus: {n_tokens:,} tokens, {encoded.n_sentences:,} sentences, {len(vocab):,} words")
        start = time.perf_counter()
        vectors = _postprocess(module.fit(encoded, vocab, config), config)
        seconds = time.perf_counter() - start
    epochs = getattr(config, "epochs", 1)
    vectors.meta.update(
        student=name,
        config=_jsonable(dataclasses.asdict(config)),
        corpus=[str(p) for p in corpus.paths],
        corpus_config=dataclasses.asdict(corpus.config),
        min_count=min_count,
        max_vocab=max_vocab,
        train_seconds=round(seconds, 2),
        tokens_per_second=round(n_tokens * epochs / max(seconds, 1e-9)),
    )
    return vectors
