"""Whole recipes side by side in one run: tokenlearn (featurize + train) against ours (extract + student).

The speed goal compares what a user waits for to get sentence vectors from a corpus and a teacher:
tokenlearn's two steps at its defaults (``tokenlearn_peer.py``, in the peers' venv) against our
``extract`` (the teacher pass at default signals, at each ``--precision`` asked for) followed by one
student fitted from that cache. Every step runs as its own child process (``peerrun.run_step``: its
own wall time and peak RSS), one after the other, on the same corpus file and teacher, so load on a
shared machine hits both recipes alike only if it is steady: run it on a quiet machine, and the
load average before and after each step is recorded beside its time.

    T=$(python -c "from ctx2static.pipeline.models import resolve; print(resolve('minilm'))")
    python bench/peers/race.py --teacher-folder "$T" --corpus "$CTX2STATIC_SHARED"/corpus/brown.txt.xz \\
        --precision int8 --precision float32 --peers-venv "$PEERS_VENV" \\
        --out runs/race-brown --md bench/results/race_brown.md

``--out`` must not exist (nothing earlier is overwritten); the Markdown table gives each step, each
recipe's total and its ratio to tokenlearn's. A closing section headed "## What it means" in an
existing ``--md`` (how the machine was kept quiet, what the numbers say) is written by hand: it is
kept below the new table.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

from peerrun import refuse_existing, run_step

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import argv_line, write_keeping_reading

ROOT = Path(__file__).resolve().parents[2]


def timed(name: str, argv: list[str], python: str = sys.executable) -> dict:
    """One step as a child process: wall seconds, peak RSS and the load average around it."""
    before = os.getloadavg()[0]
    step = run_step(name, argv, python)
    return step | {"load_before": round(before, 2), "load_after": round(os.getloadavg()[0], 2)}


def ours(args: argparse.Namespace, precision: str) -> dict[str, dict]:
    """``extract`` at ``precision`` then ``fit-student`` from its cache; each step timed."""
    folder = args.out / f"ctx2static-{precision}"
    cache, vectors = folder / "cache", folder / args.student
    extract = ["extract", "--corpus", *args.corpus, "--teacher", args.teacher, "--out", str(cache)]
    extract += ["--precision", precision, "--threads", str(args.threads)]
    fit = ["fit-student", "-s", args.student, "--cache", str(cache), "-o", str(vectors)]
    cli = str(ROOT / "cli.py")
    return {
        "extract": timed(f"extract {precision}", [cli, *extract]),
        args.student: timed(f"{args.student} {precision}", [cli, *fit]),
    }


def tokenlearn(args: argparse.Namespace) -> dict[str, dict]:
    """tokenlearn's recipe through ``tokenlearn_peer.py`` (which times its own two steps)."""
    out = args.out / "tokenlearn"
    argv = [str(ROOT / "bench" / "peers" / "tokenlearn_peer.py"), "--teacher", args.teacher_folder]
    argv += [x for c in args.corpus for x in ("--corpus", c)] + ["--out", str(out)]
    whole = timed("tokenlearn", argv, python=str(args.peers_venv / "bin" / "python"))
    steps = json.loads(out.with_name(out.name + ".timings.json").read_text())["steps"]
    return steps | {"(whole, with start-up)": whole}


def table(runs: dict[str, dict[str, dict]]) -> list[str]:
    """Markdown: every step, each recipe's total and its ratio to tokenlearn's total."""
    lines = ["| recipe | step | wall s | peak RSS MiB | load before / after |", "|---|---|---:|---:|---|"]
    totals = {}
    for recipe, steps in runs.items():
        parts = {k: v for k, v in steps.items() if not k.startswith("(")}
        totals[recipe] = sum(s["wall_s"] for s in parts.values())
        for step, s in steps.items():
            load = f"{s['load_before']} / {s['load_after']}" if "load_before" in s else ""
            lines.append(f"| {recipe} | {step} | {s['wall_s']:,.1f} | {s['peak_rss_mib']:,.0f} | {load} |")
    base = totals.get("tokenlearn")
    lines += ["", "| recipe | total wall s | tokenlearn / recipe |", "|---|---:|---:|"]
    for recipe, total in totals.items():
        ratio = f"{base / total:.2f}x" if base else ""
        lines.append(f"| {recipe} | {total:,.1f} | {ratio} |")
    return lines


RESOLVE = '"$(python -c "from ctx2static.pipeline.models import resolve; print(resolve(\'{}\'))")"'


def recorded(argv: list[str], teacher: str) -> str:
    """``argv`` as the results file records it: an installed ``--teacher-folder`` as its short name resolves.

    The folder is where this machine installed the teacher (site-packages); the same command
    elsewhere resolves the same short name, as the docstring's ``T=$(...)`` does.
    """
    pairs = enumerate(itertools.pairwise(argv))
    installed = {i + 1 for i, (a, b) in pairs if a == "--teacher-folder" and "site-packages" in b}
    return " ".join(RESOLVE.format(teacher) if i in installed else argv_line([a]) for i, a in enumerate(argv))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", nargs="+", required=True)
    ap.add_argument("--teacher", default="minilm", help="our short name for the teacher")
    ap.add_argument("--teacher-folder", required=True, help="the same teacher as a folder, for tokenlearn")
    ap.add_argument("--precision", action="append", choices=["float32", "int8"], required=True)
    ap.add_argument("--student", default="ase")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--peers-venv",
        type=Path,
        default=os.environ.get("PEERS_VENV"),
        help="the venv bench/peers/setup_peers.sh made [$PEERS_VENV]",
    )
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--md", type=Path, required=True)
    args = ap.parse_args()
    if args.peers_venv is None or not (args.peers_venv / "bin" / "python").is_file():
        ap.error(f"--peers-venv {args.peers_venv}: no bin/python; run bench/peers/setup_peers.sh VENV")
    refuse_existing(args.out)
    args.out.mkdir(parents=True)
    started = time.strftime("%Y-%m-%d %H:%M")
    runs = {"tokenlearn": tokenlearn(args)}
    for precision in args.precision:
        runs[f"ctx2static {precision} + {args.student}"] = ours(args, precision)
    (args.out / "race.json").write_text(json.dumps(runs, indent=1))
    head = [
        "# Whole recipes in one run: tokenlearn against extract + student",
        "",
        f"Command: `python bench/peers/race.py {recorded(sys.argv[1:], args.teacher)}`",
        "",
        f"Started {started}; {os.cpu_count()} cores; steps one after the other, each a child process.",
        "",
    ]
    write_keeping_reading(args.md, "\n".join(head + table(runs)))
    print(args.md.read_text())


if __name__ == "__main__":
    main()
