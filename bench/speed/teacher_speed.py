"""Teachers' extract speed on the same text, side by side in one run: corpus words a second on a CPU.

    python bench/speed/teacher_speed.py --words 30000 \\
        --run eg-int8=embeddinggemma:int8 --run eg-fp32=embeddinggemma:float32 \\
        --run mpnet-int8=mpnet:int8 --out bench/results/teacher_speed.md

Each ``--run NAME=TEACHER:PRECISION`` is ``cli.py extract`` of the first ``--words`` words of
``--corpus`` (default signals, ``--threads``), in a process of its own, one after the other; the
teacher pass's rate is the one extract prints (teacher tokens a second over its shards), and
corpus words a second are the words read over that pass's time (teacher tokens over its rate), so
teachers with different tokenizers compare on what a user's text costs. Wall seconds include
loading the teacher and the word tables. The ratio column is against the first run. Run it on a
quiet machine: the load average before each run is in the table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import ROOT, SHARED_CORPUS, argv_line, cpu_name, write_keeping_reading


def run(teacher: str, precision: str, corpus: str, words: int, threads: int, out: Path) -> dict:
    """One extract in its own process; its rate, totals and wall time."""
    cmd = [sys.executable, str(ROOT / "cli.py"), "extract", "--corpus", corpus, "--teacher", teacher]
    cmd += ["--precision", precision, "--threads", str(threads), "--max-words", str(words), "--out", str(out)]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    rate = float(re.search(r"([\d,.]+) teacher tokens/s", done.stdout).group(1).replace(",", ""))
    totals = json.loads((out / "manifest.json").read_text())["totals"]
    pass_s = totals["n_teacher_tokens"] / rate
    return {"load": load, "wall": wall, "rate": rate, "pass_s": pass_s, "words_s": totals["n_words"] / pass_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", action="append", required=True, help="NAME=TEACHER:PRECISION (repeat)")
    ap.add_argument("--words", type=int, default=30_000)
    ap.add_argument("--corpus", default=str(SHARED_CORPUS / "brown.txt.xz"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, spec in enumerate(args.run):
            name, _, rest = spec.partition("=")
            teacher, _, precision = rest.partition(":")
            r = run(teacher, precision or "auto", args.corpus, args.words, args.threads, Path(tmp) / str(i))
            rows.append((name, teacher, precision, r))
            print(
                f"{name}: {r['words_s']:,.0f} corpus words/s, {r['rate']:,.0f} teacher tokens/s", flush=True
            )
    base = rows[0][3]["words_s"]
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Teachers' extract speed on 2 CPU cores, side by side",
        "",
        f"Date: {stamp}. Machine: {cpu_name()}, {os.cpu_count()} cores. Command (repository root): "
        f"`{argv_line(['python', *sys.argv])}`.",
        "",
        f"The first {args.words:,} words of the corpus, `--threads {args.threads}`, default signals; the "
        "ratio is corpus words a second against the first row's.",
        "",
        "| run | teacher | precision | load | teacher tok/s | corpus words/s | ratio | pass s | wall s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, teacher, precision, r in rows:
        lines.append(
            f"| {name} | `{teacher}` | {precision} | {r['load']:.2f} | {r['rate']:,.0f} "
            f"| {r['words_s']:,.0f} | {r['words_s'] / base:.2f} | {r['pass_s']:.0f} | {r['wall']:.0f} |"
        )
    write_keeping_reading(args.out, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
