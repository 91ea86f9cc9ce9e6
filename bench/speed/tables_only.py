"""The word tables with and without the pass over the sentences, side by side in one run.

    python bench/speed/tables_only.py --teacher embeddinggemma --precision int8 \\
        --full-words 200000 --out bench/results/tables_only.md

Three extracts of ``--corpus`` (default: the shared corpus, 7.3M words), each in a process of its
own, one after the other, then the ``embed`` (or ``--student``) fit from each: ``--tables-only`` on
the whole corpus, and on its first ``--full-words`` words both ways (``--tables-only`` and the
full extract, which runs the pass over the sentences), where the two tables are checked to be the
same bits. The full extract of the whole corpus is not run again here (over an hour on 2 cores:
``teacher_speed.md``). Run it on a quiet machine: the load average before each step is in the table.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from machine import ROOT, SHARED_CORPUS, argv_line, cpu_name, write_keeping_reading

CORPUS = [str(SHARED_CORPUS / f"{name}.txt.xz") for name in ("brown", "sotu", "gcide")]


def timed(cmd: list[str]) -> tuple[float, float]:
    """Run ``cmd`` in its own process; the load average before it and its wall seconds."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return load, time.perf_counter() - start


def step(args: argparse.Namespace, cache: Path, words: int, tables_only: bool) -> dict:
    """Extract (timed) then fit ``--student`` from it (timed); the row and the table's path."""
    cmd = [sys.executable, str(ROOT / "cli.py"), "-q", "extract", "--teacher", args.teacher]
    cmd += ["--precision", args.precision, "--out", str(cache)]
    cmd += [a for c in args.corpus for a in ("--corpus", c)]
    cmd += ["--max-words", str(words)] * bool(words) + ["--tables-only"] * tables_only
    load, extract_s = timed(cmd)
    table = cache.parent / f"{cache.name}-{args.student}"  # a native folder: vectors.npy as fitted
    fit = [
        sys.executable,
        str(ROOT / "cli.py"),
        "-q",
        "fit-student",
        "-s",
        args.student,
        "--cache",
        str(cache),
    ]
    fit_s = timed([*fit, "-o", str(table)])[1]
    with (cache / "vocab.tsv").open("rb") as fh:  # a word a line
        n_words = sum(1 for _ in fh)
    return {"load": load, "extract_s": extract_s, "fit_s": fit_s, "vocab": n_words, "table": table}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--teacher", default="embeddinggemma")
    ap.add_argument("--precision", default="int8")
    ap.add_argument("--student", default="embed", choices=("embed", "word", "token"))
    ap.add_argument("--corpus", action="append", help="corpus files (repeat; default: brown, sotu, gcide)")
    ap.add_argument("--full-words", type=int, default=200_000, help="words of the side-by-side pair")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    args.corpus = args.corpus or CORPUS
    with tempfile.TemporaryDirectory() as tmp:
        rows = {
            "tables-only, whole corpus": step(args, Path(tmp) / "whole", 0, True),
            f"tables-only, first {args.full_words:,} words": step(
                args, Path(tmp) / "part", args.full_words, True
            ),
            f"full extract, first {args.full_words:,} words": step(
                args, Path(tmp) / "full", args.full_words, False
            ),
        }
        part, full = list(rows.values())[1:]
        same = np.array_equal(*(np.load(r["table"] / "vectors.npy") for r in (part, full)))
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    whole = rows["tables-only, whole corpus"]
    lines = [
        f"# The `{args.student}` table with and without the pass over the sentences "
        f"({args.teacher} {args.precision})",
        "",
        f"Date: {stamp}. Machine: {cpu_name()}, {os.cpu_count()} cores. Command (repository root): "
        f"`{argv_line(['python', *sys.argv])}`.",
        "",
        "| run | load | vocabulary | extract s | fit s | total s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        times = [r["extract_s"], r["fit_s"], r["extract_s"] + r["fit_s"]]
        lines.append(
            f"| {name} | {r['load']:.2f} | {r['vocab']:,} | " + " | ".join(f"{t:,.0f}" for t in times) + " |"
        )
    ratio = (full["extract_s"] + full["fit_s"]) / (part["extract_s"] + part["fit_s"])
    lines += [
        "",
        f"- the two tables of the first {args.full_words:,} words: "
        + ("the same bits" if same else "DIFFERENT"),
        f"- on those words the full route took {ratio:.1f}x the tables-only one; the whole corpus "
        f"tables-only: {(whole['extract_s'] + whole['fit_s']) / 60:.1f} min",
    ]
    write_keeping_reading(args.out, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
