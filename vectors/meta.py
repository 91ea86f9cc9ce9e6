"""What a vectors file records about how it was made, and the schema every file is checked against.

``meta.json`` (or a word2vec file's sidecar) is read once, when the file is opened: a value of the
wrong type is one line naming the file and the key, so no later stage meets a malformed one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict, cast

from ctx2static.errors import InputError


class VectorsMeta(TypedDict, total=False):
    """What a table records about how it was made (``meta.json``); every key is optional.

    The keys some stage reads are checked when the vectors are opened (:data:`META_SCHEMA`);
    the others are kept as they are. Vectors from elsewhere (gensim, a word2vec file) have none.
    """

    # provenance: students/registry.py writes it; the model card and the exports read it
    student: str  # the student's name (x2static, sgns...)
    config: dict[str, Any]  # the student's config (Options.to_dict)
    teacher: str | None  # the cache's teacher (a short name, folder or hub id)
    cache: str  # the cache folder a cache student was fitted from
    corpus: list[str]  # the corpus files
    corpus_config: dict[str, Any]  # how the corpus was read; its "lowercase" decides Vectors.lowercase
    vocab_config: dict[str, Any]  # a text student's vocabulary settings (VocabConfig.to_dict)
    # timings: students/registry.py, for every student; the study's report reads them
    seconds: float  # reading the corpus or cache plus the fit
    train_seconds: float  # the fit alone
    tokens_per_second: int  # corpus tokens times epochs over the fit
    # what the student reports of its own fit, free-form: each student's module says what it writes
    # (loss_per_epoch, which the study's figures plot; adam_steps, cg_iterations...)
    train: dict[str, Any]
    # later stages
    study: dict[str, Any]  # study/runner.py: the step's hash, seconds, peak_rss_mb and when written
    retrofit: list[dict[str, Any]]  # retrofit/solver.py, one entry a pass: method, lexicons, config...
    # transforms/combine.py: method, weights, words, lower_cased and per input its path, student, teacher,
    # words, dim (and retrofit methods, fit_cosine); made_by and the model card read it
    combine: dict[str, Any]
    # Vectors.reduced: {"dims": kept, "of": before, "drop": axes left out, "texts": fitted on (0: rows)};
    # the Model2Vec export reads dims
    pca: dict[str, int]
    composer: dict[str, Any]  # Composer.save's settings (lowercase, teacher, words, ridge...)
    # transforms/lexical.py: {"dims": added, "weight", "weighting", "sif_a", "of": dims before}; the card
    # reads it
    lexical: dict[str, Any]


NUMBER = (int, float)
NULL = type(None)
META_SCHEMA: dict[str, Any] = {
    # provenance (students/registry.py), read by the model card and the exports
    "student": str,
    "teacher": (str, NULL),
    "cache": str,
    "corpus": [str],
    "corpus_config": {"lowercase": bool},
    "vocab_config": dict,
    "config": dict,
    # timings, read by the study's report; the student's own trace, read by its figures
    "seconds": NUMBER,
    "train_seconds": NUMBER,
    "tokens_per_second": NUMBER,
    "train": {"loss_per_epoch": [NUMBER]},  # free-form: only the key a later stage reads is typed
    "study": {"hash": str, "written": str, "seconds": NUMBER, "peak_rss_mb": NUMBER},
    "retrofit": [{"method": str, "lexicons": [str], "antonyms": [str], "edges": int}],
    "combine": {"method": str, "inputs": [{"path": str, "student": (str, NULL), "teacher": (str, NULL)}]},
    # what Vectors.reduced records, read by the Model2Vec export
    "pca": {"dims": int, "of": int},
    # what Composer.save returns
    "composer": {"lowercase": bool, "teacher": (str, NULL), "words": int, "ridge": NUMBER},
    # what transforms/lexical.py records, read by the model card
    "lexical": {"dims": int, "weight": NUMBER, "of": int},
}
"""The types of the metadata keys that some stage reads: a type or tuple of types, ``[spec]`` for a
list of such items, ``{key: spec}`` for an object whose listed keys (when present) have those types.
Other keys, and other keys of the objects, are kept as they are. A bool is not taken for a number."""


def checked_meta(meta: dict[str, Any], path: Path) -> VectorsMeta:
    """``meta`` as read from ``path``, once every key of :data:`META_SCHEMA` it holds has its type.

    Checked when the vectors are opened so that no later stage meets, say, a ``"lowercase": "no"``
    (which would read as true) or a number where the model card iterates the corpus files.
    """
    problem = _schema_problem(meta, META_SCHEMA, "")
    if problem:
        raise InputError(path, f"{path}: {problem}; correct it or delete the key")
    return cast(VectorsMeta, meta)


def _schema_problem(value: Any, spec: Any, key: str) -> str | None:
    """Why ``value`` (found at ``key``, dotted) does not match ``spec``, or None."""
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return _mismatch(value, spec, key)
        for name in (n for n in spec if n in value):
            problem = _schema_problem(value[name], spec[name], f"{key}.{name}".lstrip("."))
            if problem:
                return problem
        return None
    if isinstance(spec, list):
        if not isinstance(value, list):
            return _mismatch(value, spec, key)
        problem = next(filter(None, (_schema_problem(item, spec[0], key) for item in value)), None)
        return problem if problem is None or isinstance(spec[0], dict) else _mismatch(value, spec, key)
    types = spec if isinstance(spec, tuple) else (spec,)
    if isinstance(value, types) and (bool in types or not isinstance(value, bool)):
        return None
    return _mismatch(value, spec, key)


def _mismatch(value: Any, spec: Any, key: str) -> str:
    shown = json.dumps(value)
    return f"'{key}' must be {_describe(spec)}, not {shown if len(shown) <= 40 else shown[:37] + '...'}"


def _describe(spec: Any) -> str:
    if isinstance(spec, list):
        return f"a list of {_describe(spec[0]).split(' ', 1)[1]}s"
    if isinstance(spec, dict) or spec is dict:
        return "an object"
    if spec == NUMBER:
        return "a number"
    if isinstance(spec, tuple):
        return " or ".join(_describe(t) for t in spec)
    return {str: "a string", int: "an integer", bool: "true or false", NULL: "null"}[spec]


def is_count(text: str) -> bool:
    """Whether ``text`` is a count: ASCII digits that fit an int64."""
    return text.isascii() and text.isdigit() and len(text) <= 18
