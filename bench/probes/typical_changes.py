"""Make each typical change of docs/contributing.md in a clean clone and list the files it touched.

    python bench/probes/typical_changes.py --out bench/results/typical_changes.md

For each change (a cache student, a teacher short name with its own assembler, a cache signal with
its extract option, an evaluation family) the clone is reset, the change is made as the
contributing guide says (new files written, rows inserted at the tables' ends), the API's types
are regenerated, and a one-line check shows the change is live (the registry finds the student,
``resolve`` the teacher, the layout the signal and ``extract``'s options its option, the suite the
family). ``git status`` then lists what was touched: files edited by hand, and the files the
generator rewrote. Tests and docs are left out (the guide names the ones to add to).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ctx2static.tests.test_contributing import TOY  # the toy student the contributing test walks

ROOT = Path(__file__).resolve().parents[2]

GENERATED = {"api_options.py", "api.pyi"}
"""What ``python -m ctx2static.api_options_gen`` rewrites."""


@dataclass(frozen=True)
class Change:
    """A typical change: files written whole, rows inserted before an anchor, and a check that it is live."""

    name: str
    new: dict[str, str]
    inserts: list[tuple[str, str, str]]  # (file, anchor: inserted before its first match, text)
    check: str  # Python run in the clone; prints what shows the change is live


TOY_FAMILY = '''
"""A toy evaluation family: the share of a word list the table holds."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ctx2static.eval.results import Score


@dataclass(frozen=True)
class ToySet:
    """Words to find."""

    name: str
    words: tuple[str, ...]


def read(path):
    """One word list, whitespace-separated."""
    return ToySet(Path(path).stem, tuple(Path(path).read_text().split()))


def coverage(vectors, bench, analogy):
    """The words the table holds."""
    return np.array([vectors.row_of(w) is not None for w in bench.words])


def evaluate(vectors, bench, analogy, only):
    """The share of the words found."""
    found = coverage(vectors, bench, analogy) & (True if only is None else only)
    return [Score(bench.name, "toyfam", "found", 100.0 * found.mean(), int(found.sum()), len(bench.words))]
'''

CHANGES = [
    Change(
        "a cache student",
        {"students/toy.py": TOY},
        [
            (
                "students/registry.py",
                "    ]\n}  # fmt: skip",
                '        StudentSpec("toy", _MODULE + "toy", Source.CACHE, "a toy", "sgns"),\n',
            )
        ],
        "from ctx2static.students.registry import load_student; print(load_student('toy').config())",
    ),
    Change(
        "a teacher short name with its own assembler",
        {},
        [
            (
                "teachers.py",
                ')\n"""Every short name',
                textwrap.indent(
                    'Teacher(\n    name="toyteacher", hub_id="example-org/toy", licence="mit",\n'
                    '    assemble="toy",\n'
                    '    model="a toy", family="encoder", params="1M", download="4 MB", on_disk="4 MB",\n'
                    '    licence_name="MIT", install="pip install toy-teacher", packages=("toy-teacher",),\n'
                    "),\n",
                    "    ",
                ),
            ),
            (
                "pipeline/models.py",
                "ASSEMBLERS: dict",
                "def _toy(t: Teacher) -> Path:\n"
                '    """The toy package\'s model folder."""\n'
                '    return Path("/nonexistent/toy-teacher")\n\n\n',
            ),
            ("pipeline/models.py", '    "gpt4all-nomic": _gpt4all_nomic,\n', '    "toy": _toy,\n'),
        ],
        "from ctx2static.pipeline.models import resolve; print(resolve('toyteacher'))",
    ),
    Change(
        "a cache signal with its own extract option",
        {},
        [
            (
                "cache/layout.py",
                "    ]\n}  # fmt: skip",
                '        Signal("occ_norm", "norms", "each occurrence\'s vector norm times N", _OCC, 1,\n'
                '               size="N"),\n',
            ),
            (
                "pipeline/config.py",
                "    shard_size: int = opt(",
                '    norms: int = opt(0, "Each occurrence\'s vector norm times N (0 = off).")\n',
            ),
            (
                "pipeline/shard.py",
                "REDUCTIONS: dict",
                "def _norms(f: Forward, n: int) -> dict[str, torch.Tensor]:\n"
                '    """Each group\'s pooled vector\'s norm, times the option\'s value."""\n'
                "    import torch\n\n"
                "    pooled = torch.bmm(f.padded.pool, f.hidden)\n"
                '    return {"occ_norm": torch.linalg.vector_norm(pooled, dim=-1) * n}\n\n\n',
            ),
            ("pipeline/shard.py", '    "attention": Reduction(', '    "norms": Reduction(_norms),\n'),
            (
                "pipeline/shard.py",
                '    "topk_ids": lambda p: per_occurrence(p, "topk_ids"),',
                '    "occ_norm": lambda p: per_occurrence(p, "occ_norm"),\n',
            ),
        ],
        "from ctx2static.cache.layout import SIGNALS; from ctx2static.api_options import ExtractOptions; "
        "print(SIGNALS['occ_norm'].setting(), 'norms' in ExtractOptions.__optional_keys__)",
    ),
    Change(
        "an evaluation family",
        {"eval/toyfam.py": TOY_FAMILY},
        [
            (
                "eval/families.py",
                "from ctx2static.eval.results import Score\n",
                "from ctx2static.eval import toyfam\n",
            ),
            (
                "eval/families.py",
                "    ]\n}  # fmt: skip",
                '        FamilySpec("toyfam", (toyfam.ToySet,), toyfam.evaluate, toyfam.coverage,\n'
                '                   read=toyfam.read, help="Word lists to find."),\n',
            ),
        ],
        "from ctx2static.eval.files import asked_for; print(asked_for(['toyfam'], {})[0])",
    ),
]


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {cwd}:\n{done.stdout}{done.stderr}")
    return done.stdout.strip()


def apply(change: Change, clone: Path) -> None:
    """Write the change's files and insert its rows, each before the first match of its anchor."""
    for rel, text in change.new.items():
        (clone / rel).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    for rel, anchor, text in change.inserts:
        path = clone / rel
        source = path.read_text(encoding="utf-8")
        at = source.find(anchor)
        if at < 0:
            raise SystemExit(f"{rel}: anchor {anchor!r} not found (the table moved: update this probe)")
        path.write_text(source[:at] + text + source[at:], encoding="utf-8")


def touched(clone: Path) -> list[str]:
    """The files ``git status`` lists as changed or new in the clone."""
    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=clone, capture_output=True, text=True
    )
    return sorted(line[3:] for line in done.stdout.splitlines() if line.strip())


def main() -> None:
    """Make each change in a fresh state of one clone; write the table of what each touched."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="The Markdown file to write.")
    args = parser.parse_args()
    head = _run(["git", "rev-parse", "--short", "HEAD"], ROOT)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ctx2static-changes-") as tmp:
        clone = Path(tmp) / "ctx2static"
        _run(["git", "clone", "--quiet", str(ROOT), str(clone)], Path(tmp))
        env = {**os.environ, "PYTHONPATH": tmp}  # the clone is the package ctx2static
        where = _run([sys.executable, "-c", "import ctx2static; print(ctx2static.__file__)"], Path(tmp), env)
        if not where.startswith(str(clone)):
            raise SystemExit(f"the clone is not the package imported ({where}): run outside the repository")
        for change in CHANGES:
            _run(["git", "checkout", "--quiet", "--", "."], clone)
            _run(["git", "clean", "--quiet", "-fd"], clone)
            apply(change, clone)
            _run([sys.executable, "-m", "ctx2static.api_options_gen"], Path(tmp), env)
            shown = _run([sys.executable, "-c", change.check], Path(tmp), env)
            files = touched(clone)
            by_hand = [f for f in files if f not in GENERATED]
            generated = [f for f in files if f in GENERATED]
            rows.append(
                f"| {change.name} | {', '.join(f'`{f}`' for f in by_hand)} | "
                f"{', '.join(f'`{f}`' for f in generated) or 'none'} | {len(files)} | `{shown[:90]}` |"
            )
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = [
        "# Typical changes: the product files each one touches",
        "",
        "Command: `python bench/probes/typical_changes.py --out bench/results/typical_changes.md`",
        "",
        f"Date: {date}; tree: {head} (a clean clone of it).",
        "",
        "Each change made in a clean clone as docs/contributing.md says; the API's types regenerated "
        "(`python -m ctx2static.api_options_gen`); `git status` lists what changed. Tests and docs "
        "left out.",
        "",
        "| change | edited by hand | rewritten by the generator | product files | the change is live |",
        "|---|---|---|---:|---|",
        *rows,
        "",
    ]
    Path(args.out).write_text("\n".join(text), encoding="utf-8")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
