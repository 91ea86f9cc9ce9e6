"""Teacher tokens/s in float32 against int8 dynamic quantization (`extract --precision int8`), and how close.

Usage: PYTHONPATH=... python bench/speed/bench_precision.py --n 4000 --rounds 3 --threads 2
Writes bench/results/precision_int8.md. Each teacher (MiniLM, MPNet) is loaded twice, float32 and
int8, and runs the extract teacher pass (default signals: sentence means and subword-pooled vectors,
length-sorted batches of --token-budget) over the same Brown sentences; rounds alternate the order of
the two precisions, so load changes on a shared machine hit both alike. Quality: cosines between the
float32 and int8 outputs (sentence means and word vectors of the default layers) on --quality-n
sentences.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from machine import SHARED_CORPUS, cpu_name

from ctx2static.pipeline.batching import run_sorted
from ctx2static.pipeline.config import ExtractConfig, TeacherConfig
from ctx2static.pipeline.int8 import full_range_activations, quantized_engine
from ctx2static.pipeline.teacher import Request, Teacher, TeacherOutput
from ctx2static.text.corpus import Corpus

PRECISIONS = ("float32", "int8")


def teacher_pass(teacher: Teacher, encs: list, budget: int) -> tuple[list[TeacherOutput], float]:
    """The extract teacher pass at default signals over ``encs``; its outputs and wall seconds."""
    t0 = time.perf_counter()
    outs = run_sorted(encs, budget, lambda b: teacher.forward(b, Request(vectors=True)))
    return outs, time.perf_counter() - t0


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosines of two [n, d] arrays."""
    return (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)


def describe(cos: np.ndarray) -> str:
    """Mean, 1st percentile and minimum of some cosines."""
    return f"{cos.mean():.5f} / {np.percentile(cos, 1):.5f} / {cos.min():.5f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4000, help="Brown sentences timed")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--teachers", nargs="+", default=["minilm", "mpnet"])
    ap.add_argument("--quality-n", type=int, default=200, help="sentences for the cosines")
    ap.add_argument("--corpus", default=str(SHARED_CORPUS / "brown.txt.xz"))
    ap.add_argument("--token-budget", type=int, default=ExtractConfig.token_budget)
    ap.add_argument("--note", default="", help="a line added under the results (e.g. the machine's load)")
    ap.add_argument(
        "--out", default=str(Path(__file__).resolve().parents[1] / "results" / "precision_int8.md")
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    sents = [t for _, t in itertools.islice(Corpus([args.corpus]).sentences(), args.n)]
    speed_rows, quality_rows, round_rows = [], [], []
    for name in args.teachers:
        teachers = {p: Teacher.load(name, TeacherConfig(precision=p)) for p in PRECISIONS}
        encs = teachers["float32"].encode(sents)
        n_tok = sum(len(e.ids) for e in encs)
        for t in teachers.values():
            teacher_pass(t, encs[:64], args.token_budget)  # warm-up
        secs: dict[str, list[float]] = {p: [] for p in PRECISIONS}
        for r in range(args.rounds):
            for p in PRECISIONS if r % 2 == 0 else PRECISIONS[::-1]:
                secs[p].append(teacher_pass(teachers[p], encs, args.token_budget)[1])
            round_rows.append(
                f"| {name} | {r + 1} | {n_tok / secs['float32'][-1]:,.0f} | {n_tok / secs['int8'][-1]:,.0f} "
                f"| {secs['float32'][-1] / secs['int8'][-1]:.2f}x |"
            )
        med = {p: statistics.median(s) for p, s in secs.items()}
        speed_rows.append(
            f"| {name} | {len(sents):,} | {n_tok:,} | {n_tok / med['float32']:,.0f} | "
            f"{n_tok / med['int8']:,.0f} | {med['float32'] / med['int8']:.2f}x |"
        )
        q = encs[: args.quality_n]
        outs = {p: teacher_pass(t, q, args.token_budget)[0] for p, t in teachers.items()}
        means = [np.stack([o.mean for o in outs[p]]) for p in PRECISIONS]
        words = [np.concatenate([o.vectors for o in outs[p]]) for p in PRECISIONS]
        quality_rows.append(
            f"| {name} | {len(q)} | {describe(cosines(*means))} | {len(words[0]):,} | "
            f"{describe(cosines(*words))} |"
        )
        del teachers
    cmd = "PYTHONPATH=<pkg> python bench/speed/bench_precision.py " + shlex.join(sys.argv[1:])
    lines = [
        "# Teacher pass: float32 against int8 dynamic quantization (`extract --precision int8`)",
        "",
        f"Command: `{cmd}`",
        "",
        f"Date: {datetime.date.today()}. Machine: {cpu_name()} ({platform.machine()}), {args.threads} "
        f"threads, torch {torch.__version__}, quantized engine {quantized_engine()} with "
        f"{8 if full_range_activations() else 7}-bit activations. Load at start: "
        f"`{load}`.",
        "",
        f"Teacher tokens/s of the extract teacher pass at default signals (sentence means and "
        f"subword-pooled vectors, token budget {args.token_budget}), median of {args.rounds} rounds "
        "alternating the order of the two precisions:",
        "",
        "| teacher | sentences | teacher tokens | float32 tok/s | int8 tok/s | int8 / float32 |",
        "|---|---:|---:|---:|---:|---:|",
        *speed_rows,
        "",
        "Each round:",
        "",
        "| teacher | round | float32 tok/s | int8 tok/s | ratio |",
        "|---|---:|---:|---:|---:|",
        *round_rows,
        "",
        "Cosines between the float32 and int8 outputs (mean / 1st percentile / minimum), default layers:",
        "",
        "| teacher | sentences | sentence means | word occurrences | word vectors |",
        "|---|---:|---|---:|---|",
        *quality_rows,
    ]
    if args.note:
        lines += ["", args.note]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
