"""The errors that reach the user as a single line (no traceback), spoken the way their caller writes.

One option has three spellings: ``--dim 100`` on the command line, ``dim = 100`` in a study file,
``dim=100`` in a Python call. The entry points say which one their user writes
(:func:`speaking_to`; the command line is the default) and a message names an option through
:func:`spell`, so ``ctx2static.api.export(..., quantize=...)`` answers with ``quantize=``, never
``--quantize``. The message is made when the error is raised, in the style of that moment.

The kinds a caller may want to tell apart are classes, each with the fields it is about:
:class:`OptionError` (a bad option or combination: ``options``), :class:`InputError` (a file that
cannot be used: ``path``), :class:`MissingSignalError` (a cache without what a student reads:
``signals``), :class:`TeacherUnavailableError` (a teacher that cannot be loaded here: ``teacher``).
All are :class:`UserError`, which the command line prints as one line.
"""

from __future__ import annotations

import contextlib
import difflib
import enum
import json
import os
from collections.abc import Iterable, Iterator
from contextvars import ContextVar


class Style(str, enum.Enum):
    """How the user who will read an error writes an option."""

    FLAG = "flag"  # the command line: --dim 100, --vectors, --no-vectors
    KEY = "key"  # a study file: dim = 100, vectors = true
    KEYWORD = "keyword"  # the Python API: dim=100, vectors=True


_STYLE: ContextVar[Style | None] = ContextVar("ctx2static_error_style", default=None)


@contextlib.contextmanager
def speaking_to(style: Style, unless_said: bool = False) -> Iterator[None]:
    """Errors raised in the block name options in ``style`` (an entry point's user's spelling).

    ``unless_said``: only where no caller has said yet, so the API's functions speak keywords to a
    Python caller but flags to the command line that runs them.
    """
    token = _STYLE.set(_STYLE.get() if unless_said and _STYLE.get() else style)
    try:
        yield
    finally:
        _STYLE.reset(token)


def current_style() -> Style:
    """The style errors raised now are written in (the command line's unless an entry point said)."""
    return _STYLE.get() or Style.FLAG


_UNSET = object()


def spell(
    name: str,
    value: object = _UNSET,
    *,
    style: Style | None = None,
    via_set: bool = False,
    keyword: str | None = None,
) -> str:
    """Option ``name`` (a config field, ``snake_case``), with ``value`` if given, as the user writes it.

    ``spell("dim", 100)``: ``--dim 100``, ``dim = 100``, ``dim=100``; a bool is the flag's on or off
    form on the command line (``--vectors``, ``--no-vectors``); a string is quoted as TOML and
    Python quote it (``method = "concat"``, ``method='concat'``), unless it is a placeholder in
    capitals (``spell("cache", "DIR")``: ``--cache DIR``, ``cache = DIR``, ``cache=DIR``).
    ``via_set``: a student option the command line sets as ``--set init=random``; ``keyword``: the
    API's name where it is not the option's (``export(vectors, fmt, ...)`` for ``--format``).
    """
    style = style or current_style()
    if style is Style.KEYWORD and keyword:
        name = keyword
    if style is Style.FLAG and via_set:
        return f"--set {name}" if value is _UNSET else f"--set {name}={value}"
    if style is Style.FLAG:
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            return flag if value else f"--no-{name.replace('_', '-')}"
        return flag if value is _UNSET else f"{flag} {value}"
    if value is _UNSET:
        return name if style is Style.KEY else f"{name}="
    if isinstance(value, bool):
        shown = str(value).lower() if style is Style.KEY else str(value)
    elif isinstance(value, str | os.PathLike) and not str(value).isupper():  # a placeholder stays bare
        shown = json.dumps(str(value)) if style is Style.KEY else repr(str(value))
    else:
        shown = str(value)
    return f"{name} = {shown}" if style is Style.KEY else f"{name}={shown}"


class UserError(Exception):
    """Bad input or a bad request: the message names the file or option and the fix."""


class OptionError(UserError):
    """An option's value, or a combination of options, that cannot work; ``options`` names them."""

    def __init__(self, message: str, *options: str) -> None:
        super().__init__(message)
        self.options = options
        self.style = current_style()


class PathError(UserError):
    """A file or folder that stops the run as it is; ``path`` names it (the message starts with it)."""

    def __init__(self, path: object, message: str) -> None:
        super().__init__(message)
        self.path = str(path)


class InputError(PathError):
    """A file or folder given as input that cannot be used as it is (missing, damaged, misread)."""


class OutputError(PathError):
    """An output path that cannot be written as asked (taken, not writable, an input of the run)."""


class MissingSignalError(UserError):
    """A teacher cache without a signal a student reads; ``signals`` names what is missing."""

    def __init__(self, message: str, signals: Iterable[str]) -> None:
        super().__init__(message)
        self.signals = tuple(signals)


class TeacherUnavailableError(UserError):
    """A teacher that cannot be loaded here (not installed, not offline, damaged); ``teacher`` names it."""

    def __init__(self, teacher: str, message: str) -> None:
        super().__init__(message)
        self.teacher = teacher


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to a mistyped ``name``, else ``""``."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
