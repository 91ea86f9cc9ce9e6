"""What the console shows of a run: its log records as plain lines on stderr.

The command line shows them for every command; a Python caller of the API gets them too, while a
call runs, unless its program set up logging of its own (``api._said_on_stderr``).
"""

from __future__ import annotations

import logging
import sys
from typing import Any


class StderrLines(logging.StreamHandler):
    """Writes each record to whatever ``sys.stderr`` is when it is emitted (one line, the message)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))

    @property
    def stream(self) -> Any:
        """``sys.stderr`` now (pytest's capture and a caller's redirect replace it between records)."""
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass
