"""The host ceiling of extract: a near-free teacher on 1 and 2 cores, this tree against a base commit.

    python bench/speed/host_ceiling.py --base eb0b626 --out bench/results/host_ceiling.md

The teacher is a random BERT of 1 layer x 32 hidden with MiniLM's tokenizer (``random_teacher.py``):
its forward costs next to nothing, so extract's rate is the rate of its host side (reading,
vocabulary ids, tokenizer, alignment, pooling, sums, shard files), which is what a GPU waits on.
Each extract is the command line in a subprocess pinned by ``taskset`` to 1 or 2 cores
(``--threads`` alike, and 2 cores with one torch thread: :data:`WAYS`), default signals, of this
tree and of ``--base`` (a git worktree of that commit), each way's pair run back to back, the
two taking turns to go first, ``--repeats`` times;
the table keeps each one's best run (the least disturbed) and its rate as the command prints it
(teacher tokens over the shards' seconds). The reference is the tokenizer's own batch rate: the
teacher's tokenizer called as transformers exposes it (``tokenizer(lines)``), on the same lines as
extract reads them (the corpus's sentences, words joined by spaces), in batches of 1,000, on one
core. Last, this tree's extract on one core under
cProfile (``profile_extract.py``'s stages): each host stage's share. ``--real`` teachers (int8,
2 cores, the first ``--real-sentences``) check that the feeding costs a forward-bound CPU run
nothing.
A closing "## What it means" in an existing ``--out`` (written by hand after a run) is kept.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import SHARED_CORPUS, argv_line, cpu_name, write_keeping_reading

ROOT = Path(__file__).resolve().parents[2]
NEAR_FREE = ["--layers", "1", "--hidden", "32"]
WAYS = {"1 core": (1, 1), "2 cores": (2, 2), "2 cores, 1 torch thread": (2, 1)}
"""The near-free runs: cores (taskset) and torch threads (``--threads``)."""


def tokenizer_rate(teacher: Path, corpus: Path, batch: int) -> tuple[float, int]:
    """Teacher tokens/s of the tokenizer alone over the corpus's sentences, and the token count."""
    from transformers import AutoTokenizer

    from ctx2static.text.corpus import Corpus

    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    tok = AutoTokenizer.from_pretrained(teacher)
    lines = [" ".join(words) for _, words in Corpus([corpus]).sentences()]
    best, tokens = float("inf"), 0
    for _ in range(3):
        t = time.perf_counter()
        tokens = sum(
            len(ids) for i in range(0, len(lines), batch) for ids in tok(lines[i : i + batch])["input_ids"]
        )
        best = min(best, time.perf_counter() - t)
    return tokens / best, tokens


def package_link(tree: Path, work: Path, name: str) -> Path:
    """A folder holding ``ctx2static`` -> ``tree``: on PYTHONPATH it makes that tree the package."""
    link = work / f"path-{name}"
    link.mkdir(exist_ok=True)
    (link / "ctx2static").unlink(missing_ok=True)
    (link / "ctx2static").symlink_to(tree)
    return link


def run_extract(
    tree: Path, link: Path, cores: int, threads: int, teacher: str, corpus: Path, out: Path, *extra: str
) -> dict:
    """One extract pinned to ``cores`` cores: its printed rate, wall and CPU seconds (children too)."""
    shutil.rmtree(out, ignore_errors=True)
    cpus = ",".join(map(str, sorted(os.sched_getaffinity(0))[:cores]))
    env = {**os.environ, "PYTHONPATH": str(link), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = ["taskset", "-c", cpus, sys.executable, str(tree / "cli.py"), "extract", "--corpus", str(corpus)]
    cmd += ["--teacher", teacher, "--out", str(out), "--threads", str(threads), *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rate = float(re.search(r"([\d,]+) teacher tokens/s", res.stdout + res.stderr).group(1).replace(",", ""))
    shutil.rmtree(out, ignore_errors=True)
    return {"rate": rate, "wall": wall, "cpu": cpu}


def stage_shares(teacher: Path, corpus: Path) -> list[str]:
    """This tree's extract on one core under cProfile: the table of ``profile_extract.py``."""
    import profile_extract
    import torch

    from ctx2static.pipeline.teacher import Teacher
    from ctx2static.text.corpus import Corpus
    from ctx2static.text.vocab import Vocab, VocabConfig

    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    torch.set_num_threads(1)
    source = Corpus([corpus])
    plain, profiled, secs = profile_extract.profile(
        Teacher.load(str(teacher)), source, Vocab.build(source, VocabConfig())
    )
    rows = [
        f"Without the profiler: {plain:.1f} s; profiled: {profiled:.1f} s (the whole run, tables included).",
        "",
        "| stage (one core, no feeding process) | seconds (profiled) | share |",
        "|---|---:|---:|",
    ]
    rows += [
        f"| {stage} | {sec:.2f} | {100 * sec / profiled:.1f}% |"
        for stage, sec in sorted(secs.items(), key=lambda kv: -kv[1])
    ]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--base", default="eb0b626", help="the commit to compare with (today's code before the change)"
    )
    ap.add_argument("--corpus", type=Path, default=SHARED_CORPUS / "brown.txt.xz")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1000, help="lines per tokenizer call for its own rate")
    ap.add_argument(
        "--real", nargs="*", default=["minilm", "mpnet"], help="real teachers run int8 on 2 cores"
    )
    ap.add_argument("--real-sentences", type=int, default=3000)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        teacher = work / "nearfree"
        subprocess.run(
            [sys.executable, str(ROOT / "bench/speed/random_teacher.py"), *NEAR_FREE, "--out", str(teacher)],
            check=True,
            capture_output=True,
        )
        base = work / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.base], check=True
        )
        try:
            trees = {
                "this tree": (ROOT, package_link(ROOT, work, "this")),
                args.base: (base, package_link(base, work, "base")),
            }
            runs: dict[tuple[str, str], list[dict]] = {}
            real = [f"{t} int8" for t in args.real]
            for r in range(args.repeats):  # the two trees take turns going first, way by way
                order = [(name, way) for way in [*WAYS, *real] for name in list(trees)[:: 1 - 2 * (r % 2)]]
                for name, way in order:
                    tree, link = trees[name]
                    if way in WAYS:
                        cores, threads = WAYS[way]
                        got = run_extract(
                            tree, link, cores, threads, str(teacher), args.corpus, work / "cache"
                        )
                    else:
                        extra = ["--precision", "int8", "--max-sentences", str(args.real_sentences)]
                        got = run_extract(
                            tree, link, 2, 2, way.split()[0], args.corpus, work / "cache", *extra
                        )
                    print(name, way, got, flush=True)
                    runs.setdefault((name, way), []).append(got)
            tok_rate, tokens = tokenizer_rate(teacher, args.corpus, args.batch)
            shares = stage_shares(teacher, args.corpus)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    best = {k: max(v, key=lambda g: g["rate"]) for k, v in runs.items()}
    lines = [
        "# The host ceiling of extract: a near-free teacher, 1 and 2 cores, against the tokenizer's own rate",
        "",
        f"Date: {datetime.date.today()}. Command (repository root): `python {argv_line(sys.argv)}` at "
        f"{head.stdout.strip()}.",
        f"Machine: {cpu_name()}, {os.cpu_count()} cores. Load at start: `{load}`.",
        f"Corpus: `{args.corpus.name}`, {tokens:,} teacher tokens. Teacher: random BERT 1 x 32 with MiniLM's "
        f"tokenizer. Best of {args.repeats} runs each.",
        "",
        f"The tokenizer alone (batches of {args.batch:,}, one core): **{tok_rate:,.0f} teacher tokens/s**.",
        "",
        "| code | cores | torch threads | teacher tokens/s | share of the tokenizer's rate | x one core "
        "| wall s | CPU s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in trees:
        for way, (cores, threads) in WAYS.items():
            g = best[(name, way)]
            speedup, share = g["rate"] / best[(name, "1 core")]["rate"], 100 * g["rate"] / tok_rate
            lines.append(
                f"| {name} | {cores} | {threads} | {g['rate']:,.0f} | {share:.0f}% | {speedup:.2f}x "
                f"| {g['wall']:.1f} | {g['cpu']:.1f} |"
            )
    lines.append("")
    for way in [*WAYS, *real]:
        ratio = best[("this tree", way)]["rate"] / best[(args.base, way)]["rate"]
        lines.append(f"- {way}: this tree {ratio:.2f}x the base commit.")
    if real:
        lines += [
            "",
            f"## Real teachers (int8, 2 cores, 2 torch threads, the first {args.real_sentences:,} sentences)",
            "",
            "| teacher | code | teacher tokens/s | wall s | CPU s |",
            "|---|---|---:|---:|---:|",
        ]
        for way in real:
            for name in trees:
                g = best[(name, way)]
                lines.append(f"| {way} | {name} | {g['rate']:,.0f} | {g['wall']:.1f} | {g['cpu']:.1f} |")
    lines += ["", "## Each host stage's share (this tree, one core)", "", *shares]
    print("\n".join(lines))
    write_keeping_reading(args.out, "\n".join(lines))


if __name__ == "__main__":
    main()
