"""The guards of a vectors output: which files it writes, and what it may replace.

A command that saves vectors checks its output before any work, and replaces only vectors it
made itself (``--overwrite`` for the ones another command made).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ctx2static.composer import ROWS, TOKENIZER
from ctx2static.errors import OutputError, spell
from ctx2static.fileio.outputs import check_replaceable, check_writable
from ctx2static.vectors.formats import NATIVE_FILES, read_through, saves_folder, sidecar


def vector_files(path: str | os.PathLike, output: bool = False) -> list[Path]:
    """Every file that vectors ``path`` are: the folder, or the word2vec file and the files beside it.

    Beside a word2vec file lie its metadata sidecar and its composer's two files, all read by
    :meth:`Vectors.load` and written by :meth:`Vectors.save`; so a command counts each among its
    inputs (an output never replaces one), and probes an output's temporary names for each.
    ``output``: ``path`` is to be written (a folder as :func:`saves_folder` says), else it is read
    (a folder when it is one).
    """
    path = Path(path)
    if saves_folder(path) if output else os.path.isdir(path):
        return [path]
    if not output:  # read as Vectors.load reads it: a link's sidecars are its target's
        path = read_through(path)
    composer = [path.with_name(f"{path.name}.{name}") for name in (ROWS, TOKENIZER)]  # as Composer.load
    return [path, sidecar(path), *composer]


def check_vectors_output(
    path: str | os.PathLike, inputs: Iterable[str | os.PathLike | None], folder: bool | None = None
) -> None:
    """:func:`~ctx2static.fileio.outputs.check_writable` for vectors to be saved at ``path``, before the work.

    Each file the save writes (:func:`vector_files`) must be none of ``inputs``, and its temporary
    name must fit the filesystem; ``folder`` as there.
    """
    check_writable(path, inputs=inputs, folder=folder, beside=vector_files(path, output=True)[1:])
    if folder is not False and saves_folder(path):
        check_replaceable(Path(path), {*NATIVE_FILES, ROWS, TOKENIZER})


def check_replace(path: str | os.PathLike, maker: str, overwrite: bool) -> None:
    """Refuse to replace vectors at ``path`` that something other than ``maker`` made (``made_by``).

    Unless ``overwrite``: the same step run again replaces its own output, but ``-s ase --out
    x2static/`` must not silently take the place of the x2static vectors.
    """
    before = None if overwrite else existing_maker(path)
    if before is not None and before != maker:
        raise OutputError(
            path,
            f"{path}: holds the vectors of {before}; this run writes {maker}: pass "
            f"{spell('overwrite', True)} to "
            "replace them, or choose another output",
        )


def made_by(meta: Mapping[str, Any]) -> str:
    """What made a table, as the overwrite rule compares it: its student or combination, its last retrofit."""
    steps = meta.get("retrofit") or []
    last = steps[-1].get("method") if steps and isinstance(steps[-1], dict) else None
    combined = meta.get("combine")
    if meta.get("student"):
        student = f"student '{meta.get('student')}'"
    elif isinstance(combined, dict) and combined.get("method"):
        student = f"combine ({combined['method']})"
    else:
        student = "unknown provenance"
    return f"{student} retrofitted with {last}" if last else student


def stored_meta(path: str | os.PathLike) -> dict[str, Any] | None:
    """The metadata of the vectors saved at ``path``, without loading them.

    None: no vectors there; ``{}`` for a table without readable metadata, as another tool writes it.
    """
    path = Path(path)
    if path.is_dir():
        if not (path / "vectors.npy").exists():
            return None
        meta_path = path / "meta.json"
    elif path.is_file():
        meta_path = sidecar(path)
    else:
        return None
    try:
        data = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
    except (OSError, ValueError):
        return {}
    meta = data.get("meta", data) if isinstance(data, dict) and not path.is_dir() else data
    return meta if isinstance(meta, dict) else {}


def existing_maker(path: str | os.PathLike) -> str | None:
    """:func:`made_by` of the vectors saved at ``path`` (None: none there)."""
    meta = stored_meta(path)
    return None if meta is None else made_by(meta)
