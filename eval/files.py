"""`evaluate_files`: vectors files in, one table out (``ctx2static eval``), with its JSON and Markdown."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ctx2static.errors import InputError, UserError, spell
from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.benchmarks import load_benchmarks
from ctx2static.eval.comparison import compare_tables
from ctx2static.eval.families import (
    INTRINSIC,
    Benchmark,
    Family,
    family,
    file_families,
    member,
    task_families,
    tasks_and_files,
    with_named_tasks,
)
from ctx2static.eval.results import format_text, write_markdown, write_results_json
from ctx2static.eval.suite import avg5_fallback, config_dict, notes
from ctx2static.fileio.outputs import check_writable, refuse_same_outputs
from ctx2static.vectors import Vectors
from ctx2static.vectors.outputs import vector_files
from ctx2static.vectors.table import NonFinite


def asked_for(
    families: Sequence[str], given: Mapping[str, Sequence[str | os.PathLike]]
) -> tuple[tuple[Family | str, ...], tuple[str, ...], dict[str, tuple[Path, ...]]]:
    """The families, the tasks and per family the user's files that ``families`` and ``given`` ask for.

    ``given`` holds per family its extra files, or the tasks named (naming one asks for the family)
    and, for a family of tasks that reads files (sentences), files of the user's own among them;
    without ``families`` or tasks the intrinsic families run. A key that names no family is a
    one-line error.
    """
    for name in given:
        family(name)
    extra = {name: tuple(Path(p) for p in given.get(name, ())) for name in file_families()}
    named: dict[str, tuple[str, ...]] = {}
    for name in task_families():  # their option takes a task's name or, where the family reads files, a file
        if given.get(name):
            named[name], extra[name] = tasks_and_files(name, [os.fspath(v) for v in given[name]])
    asked = tuple(member(f) for f in families) or (() if named else INTRINSIC)
    picked, tasks = with_named_tasks(asked, named)
    return picked, tasks, extra


def load_asked(
    families: Sequence[Family | str], tasks: Sequence[str], extra: Mapping[str, Sequence[Path]], bundled: bool
) -> list[Benchmark]:
    """The sets :func:`asked_for` names; none at all is a one-line error saying how to give some."""
    benchmarks = load_benchmarks(families, extra, bundled=bundled, tasks=tasks)
    if not benchmarks:
        options = "/".join(dict.fromkeys(spell(name, keyword="benchmarks") for name in extra))
        raise UserError(f"no benchmarks to run: give {options} files with {spell('bundled', False)}")
    return benchmarks


def evaluate_files(
    vectors: Sequence[str | os.PathLike],
    show: Callable[[str], object],
    families: Sequence[str] = (),
    given: Mapping[str, Sequence[str]] | None = None,
    bundled: bool = True,
    items: str = "common",
    compose: bool = False,
    analogy: AnalogyConfig | None = None,
    json_path: str | os.PathLike | None = None,
    markdown: str | os.PathLike | None = None,
    nonfinite: NonFinite | str = NonFinite.ERROR,
) -> None:
    """Score every file of ``vectors`` on the benchmarks asked for; ``show`` the table, then write it.

    ``families`` and ``given`` ask for benchmarks as :func:`asked_for` reads them.
    ``items="common"`` scores several files on the items all of them cover. The outputs are checked
    before any file is read; the table is shown before the JSON and Markdown are written, so a
    failed write still leaves it.
    """
    analogy = analogy or AnalogyConfig()
    picked, tasks, extra = asked_for(families, given or {})
    files = [p for paths in extra.values() for p in paths]
    refuse_same_outputs([("--json", json_path), ("--markdown", markdown)])
    read: list[str | os.PathLike] = [*(f for v in vectors for f in vector_files(v)), *files]
    for written in (json_path, markdown):
        if written is not None:
            check_writable(written, inputs=read, folder=False)
    benchmarks = load_asked(picked, tasks, extra, bundled)
    for path in vectors:
        if not Path(path).exists():
            raise InputError(path, f"{path}: no such vectors file or folder")
    loaded = {os.fspath(path): Vectors.load(path, nonfinite=nonfinite) for path in vectors}
    common = items == "common" and len(loaded) > 1
    compared = compare_tables(loaded, benchmarks, analogy, common, compose)
    results, own = compared.common, compared.own
    lines = notes(analogy, common=common, families=picked)
    lines += ["--compose: words outside a table get vectors composed from subwords"] * compose
    lines += avg5_fallback(results)
    show(format_text(results, lines, own if common else None))
    if json_path is not None:
        write_results_json(
            json_path, results, {**config_dict(analogy, picked), "items": "common" if common else "own"}
        )
    if markdown is not None:
        write_markdown(markdown, results, lines, own if common else None)
