"""The memory a student's tables will take, estimated from its options before the first is allocated.

A student's largest arrays are sized by its options and the vocabulary: ``--dim 200000`` over
10,000 words asks numpy for two 8 GB tables, and the run died with ``_ArrayMemoryError`` after the
corpus was read. Each student module with such tables has ``memory(config, sizes) -> int``, the
bytes of its tables at their peak (steady state and the transients of their initialisation), and
the options that size them, both given with its ``STUDENT`` (:mod:`ctx2static.students.student`);
:func:`check_student_memory` compares the estimate with what the machine has left and refuses in
one line that names those options.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ctx2static.errors import spell
from ctx2static.memory import check_fits
from ctx2static.options import Options

FLOAT32 = 4
FLOAT64 = 8
INT64 = 8


@dataclass(frozen=True)
class Sizes:
    """What a student's tables are sized by besides its options."""

    n_words: int  # rows of the static table (the vocabulary)
    shard_occurrences: int = 0  # cache students: the largest shard's aligned occurrences


def check_student_memory(
    name: str,
    memory: Callable[[Any, Sizes], int] | None,
    sized_by: tuple[str, ...],
    config: Options,
    sizes: Sizes,
    fewer_words: str,
) -> None:
    """Refuse student ``name`` before it allocates, when its ``memory`` estimate exceeds what is left.

    ``sized_by`` are the options that size its tables; ``fewer_words`` names the options that
    shrink the vocabulary where it is made (fit-student's for a text student, extract's for a cache).
    """
    if memory is None:  # no table sized by an option (a teacher table, sized by the cache)
        return
    check_fits(
        memory(config, sizes),
        f"student '{name}' with {', '.join(f'{k}={getattr(config, k)}' for k in sized_by)} and "
        f"{sizes.n_words:,} words",
        f"lower {' or '.join(spell(k) for k in sized_by)}, or keep fewer words ({fewer_words})",
    )
