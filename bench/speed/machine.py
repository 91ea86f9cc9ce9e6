"""What the bench scripts share: the machine a benchmark ran on, where the shared corpora lie, and the
hand-written part of a results file that a script keeps when it writes the file again."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

from ctx2static.fileio.atomic import atomic_write

# The shared folder (corpus/: brown, sotu, gcide, mini; lexicons/; README.md there) is the one path
# the benches read from the environment, so a clone anywhere finds it: $CTX2STATIC_SHARED, else
# ../shared from the repository root (the layout the study files' relative paths assume).
SHARED = Path(os.environ.get("CTX2STATIC_SHARED") or Path(__file__).resolve().parents[2].parent / "shared")
SHARED_CORPUS = SHARED / "corpus"
SHARED_LEXICONS = SHARED / "lexicons"
ROOT = Path(__file__).resolve().parents[2]


def portable(text: str) -> str:
    """``text`` with this machine's folders written as any clone has them: the shared folder as
    ``"$CTX2STATIC_SHARED"``, the checkout's own paths relative to its root.

    A results file's command is rerun by whoever reads it (``bench/regen.py``), on their machine;
    a folder elsewhere on this one stays as it is, so the results test names it.
    """
    shared = '"$CTX2STATIC_SHARED"/'
    for folder in dict.fromkeys(
        [str(SHARED.resolve()), str(SHARED), os.path.relpath(SHARED.resolve(), ROOT)]
    ):
        text = re.sub(rf"(?<![\w./-]){re.escape(folder)}/", lambda _: shared, text)
    return re.sub(rf"(?<![\w./-]){re.escape(str(ROOT))}(/|(?![\w.-]))", lambda m: "" if m[1] else ".", text)


def argv_line(argv: list[str]) -> str:
    """``argv`` as a results file's command records it: each argument quoted for the shell, portable."""
    return " ".join(portable(shlex.quote(a)) for a in argv)


def cpu_name() -> str:
    """The CPU's model name (lscpu)."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")), "?")


HAND = "## What it means"


def split_at(path: Path, heading: str) -> tuple[str, str]:
    """An earlier ``path``'s text above ``heading`` and from it on ("", "" without the file or heading)."""
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    at = text.find(heading)
    return (text[:at], text[at:]) if at >= 0 else ("", "")


def hand_section(path: Path) -> str:
    """The closing section an earlier ``path`` holds from its "## What it means" heading on, else ""."""
    return split_at(path, HAND)[1]


def write_keeping_reading(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, followed by the "## What it means" section an earlier ``path`` holds.

    A script regenerates its tables; the reading below them is written by hand after a run, so a
    re-run keeps it (to be checked against the new numbers) instead of erasing it.
    """
    reading = hand_section(path).rstrip("\n")
    with atomic_write(path, "w", encoding="utf-8") as f:
        f.write(text.rstrip("\n") + (f"\n\n{reading}" if reading else "") + "\n")
