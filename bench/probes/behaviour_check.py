"""The default study's outputs from this tree against a base commit's: what a refactor may not change.

    python bench/probes/behaviour_check.py --base 683a433 --work runs/behaviour \
        --out bench/results/behaviour_check.md

Runs the main job (``python cli.py run``: the bundled default study, packaged MiniLM) three times:
once from ``--base`` (a git worktree of it, imported through a link) and twice from this tree.
Each output's vectors are compared bit for bit and its scores number for number. An output that
is deterministic (the same bits from two runs of this tree) must equal the base's; the students
trained by Hogwild threads (sgns, cbow, and bert-sg and ctx2vec, whose updates race too) differ
from run to run, so for them the table sets the base's change beside this tree's own spread.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import argv_line, cpu_name, write_keeping_reading

ROOT = Path(__file__).resolve().parents[2]


def run_default_study(tree: Path, link: Path, out: Path) -> None:
    """The main job of ``tree`` (imported through ``link``) into ``out``."""
    env = {**os.environ, "PYTHONPATH": str(link), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    code = f"from ctx2static.cli import main; main(['run', '--out', {str(out)!r}])"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, cwd=out.parent)


def scores(path: Path) -> dict[tuple[str, str], tuple[float, int]]:
    """(benchmark, metric) -> (score, covered) of one eval file."""
    rows = json.loads(path.read_text())["scores"]
    return {(r["benchmark"], r["metric"]): (r["score"], r["covered"]) for r in rows}


def compare(a: Path, b: Path, name: str) -> tuple[bool, float, bool]:
    """Whether output ``name`` has the same bits in runs ``a`` and ``b``, the largest difference, and
    whether its scores (own items and common items) are the same numbers."""
    ma, mb = (np.load(run / "vectors" / name / "vectors.npy") for run in (a, b))
    words_a, words_b = ((run / "vectors" / name / "vocab.tsv").read_bytes() for run in (a, b))
    same_words = words_a == words_b
    same = same_words and ma.shape == mb.shape and np.array_equal(ma, mb)
    diff = float(np.abs(ma - mb).max()) if ma.shape == mb.shape else float("inf")
    evals = [f"{name}.json", f"{name}.common.json"]
    same_scores = all(scores(a / "eval" / e) == scores(b / "eval" / e) for e in evals)
    return same, diff, same_scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="the commit before the change")
    ap.add_argument("--work", type=Path, required=True, help="a folder for the worktree and the three runs")
    ap.add_argument("--out", type=Path, required=True, help="the results file")
    args = ap.parse_args()
    work = args.work.resolve()
    ours = {"base", "this", "this-again", "base-tree", "path-base", "path-this", "path-this-again"}
    if work.exists() and not work.is_dir():
        sys.exit(f"--work {args.work}: not a folder; give a new or empty folder")
    if work.is_dir() and not {p.name for p in work.iterdir()} <= ours:
        sys.exit(f"--work {args.work}: holds files this script did not make; give a new or empty folder")
    shutil.rmtree(work, ignore_errors=True)  # an earlier check's runs only: each run starts afresh
    work.mkdir(parents=True)
    base = work / "base-tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.base], check=True)
    try:
        runs = {}
        for label, tree in (("base", base), ("this", ROOT), ("this-again", ROOT)):
            link = work / f"path-{label}"
            link.mkdir()
            (link / "ctx2static").symlink_to(tree)
            runs[label] = work / label
            run_default_study(tree, link, runs[label])
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    git = ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]
    head = subprocess.run(git, capture_output=True, text=True)
    lines = [
        "# Behaviour check: the default study from this tree against a base commit",
        "",
        f"Command: `python bench/probes/behaviour_check.py {argv_line(sys.argv[1:])}`",
        "",
        f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; this tree: "
        f"{head.stdout.strip()}, base: {args.base}; machine: {cpu_name()}.",
        "",
        "| output | deterministic (two runs of this tree: same bits) | base == this tree (bits) | "
        "base == this tree (scores) | largest difference, base vs this | largest difference, this vs again |",
        "|---|---|---|---|---:|---:|",
    ]
    for name in sorted(p.name for p in (runs["this"] / "vectors").iterdir()):
        again, spread, _ = compare(runs["this"], runs["this-again"], name)
        same, diff, same_scores = compare(runs["base"], runs["this"], name)
        lines.append(
            f"| {name} | {'yes' if again else 'no'} | {'yes' if same else '**no**' if again else 'no'} | "
            f"{'yes' if same_scores else 'no'} | {diff:.3g} | {spread:.3g} |"
        )
    lines += [
        "",
        "A deterministic output that differs from the base is a change of behaviour (bold). The others "
        "are trained by racing threads: their difference from the base is to be read against the "
        "spread between two runs of the same tree.",
        "",
    ]
    write_keeping_reading(args.out, "\n".join(lines))
    print(f"{args.out}: written")


if __name__ == "__main__":
    main()
