"""`extract --engine ray` (2 one-thread workers) against the local engine (2 threads), end to end.

Usage: PYTHONPATH=<pkg> python bench/speed/bench_ray.py --sentences 16384 --shard-size 2048 --repeats 3

Each run is `cli.py extract` in a fresh process over the same first ``--sentences`` Brown sentences
with the whole file's vocabulary (built once, passed with --vocab), the two engines alternating
first/second from one repeat to the next so load changes hit both alike. Wall seconds include
everything a user waits for: start-up (for Ray: starting a local Ray and its workers, which load
the teacher), the shards, the per-vocabulary tables. Writes bench/results/ray_extract.md with the
per-run times, the teacher tokens/s of the shard phase, the ratio, and the machine's load.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from machine import SHARED_CORPUS, argv_line, cpu_name

from ctx2static.cache import Cache
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

ROOT = Path(__file__).resolve().parents[2]
ENGINES = {
    "local, 2 threads": ["--threads", "2"],
    "ray, 2 workers x 1 thread": ["--engine", "ray", "--workers", "2", "--threads", "1"],
}


def load() -> str:
    """The machine's load line (uptime)."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run(args: argparse.Namespace, vocab: Path, out: Path, engine: list[str]) -> tuple[float, float]:
    """Wall seconds of one `cli.py extract` and its shard-phase teacher tokens/s."""
    cmd = [
        sys.executable, str(ROOT / "cli.py"), "extract", "--corpus", args.corpus, "--teacher", args.teacher,
        "--vocab", str(vocab), "--max-sentences", str(args.sentences), "--shard-size", str(args.shard_size),
        "--out", str(out), *engine,
    ]  # fmt: skip
    t0 = time.perf_counter()
    res = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    )
    wall = time.perf_counter() - t0
    if res.returncode:
        raise SystemExit(res.stderr[-3000:])
    rate = float(re.search(r"([\d,]+) teacher tokens/s", res.stdout).group(1).replace(",", ""))
    return wall, rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sentences", type=int, default=16384)
    ap.add_argument("--shard-size", type=int, default=2048)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--teacher", default="minilm")
    ap.add_argument("--corpus", default=str(SHARED_CORPUS / "brown.txt.xz"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "ray_extract.md"))
    args = ap.parse_args()
    loads = [load()]
    rows, walls = [], {name: [] for name in ENGINES}
    with tempfile.TemporaryDirectory() as tmp:
        vocab = Path(tmp) / "vocab.tsv"
        Vocab.build(Corpus([args.corpus]), VocabConfig()).save(vocab)  # what extract builds for the file
        caches = {}
        for r in range(args.repeats):
            order = list(ENGINES) if r % 2 == 0 else list(reversed(ENGINES))
            for name in order:
                out = Path(tmp) / f"{r}-{name.split(',')[0]}"
                wall, rate = run(args, vocab, out, ENGINES[name])
                walls[name].append(wall)
                rows.append(f"| {r + 1} | {name} | {wall:.1f} | {rate:,.0f} |")
                print(rows[-1], flush=True)
                caches[name] = out
            loads.append(load())
        a, b = (Cache.open(caches[n]) for n in ENGINES)
        n_tok, n_words = a.totals("n_teacher_tokens"), a.totals("n_words")
        same = a.files() == b.files()
        diff = max(
            float(np.abs(x["sent_ctx"].astype(np.float32) - y["sent_ctx"].astype(np.float32)).max())
            for x, y in zip(a.shards(["sent_ctx"]), b.shards(["sent_ctx"]), strict=True)
        )
    local, ray = (statistics.median(walls[n]) for n in ENGINES)
    cmd = "PYTHONPATH=<pkg> python bench/speed/bench_ray.py " + argv_line(sys.argv[1:])
    lines = [
        "# extract: the Ray engine against the local engine",
        "",
        f"Command: `{cmd}`",
        "",
        f"Teacher {args.teacher}, default signals, the first {args.sentences:,} sentences of "
        f"{Path(args.corpus).name} ({n_words:,} corpus tokens, {n_tok:,} teacher tokens) in shards of "
        f"{args.shard_size:,}, the whole file's vocabulary. CPU: {cpu_name()}, {os.cpu_count()} cores, "
        "shared with other work: load before and after each repeat below.",
        "",
        "| repeat | engine | wall s (end to end) | teacher tokens/s (shard phase) |",
        "|---:|---|---:|---:|",
        *rows,
        "",
        f"Median wall: local {local:.1f} s, ray {ray:.1f} s: **ray runs at {local / ray:.2f}x the local "
        f"engine's speed** end to end (bar: >= 0.9x). The two engines' caches are identical file for "
        f"file: {same} (largest difference of a sent_ctx value: {diff:.2g}; one and two torch threads "
        "may sum in another order; with the same threads the tests find them byte-identical).",
        "",
        "Load (uptime) before the first repeat and after each:",
        "",
        *[f"- `{x}`" for x in loads],
    ]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-len(loads) - 6 :]))


if __name__ == "__main__":
    main()
