"""The command that makes a results file, read from the file itself: printed, or run with ``--run``.

Each results file carries the command that made it (bench/README.md): a ``Command:`` line with the
command in backticks, or a ``Command(s)...:`` line followed by a code block (fenced or indented).
This script reads it, so whoever holds the repository finds the command without reading the file:

    python bench/regen.py bench/results/verify.md          # prints the command
    python bench/regen.py bench/results/verify.md --run    # prints it, runs it after you type yes

``--run`` hands the command to ``bash`` from the repository root only once the user, shown it
exactly, types ``yes``: a results file is text anyone could have edited (``python -c 1; touch X``
would run as written). Why ask rather than run only what parses as this project's own
``python cli.py ...`` or ``python bench/....py``: the recorded commands are shell scripts
(variables, ``$(...)``, a peers' virtual environment, ``pip install``), which such a parser would
refuse, and even those two forms run whatever their arguments say (``--out`` anywhere, ``$(...)``
inside a quoted argument); what bash will run is shown instead, for a person to judge. A command
holding a control or invisible character is refused, shown or not: a carriage return, a terminal
escape or a right-to-left override can make the text on the screen differ from what runs.

It refuses, saying why, where the command cannot be rerun as it is: the script it names is deleted
(its file or bench/README.md names the commit that holds it), it needs hardware this machine lacks
(a CUDA GPU, a CPU with AMX), or it holds a placeholder to fill in (``CORE``, ``<commit>``, ``...``).
``PYTHONPATH=<pkg>`` in a command meant "this checkout": it is dropped, the editable install is it.
The shared folder is ``$CTX2STATIC_SHARED``, set to the benches' default when unset.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "speed"))
from machine import SHARED

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "bench" / "README.md"
HEAD_LINES = 60  # a results file names its command near the top; a hand-written reading comes later
COMMAND_WORD = re.compile(r"\bCommands?\b")
THIS_CHECKOUT = re.compile(r"PYTHONPATH=<(pkg|after)> ")
PLACEHOLDER = re.compile(
    r"<[^<>\s][^<>\n]*>|(?<![\w.])\.\.\.(?![\w.])|\b(CORE|PKG|SCRATCH|COMMIT)\b|WORD\.bin"
)
SCRIPT = re.compile(r"\b((?:bench/)?[\w/]+\.py)\b")


@dataclass
class Regen:
    """What makes one results file: its commands, and why they cannot run here (empty when they can)."""

    commands: list[str] = field(default_factory=list)
    why_not: list[str] = field(default_factory=list)


def readme_row(name: str) -> tuple[str, str]:
    """bench/README.md's "made by" and "regenerate with" cells for the results file ``name``."""
    table = README.read_text(encoding="utf-8").split("## Results files", 1)[-1]
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == 3 and f"`{name}`" in cells[0]:
            return cells[1], cells[2]
    return "", ""


def _block(lines: list[str]) -> list[str]:
    """The code block that starts ``lines`` (after blank lines): fenced, or indented four spaces."""
    rest = list(lines)
    while rest and not rest[0].strip():
        rest.pop(0)
    fenced = bool(rest) and rest[0].startswith("```")
    body = []
    for ln in rest[1:] if fenced else rest:
        if (fenced and ln.startswith("```")) or (not fenced and not ln.startswith("    ")):
            break
        body.append(ln if fenced else ln[4:])
    return body


def _joined(block: list[str]) -> str:
    """A block's lines as one script, its backslash continuations joined."""
    return re.sub(r"\\\n\s*", "", "\n".join(block)).strip()


def commands(text: str) -> list[str]:
    """The commands a results file's head gives: a ``Command:`` line's backticks, or the block after it.

    The label's sentence may run over a few lines before its colon; a head with no label but a
    code block that runs python is read as that block (the label was left out, not the command).
    """
    lines = text.splitlines()
    head = lines[:HEAD_LINES]
    for i, line in enumerate(head):
        label = COMMAND_WORD.search(line)
        if not label:
            continue
        inline = [c for c in re.findall(r"`([^`]+)`", line[label.start() :]) if "python" in c]
        if inline:
            return inline
        colon = next((j for j in range(i, min(i + 4, len(lines))) if lines[j].rstrip().endswith(":")), None)
        block = _block(lines[colon + 1 :]) if colon is not None else []
        if block:
            return [_joined(block)]
    for i, line in enumerate(head):
        if line.startswith("```"):
            block = _block(lines[i:])
            if "python" in "\n".join(block):
                return [_joined(block)]
    return []


def readme_commands(how: str) -> list[str]:
    """The commands in bench/README.md's "regenerate with" cell, where it gives them whole."""
    return [c for c in re.findall(r"`([^`]+)`", how) if c.startswith("python ")]


def has_amx() -> bool:
    """Whether this CPU has AMX tiles (Linux: the cpuinfo flags)."""
    info = Path("/proc/cpuinfo")
    return info.is_file() and "amx_tile" in info.read_text(encoding="utf-8", errors="replace")


def regen(path: Path) -> Regen:
    """What makes ``path``, and why it cannot be rerun here as it is."""
    made_by, how = readme_row(path.name)
    found = commands(path.read_text(encoding="utf-8")) or readme_commands(how)
    out = Regen([THIS_CHECKOUT.sub("", c) for c in found])
    if not out.commands:
        out.why_not.append(f"{path.name} names no command; bench/README.md says: {how or 'nothing'}")
    if "deleted" in made_by:
        out.why_not.append(f"made by a deleted script ({made_by}): {how}")
    for command in out.commands:
        for script in SCRIPT.findall(command):
            if script.startswith("bench/") and not (ROOT / script).is_file() and "deleted" not in made_by:
                out.why_not.append(f"{script} is deleted: its results file names the commit that holds it")
        for hole in {m.group(0) for m in PLACEHOLDER.finditer(command)}:
            out.why_not.append(f"the command holds a placeholder to fill in: {hole} (bench/README.md: {how})")
        if "--device cuda" in command or "gpu" in path.parent.parts:
            out.why_not.append("needs a CUDA GPU (bench/gpu/README.md: one device call)")
        hidden = next((i for i, ch in enumerate(command) if _hidden(ch)), None)
        if hidden is not None:
            out.why_not.append(
                f"the command holds U+{ord(command[hidden]):04X} at character {hidden}, a control or "
                "invisible character: what the screen shows may not be what runs"
            )
    if "AMX" in made_by and not has_amx():
        out.why_not.append(f"needs a CPU with AMX, which this one lacks ({made_by})")
    out.why_not = list(dict.fromkeys(out.why_not))
    return out


def _hidden(ch: str) -> bool:
    """Whether ``ch`` is a control or format character (escape, carriage return, U+202E) but \\n or \\t."""
    return ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf")


def shown(command: str) -> str:
    """``command`` as printed: a hidden character as its code (``\\x1b``), which no terminal acts on."""
    return "".join(ch.encode("unicode_escape").decode() if _hidden(ch) else ch for ch in command)


def confirmed() -> bool:
    """Whether the user, shown the command(s) above, types yes (anything else, or no input: no)."""
    print(
        "run the command(s) above with bash from the repository root? type yes to run: ",
        end="",
        file=sys.stderr,
    )
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() == "yes"  # "" at the end of the input


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", type=Path, help="a results file (bench/results/NAME.md)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--dry", action="store_true", help="print the command (the default)")
    mode.add_argument(
        "--run", action="store_true", help="print it, then run it from the repository root once you type yes"
    )
    args = ap.parse_args(argv)
    if not args.file.is_file():
        print(f"{args.file}: no such results file", file=sys.stderr)
        return 2
    found = regen(args.file)
    for command in found.commands:
        print(shown(command))
    for why in found.why_not:
        print(f"cannot rerun as it is: {why}", file=sys.stderr)
    if found.why_not:
        return 1
    if not args.run:
        return 0
    if not confirmed():
        print("not run (only yes runs it)", file=sys.stderr)
        return 1
    env = {**os.environ, "CTX2STATIC_SHARED": os.environ.get("CTX2STATIC_SHARED") or str(SHARED)}
    for command in found.commands:
        done = subprocess.run(["bash", "-e", "-c", command], cwd=ROOT, env=env)
        if done.returncode:
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
