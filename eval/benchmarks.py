"""Loading benchmark sets: each family's bundled sets and extra files (data/benchmarks/README.md).

The formats, readers and set types live in each family's module; :mod:`ctx2static.eval.families`
says which families exist. A malformed file raises a one-line :class:`UserError` naming the file
and the line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from enum import Enum

from ctx2static.errors import InputError
from ctx2static.eval.analogy import SEMEVAL2012, AnalogySet, read_analogy
from ctx2static.eval.categorization import CategorizationSet, read_categorization
from ctx2static.eval.families import FAMILIES, INTRINSIC, Benchmark, Family, all_tasks, family
from ctx2static.eval.similarity import SimilaritySet, read_similarity
from ctx2static.resources import BENCHMARK_DIR

__all__ = [
    "INTRINSIC",
    "SEMEVAL2012",
    "AnalogySet",
    "Benchmark",
    "CategorizationSet",
    "Family",
    "SimilaritySet",
    "load_benchmarks",
    "read_analogy",
    "read_categorization",
    "read_similarity",
]


def load_benchmarks(
    families: Sequence[str | Enum] = INTRINSIC,
    extra: Mapping[str, Sequence[str | os.PathLike]] | None = None,
    bundled: bool = True,
    tasks: Sequence[str] | None = None,
) -> list[Benchmark]:
    """Read the bundled sets of ``families`` (unless ``bundled`` is False) and the ``extra`` files.

    A family split into tasks loads its bundled ``tasks`` (default: all), then the extra files of
    those that also read files.
    """
    asked = {family(f).name for f in families}  # an unknown name is an error, not an empty run
    files = {family(f).name: paths for f, paths in (extra or {}).items()}
    chosen = all_tasks() if tasks is None else tuple(tasks)
    out: list[Benchmark] = []
    for name, spec in FAMILIES.items():
        paths = [BENCHMARK_DIR / name / f for f in spec.bundled] if bundled and name in asked else []
        if spec.load is not None:
            out += spec.load([t for t in chosen if t in spec.tasks]) if name in asked else []
        for path in [*paths, *files.get(name, [])]:
            bench = spec.read(path)  # type: ignore[misc]
            if any(b.name == bench.name for b in out):
                raise InputError(
                    path, f"{path}: a benchmark named {bench.name!r} is already loaded; rename it"
                )
            out.append(bench)
    return out
