"""Teacher tokens/s of torch and ONNX Runtime, float32 and int8, side by side, and their closeness to float32.

Usage: PYTHONPATH=... python bench/speed/onnx_teacher.py --n 4000 --rounds 3 --threads 2
(``--teachers nomic --paths "torch int8" --out ...``: one teacher, torch float32 beside int8 only).
Writes bench/results/onnx_teacher.md (``--out``). Each teacher is loaded four times (torch float32,
``--precision int8``, ``--backend onnx``, ``--backend onnx --precision int8``; the ONNX graphs are
exported into the user cache on first use, which the load seconds show) and runs the extract
teacher pass at default signals (sentence means and subword-pooled vectors, length-sorted batches of
``--token-budget``) over the same Brown sentences. Rounds rotate the order of the four, so load
changes on a shared machine hit each alike. Quality: cosines of sentence means and word vectors
(default layers) to torch float32 on ``--quality-n`` sentences.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime
import torch
from machine import SHARED_CORPUS, argv_line, cpu_name

from ctx2static.pipeline.batching import run_sorted
from ctx2static.pipeline.config import ExtractConfig, TeacherConfig
from ctx2static.pipeline.int8 import full_range_activations
from ctx2static.pipeline.teacher import Request, Teacher, TeacherOutput
from ctx2static.text.corpus import Corpus

PATHS = {
    "torch float32": {"backend": "torch", "precision": "float32"},
    "torch int8": {"backend": "torch", "precision": "int8"},
    "onnx float32": {"backend": "onnx", "precision": "float32"},
    "onnx int8": {"backend": "onnx", "precision": "int8"},
}
BASE = "torch float32"


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


def measure(
    name: str, sents: list[list[str]], args: argparse.Namespace
) -> tuple[list[str], list[str], list[str]]:
    """One teacher's speed rows, per-round rows and quality rows."""
    paths = {p: PATHS[p] for p in args.paths}
    teachers, load_s = {}, {}
    for path, kw in paths.items():
        t0 = time.perf_counter()
        teachers[path] = Teacher.load(name, TeacherConfig(threads=args.threads, **kw))
        load_s[path] = time.perf_counter() - t0
    encs = teachers[BASE].encode(sents)
    n_tok = sum(len(e.ids) for e in encs)
    for t in teachers.values():
        teacher_pass(t, encs[:64], args.token_budget)  # warm-up
    secs: dict[str, list[float]] = {p: [] for p in paths}
    order = list(paths)
    round_rows = []
    for r in range(args.rounds):
        for p in order[r % len(order) :] + order[: r % len(order)]:
            secs[p].append(teacher_pass(teachers[p], encs, args.token_budget)[1])
        round_rows.append(
            f"| {name} | {r + 1} | " + " | ".join(f"{n_tok / secs[p][-1]:,.0f}" for p in paths) + " |"
        )
    med = {p: statistics.median(s) for p, s in secs.items()}
    speed_rows = [
        f"| {name} | {p} | {len(sents):,} | {n_tok:,} | {n_tok / med[p]:,.0f} | {med[BASE] / med[p]:.2f}x "
        f"| {load_s[p]:.1f} |"
        for p in paths
    ]
    q = encs[: args.quality_n]
    outs = {p: teacher_pass(t, q, args.token_budget)[0] for p, t in teachers.items()}
    means = {p: np.stack([o.mean for o in o_]) for p, o_ in outs.items()}
    words = {p: np.concatenate([o.vectors for o in o_]) for p, o_ in outs.items()}
    quality_rows = [
        f"| {name} | {p} | {len(q)} | {describe(cosines(means[p], means[BASE]))} | {len(words[p]):,} "
        f"| {describe(cosines(words[p], words[BASE]))} |"
        for p in paths
        if p != BASE
    ]
    return speed_rows, round_rows, quality_rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4000, help="Brown sentences timed")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--teachers", nargs="+", default=["minilm", "mpnet"])
    ap.add_argument("--paths", nargs="+", choices=list(PATHS), default=list(PATHS), help=f"always has {BASE}")
    ap.add_argument("--quality-n", type=int, default=200, help="sentences for the cosines")
    ap.add_argument("--corpus", default=str(SHARED_CORPUS / "brown.txt.xz"), help="the Brown corpus file")
    ap.add_argument("--token-budget", type=int, default=ExtractConfig.token_budget)
    ap.add_argument("--note", default="", help="a line added under the results (e.g. the machine's load)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "onnx_teacher.md"))
    args = ap.parse_args()
    args.paths = list(dict.fromkeys([BASE, *args.paths]))
    torch.set_num_threads(args.threads)
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    sents = [t for _, t in itertools.islice(Corpus([args.corpus]).sentences(), args.n)]
    speed_rows, round_rows, quality_rows = [], [], []
    for name in args.teachers:
        s, r, q = measure(name, sents, args)
        speed_rows += s
        round_rows += r
        quality_rows += q
    cmd = "PYTHONPATH=<pkg> python bench/speed/onnx_teacher.py " + argv_line(sys.argv[1:])
    lines = [
        "# Teacher pass: torch and ONNX Runtime, float32 and int8 (`extract --backend`, `--precision`)",
        "",
        f"Command: `{cmd}`",
        "",
        f"Date: {datetime.date.today()}. Machine: {cpu_name()} ({platform.machine()}), {args.threads} "
        f"threads, torch {torch.__version__}, onnxruntime {onnxruntime.__version__}, int8 activations "
        f"{8 if full_range_activations() else 7}-bit. Load at start: `{load}`.",
        "",
        f"Teacher tokens/s of the extract teacher pass at default signals (sentence means and "
        f"subword-pooled vectors, token budget {args.token_budget}), median of {args.rounds} rounds "
        f"rotating the order of the {len(args.paths)} paths; load: seconds to load the teacher "
        "(an ONNX path's first load exports its graph):",
        "",
        "| teacher | path | sentences | teacher tokens | tok/s | / torch float32 | load s |",
        "|---|---|---:|---:|---:|---:|---:|",
        *speed_rows,
        "",
        "Each round (tok/s):",
        "",
        "| teacher | round | " + " | ".join(args.paths) + " |",
        "|---|---:|" + "---:|" * len(args.paths),
        *round_rows,
        "",
        "Cosines to torch float32 (mean / 1st percentile / minimum), default layers:",
        "",
        "| teacher | path | sentences | sentence means | word occurrences | word vectors |",
        "|---|---|---:|---|---:|---|",
        *quality_rows,
    ]
    if args.note:
        lines += ["", args.note]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
