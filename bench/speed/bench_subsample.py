"""bert-sg and ctx2vec with frequent-word subsampling against plain SGNS: speed and scores, one run.

Every row is ``python -m ctx2static.cli fit-student`` in its own process at the same ``--threads``,
run one after the other in rounds (sgns, then each student at each ``sample``), so the machine's
state is shared alike; tokens/s is the tool's own figure (corpus tokens x epochs over the fit,
``<out>.meta.json``), CPU seconds are the child's user + system time. The vectors of the first
round are then scored with ``cli.py eval --family similarity --family analogy`` (common items).

    python bench/speed/bench_subsample.py --cache CACHE --corpus CORPUS --threads 2 \
        --sample 0 --sample 1e-4 --sample 3e-5 --sample 1e-5 --work DIR --out RESULT.md

A "## What it means" section at the end of an existing ``--out`` (the reading written by hand after
a run) is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import argv_line, cpu_name, write_keeping_reading

BENCHES = [
    ("avg5", "mean spearman"),
    ("simlex999", "spearman"),
    ("men3k", "spearman"),
    ("ws353", "spearman"),
    ("rw", "spearman"),
    ("rg65", "spearman"),
    ("google", "3CosAdd acc"),
    ("msr", "3CosAdd acc"),
]


def cli(args: list[str], log: Path) -> tuple[float, float]:
    """Run ``python -m ctx2static.cli ARGS``; returns (wall seconds, child CPU seconds)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(log, "w") as out:
        subprocess.run(
            [sys.executable, "-m", "ctx2static.cli", *args], env=env, stdout=out, stderr=out, check=True
        )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - start, cpu


def fit(name: str, student: str, source: list[str], threads: int, work: Path, sets: list[str]) -> dict:
    """One fit-student run; its meta (tokens/s, train seconds) plus wall and CPU seconds."""
    out = work / f"{name}.bin"
    extra = [a for s in sets for a in ("--set", s)]
    wall, cpu = cli(["fit-student", "-s", student, *source, "--threads", str(threads), "--no-compose",
                     *extra, "-o", str(out)], work / f"{name}.log")  # fmt: skip
    meta = json.loads(Path(f"{out}.meta.json").read_text())["meta"]
    return {"name": name, "file": out, "wall": wall, "cpu": cpu, **meta, **meta.get("train", {})}


def scores(files: list[Path], work: Path) -> dict[str, dict[tuple[str, str], float]]:
    """Scores x100 of each file on the items all of them cover, by (benchmark, metric)."""
    out = work / "eval.json"
    cli(["eval", "--family", "similarity", "--family", "analogy", "--json", str(out), *map(str, files)],
        work / "eval.log")  # fmt: skip
    results = json.loads(out.read_text())["results"]
    return {
        Path(key).stem: {(r["benchmark"], r["metric"].split(" (")[0]): r["score"] for r in rows}
        for key, rows in results.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True, help="Teacher cache with --vectors.")
    ap.add_argument("--corpus", action="append", required=True, help="The cache's corpus files (for sgns).")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sample", type=float, action="append", help="Subsampling thresholds (repeat).")
    ap.add_argument("--student", action="append", help="Students (repeat; default bert-sg and ctx2vec).")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE for the cache students (repeat).")
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--report-only", action="store_true", help="Rewrite the table from the work folder.")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    samples, students = args.sample or [0.0, 1e-4], args.student or ["bert-sg", "ctx2vec"]
    record = work / "runs.json"
    if args.report_only:
        runs = json.loads(record.read_text())
        write(args, runs, scores([Path(x["file"]) for x in runs if x["name"].endswith("-r0")], work))
        return
    runs: list[dict] = []
    for r in range(args.rounds):
        corpus = [a for c in args.corpus for a in ("--corpus", c)]
        runs.append(fit(f"sgns-r{r}", "sgns", corpus, args.threads, work, []))
        for student in students:
            for s in samples:
                name = f"{student}-{s:g}-r{r}"
                runs.append(
                    fit(
                        name,
                        student,
                        ["--cache", args.cache],
                        args.threads,
                        work,
                        [*args.set, f"sample={s:g}"],
                    )
                )
                print(f"{name}: {runs[-1]['tokens_per_second']:,} tokens/s", flush=True)
                record.write_text(json.dumps(runs, default=str))
    scored = scores([x["file"] for x in runs if x["name"].endswith("-r0")], work)
    write(args, runs, scored)


def write(args: argparse.Namespace, runs: list[dict], scored: dict) -> None:
    """The Markdown table: median tokens/s over rounds, its ratio to sgns's and each round's, scores."""
    by: dict[str, list[dict]] = {}
    for x in runs:
        by.setdefault(x["name"].rsplit("-r", 1)[0], []).append(x)
    sgns = [x["tokens_per_second"] for x in by["sgns"]]  # one per round
    head = ["run", "centres", "tokens/s", "vs sgns", "per round", "CPU s", *[b for b, _ in BENCHES]]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for name, xs in by.items():
        tps = [x["tokens_per_second"] for x in xs]
        got = scored.get(f"{name}-r0", {})
        cells = [
            name,
            f"{xs[0].get('centres', ''):,}" if "centres" in xs[0] else "",
            f"{statistics.median(tps):,.0f}",
            f"{statistics.median(tps) / statistics.median(sgns):.2f}",
            " / ".join(f"{t / s:.2f}" for t, s in zip(tps, sgns, strict=True)),
            f"{statistics.median([x['cpu'] for x in xs]):.1f}",
            *[f"{got[k]:.1f}" if got.get(k) is not None else "" for k in BENCHES],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    cmd = "python bench/speed/bench_subsample.py " + argv_line(sys.argv[1:])
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    title = "# bert-sg and ctx2vec against SGNS: frequent-word subsampling of the centres, speed and scores"
    when = f"Date: {time.strftime('%Y-%m-%d')}. Machine: {cpu_name()}, {os.cpu_count()} cores"
    when += f"; after the run: `{load}`"
    text = "\n".join([title, "", when, "", "```", cmd, "```", "", *lines, ""])
    write_keeping_reading(Path(args.out), text)
    print(text)


if __name__ == "__main__":
    main()
