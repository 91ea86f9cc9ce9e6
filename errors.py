"""The one exception type that reaches the user as a single line (no traceback), and its typo hint."""

import difflib
from collections.abc import Iterable


class UserError(Exception):
    """Bad input or a bad request: the message names the file and the fix."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to a mistyped ``name``, else ``""``."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
