"""Benchmark the exact top-k substitutes (`Scorer.topk`) against the plain float32 product + topk.

Usage: PYTHONPATH=... python bench/bench_topk.py --n 400 --threads 2
Rows are a teacher's real last-layer states at the first subword of each word of the first N
sentences; the decoder is the teacher's substitute decoder (MiniLM: its tied input embeddings).
Writes bench/results/topk.md: microseconds per row of each way, alternated over repeats, how many
rows each stage of the scorer settles, and a check that both ways return the same ids.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import time
from pathlib import Path

import torch

from ctx2static.pipeline.corpus import Corpus
from ctx2static.pipeline.teacher import Family, Scorer, Teacher

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "brown.txt.xz"


def states(teacher: Teacher, sents: list[list[str]]) -> torch.Tensor:
    """The decoder's input at each word's first subword (encoders: the last hidden layer)."""
    rows = []
    with torch.inference_mode():
        for i in range(0, len(sents), 64):
            encs = teacher.encode(sents[i : i + 64])
            for e in encs:
                out = teacher.model(input_ids=torch.from_numpy(e.ids)[None], output_hidden_states=True)
                rows.append(out.hidden_states[-1][0, e.first_token()[e.first_token() >= 0]])
    return torch.cat(rows).float().contiguous()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=400, help="sentences")
    ap.add_argument(
        "--k", type=int, default=11, help="top k (extract --topk 10 asks for 11: the target drops)"
    )
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--teacher", default="minilm")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "topk.md"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    teacher = Teacher.load(args.teacher)
    if teacher.family is not Family.ENCODER:
        sys.exit("bench_topk.py: use an encoder without an MLM head (its decoder is the input embeddings)")
    sents = [t for _, t in itertools.islice(Corpus([CORPUS]).sentences(), args.n)]
    x = states(teacher, sents)
    w = teacher.model.get_input_embeddings().weight.detach().float()
    scorer = Scorer.of(w)
    chunk = scorer.CHUNK

    def plain() -> tuple[torch.Tensor, torch.Tensor]:
        pairs = [(xs @ w.T).topk(args.k, dim=-1) for xs in x.split(chunk)]
        return torch.cat([p[0] for p in pairs]), torch.cat([p[1] for p in pairs])

    ways = {
        "float32 product + topk (chunks of the same size)": plain,
        "Scorer.topk": lambda: scorer.topk(x, args.k),
    }
    secs = {k: [] for k in ways}
    with torch.inference_mode():
        results = {k: f() for k, f in ways.items()}  # warm-up, and the outputs compared below
        for r in range(args.repeats):
            for name in list(ways)[r % 2 :] + list(ways)[: r % 2]:
                t0 = time.perf_counter()
                ways[name]()
                secs[name].append(time.perf_counter() - t0)
        stage_rows: dict[int, int] = {}
        rescore = scorer._rescore

        def counted(xs: torch.Tensor, cand: torch.Tensor) -> torch.Tensor:
            stage_rows[cand.shape[1]] = stage_rows.get(cand.shape[1], 0) + len(xs)
            return rescore(xs, cand)

        scorer._rescore = counted  # type: ignore[method-assign]
        exact = scorer._exact
        full: list[int] = []
        scorer._exact = lambda xs: full.append(len(xs)) or exact(xs)  # type: ignore[method-assign]
        scorer.topk(x, args.k)
    (ps, pi), (ss, si) = results.values()
    n = len(x)
    first = stage_rows.get(args.k + scorer.FIRST, 0)
    second = stage_rows.get(args.k + scorer.MARGIN, 0)
    best = {k: min(v) / n * 1e6 for k, v in secs.items()}
    plain_us, scorer_us = best.values()
    cmd = "PYTHONPATH=<pkg> python bench/bench_topk.py " + " ".join(sys.argv[1:])
    lines = [
        "# top-k substitutes: Scorer.topk against the float32 product",
        "",
        f"Command: `{cmd}`",
        "",
        f"Teacher {args.teacher}: {n:,} rows (each word's first subword in the first {args.n} Brown "
        f"sentences, last layer), decoder {tuple(w.shape)} (tied input embeddings), k = {args.k}, "
        f"{args.threads} threads, chunks of {chunk} rows, best of {args.repeats} alternated repeats. "
        f"Load at the start: `{load}`.",
        "",
        "| way | us per row (best) | us per row (median) |",
        "|---|---:|---:|",
        *[f"| {k} | {best[k]:.1f} | {sorted(v)[len(v) // 2] / n * 1e6:.1f} |" for k, v in secs.items()],
        "",
        f"Speed-up: {plain_us / scorer_us:.2f}x. Same ids as the float32 top-k: {bool(torch.equal(pi, si))}; "
        f"largest score difference {float((ps - ss).abs().max()):.1e} (float32 rounding).",
        f"Rows proven by the first {args.k + scorer.FIRST} candidates: {first - second:,} of {n:,}; "
        f"rescored with {args.k + scorer.MARGIN}: {second:,}; recomputed in float32: {sum(full):,}.",
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
