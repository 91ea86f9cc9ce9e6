"""What a student is to the rest of the program: its config type and its typed ``fit``.

Each student module ends with one ``STUDENT = TextStudent(Config, fit)`` or
``CacheStudent(Config, fit)``. The type checker reads that line against the module's own
``Config`` and ``fit``, so a ``fit`` whose parameters do not match what the registry passes fails
the check where it is written; the registry imports the module only when the student is asked for
(:func:`ctx2static.students.registry.load_student`), so listing the students imports none of them.

A student whose tables are sized by its options also gives ``memory(config, sizes) -> int``, the
bytes of those tables at their peak, and ``sized_by``, the options that size them
(:mod:`ctx2static.students.budget` refuses a run that would not fit, naming them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from ctx2static.cache import Cache
from ctx2static.options import Options
from ctx2static.students.budget import Sizes
from ctx2static.students.cache_input import CacheConfig
from ctx2static.text.encoded import EncodedCorpus
from ctx2static.text.vocab import Vocab
from ctx2static.vectors import Vectors

TextC = TypeVar("TextC", bound=Options)
CacheC = TypeVar("CacheC", bound=CacheConfig)


@dataclass(frozen=True)
class TextStudent(Generic[TextC]):
    """A plain baseline: trains on the encoded corpus and its vocabulary."""

    config: type[TextC]
    fit: Callable[[EncodedCorpus, Vocab, TextC], Vectors]
    memory: Callable[[TextC, Sizes], int] | None = None
    sized_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class CacheStudent(Generic[CacheC]):
    """A student of the teacher: trains on a cache; its config's ``signals()`` names what it reads."""

    config: type[CacheC]
    fit: Callable[[Cache, CacheC], Vectors]
    memory: Callable[[CacheC, Sizes], int] | None = None
    sized_by: tuple[str, ...] = ()
