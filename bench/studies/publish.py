"""A study's report as its results file: both commands, the date, commit and machine, then report.md.

A study (``cli.py run STUDY --out OUT``) writes ``OUT/report.md``; copying it into ``bench/results/``
by hand loses which run it was and drifts from the run. This writes it there under a header that
names the two commands, so re-running them regenerates the file:

    python cli.py run bench/studies/glove.toml --out runs/glove
    python bench/studies/publish.py bench/studies/glove.toml runs/glove --md bench/results/glove.md

``OUT/study.toml`` (the study as it ran) must equal STUDY, so a report is never published under a
study file it did not come from. The report's figures are copied beside the results file as
``NAME_pairs.png`` and ``NAME_curves.png`` (the run folder is not in the repository); one an
earlier run drew and this report does not (no student trained two epochs) is deleted. A section
headed "## What it means" at the end of an existing results file is the reading written by hand
after a run: it is kept, below the new report.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import cpu_name, portable, write_keeping_reading

from ctx2static.study.layout import StudyLayout

ROOT = Path(__file__).resolve().parents[2]
_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([\w.-]+\.png)\)$")


def commit() -> str:
    """The checkout's short commit, marked when the tree has changes (the run is then not that commit's)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True)
    return (head.stdout.strip() or "?") + (" with local changes" if dirty.stdout.strip() else "")


def publish(study: Path, out: Path, md: Path) -> None:
    """Write ``md`` from ``out/report.md``; exit with one line when the run does not match the study."""
    report, ran = out / "report.md", out / "study.toml"
    if not report.is_file():
        sys.exit(f"{report}: missing; run the study first: python cli.py run {study} --out {out}")
    if not ran.is_file() or ran.read_text(encoding="utf-8") != study.read_text(encoding="utf-8"):
        sys.exit(f"{ran}: not the study {study} as it is now; re-run: python cli.py run {study} --out {out}")
    body, copied = [], set()
    for line in report.read_text(encoding="utf-8").splitlines():
        image = _IMAGE.match(line)
        if image and (out / image[2]).is_file():
            copy = md.with_name(f"{md.stem}_{image[2]}")
            shutil.copyfile(out / image[2], copy)
            copied.add(copy)
            line = f"![{image[1]}]({copy.name})"
        body.append(line)
    layout = StudyLayout(out)
    for figure in (layout.pairs_png.name, layout.curves_png.name):
        stale = md.with_name(f"{md.stem}_{figure}")
        if stale not in copied:
            stale.unlink(missing_ok=True)
    header = [
        f"<!-- Written by bench/studies/publish.py from {out}/report.md: regenerate, do not edit. -->",
        "",
        "Commands (repository root):",
        "",
        "```",
        f"python cli.py run {study} --out {out}",
        f"python bench/studies/publish.py {study} {out} --md {md}",
        "```",
        "",
        f"Published {time.strftime('%Y-%m-%d')} at commit {commit()}; machine: {cpu_name()}.",
        "",
    ]
    write_keeping_reading(md, portable("\n".join(header + body)))  # the run folder as given, made portable


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("study", type=Path, help="the study file that ran (bench/studies/NAME.toml)")
    ap.add_argument("out", type=Path, help="its --out folder, holding report.md and study.toml")
    ap.add_argument("--md", type=Path, required=True, help="the results file to write")
    args = ap.parse_args()
    publish(args.study, args.out, args.md)


if __name__ == "__main__":
    main()
