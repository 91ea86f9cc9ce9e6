"""Start-up time of the student side: the core install (no torch, no transformers) against the full one and an
earlier commit, where torch was a core dependency and the contextual students imported it.

Times, in fresh processes taking turns (one warm-up each, not counted), ``python cli.py fit-student --help``
and the import of a contextual student (``import ctx2static.students.bert_sg``), which is what every
``fit-student -s bert-sg`` or ``ctx2vec`` loads before it trains; and says whether each imported torch.
The earlier commit is checked out in a temporary git worktree and run with this Python.

    python bench/speed/import_time.py --core-python CORE/bin/python [--base eb0b626] [--runs 15]
        [--out bench/results/import_time.md]

``CORE`` is a venv with this checkout installed without extras: ``python -m venv CORE &&
CORE/bin/pip install -e .``. Light (a few seconds a run); run it when the machine is quiet.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from machine import argv_line, cpu_name, write_keeping_reading

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {
    "`cli.py fit-student --help`": ["{cli}", "fit-student", "--help"],
    "`import ctx2static.students.bert_sg`": ["-c", "import ctx2static.students.bert_sg"],
}


def package_path(checkout: Path, folder: Path) -> str:
    """A folder holding ``ctx2static`` as a link to ``checkout``: PYTHONPATH for that checkout's package."""
    folder.mkdir(parents=True)
    (folder / "ctx2static").symlink_to(checkout)
    return str(folder)


def command(python: str, checkout: Path, args: list[str]) -> list[str]:
    """The command line of ``args`` for ``python`` (``{cli}`` is the checkout's cli.py)."""
    return [python, *(a.format(cli=checkout / "cli.py") for a in args)]


def run(cmd: list[str], env: dict[str, str]) -> float:
    """Seconds the command took, from start to exit."""
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def imports_torch(cmd: list[str], env: dict[str, str]) -> bool:
    """Whether the command imports torch (``-X importtime`` lists every module it imports)."""
    done = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], env=env, capture_output=True, text=True)
    return any(line.rpartition("|")[2].strip() == "torch" for line in done.stderr.splitlines())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--core-python", required=True, help="The Python of a venv with the core install.")
    ap.add_argument(
        "--base", default="eb0b626", help="The earlier commit (default: before the core install)."
    )
    ap.add_argument("--runs", type=int, default=15, help="Timed runs of each command in each install.")
    ap.add_argument("--out", type=Path, help="Write the results file here.")
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base), args.base], check=True
        )
        try:
            env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
            now_env = {**env, "PYTHONPATH": package_path(ROOT, Path(tmp) / "now")}
            base_env = {**env, "PYTHONPATH": package_path(base, Path(tmp) / "old")}
            installs = {
                f"core install (`{Path(args.core_python).parent.parent.name}`)": (
                    args.core_python,
                    ROOT,
                    now_env,
                ),
                "full install": (sys.executable, ROOT, now_env),
                f"full install at {args.base}": (sys.executable, base, base_env),
            }
            rows = []
            for label, argv in COMMANDS.items():
                cmds = {
                    name: (command(py, checkout, argv), e) for name, (py, checkout, e) in installs.items()
                }
                times: dict[str, list[float]] = {name: [] for name in cmds}
                for cmd, e in cmds.values():
                    run(cmd, e)  # warm-up: bytecode compiled, files in the page cache
                for _ in range(args.runs):
                    for name, (cmd, e) in cmds.items():
                        times[name].append(run(cmd, e))
                core = statistics.median(next(iter(times.values())))
                for name, (cmd, e) in cmds.items():
                    med = statistics.median(times[name])
                    rows.append(
                        f"| {label} | {name} | {med:.2f} | {min(times[name]):.2f} | "
                        f"{'yes' if imports_torch(cmd, e) else 'no'} | {med / core:.2f} |"
                    )
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=True)
    load_after = os.getloadavg()[0]
    cmd = "python bench/speed/import_time.py " + argv_line(
        ["--core-python", args.core_python, "--base", args.base, "--runs", str(args.runs)]
        + (["--out", str(args.out)] if args.out else [])
    )
    text = "\n".join(
        [
            "# Start-up of the student side: core install against full install",
            "",
            f"Date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Command (repository root): `{cmd}`",
            "",
            f"Machine: {platform.machine()}, {cpu_name()}, {os.cpu_count()} CPU cores (shared; load average "
            f"{load_before:.1f} at start, {load_after:.1f} at end); Python {platform.python_version()}. "
            f"{args.runs} runs of each command in each install, taking turns, after one warm-up each.",
            "",
            "| command | install | median s | min s | imports torch | median / core install |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(text)
    if args.out:
        write_keeping_reading(args.out, text)


if __name__ == "__main__":
    main()
