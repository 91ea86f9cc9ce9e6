"""Benchmark the exact top-k substitutes (`Scorer.topk`) against the plain float32 product + topk.

Usage: PYTHONPATH=... python bench/speed/bench_topk.py --n 400 --threads 2
Rows are a teacher's real last-layer states at the first subword of each word of the first N
sentences; the decoder is the teacher's substitute decoder (MiniLM: its tied input embeddings).
Writes bench/results/topk.md: microseconds per row of each way (the float32 product + topk, the
scorer's float32 blocked product and its bf16 candidates), over the whole vocabulary and over the
tokens that spell a vocabulary word (what extract uses), rotated over repeats; how many rows each
stage of the bf16 scorer settles, and whether each way returns the float32 ids.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from machine import SHARED_CORPUS, argv_line, cpu_name

from ctx2static.pipeline.bf16 import fast_bf16
from ctx2static.pipeline.models import TeacherKind
from ctx2static.pipeline.scorer import Scorer
from ctx2static.pipeline.shard import token_words
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

PLAIN = "float32 product + topk (chunks of the same size)"
CORPUS = SHARED_CORPUS / "brown.txt.xz"


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


def stage_counts(scorer: Scorer, x: torch.Tensor, k: int) -> tuple[int, int, int]:
    """Rows the bf16 scorer rescored in its first and second stage, and rows it recomputed in float32."""
    rows: dict[int, int] = {}
    full: list[int] = []
    rescore, exact = scorer._rescore, scorer._exact

    def counted(xs: torch.Tensor, cand: torch.Tensor) -> torch.Tensor:
        rows[cand.shape[1]] = rows.get(cand.shape[1], 0) + len(xs)
        return rescore(xs, cand)

    scorer._rescore = counted  # type: ignore[method-assign]
    scorer._exact = lambda xs: full.append(len(xs)) or exact(xs)  # type: ignore[method-assign]
    scorer._top_rows(x, k)
    return rows.get(k + Scorer.FIRST, 0), rows.get(k + Scorer.MARGIN, 0), sum(full)


def same_ids(a: torch.Tensor, b: torch.Tensor) -> str:
    """Whether two top-k id tables agree; where not, how many rows differ only in order (ties)."""
    rows = int((a != b).any(1).sum())
    if not rows:
        return "yes"
    swaps = int(((a != b).any(1) & (a.sort(1).values == b.sort(1).values).all(1)).sum())
    return f"{rows} rows differ, {swaps} of them only in the order of near-equal scores"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=400, help="sentences")
    ap.add_argument(
        "--k", type=int, default=11, help="top k (extract --topk 10 asks for 11: the target drops)"
    )
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--teacher", default="minilm")
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results" / "topk.md"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    teacher = Teacher.load(args.teacher)
    if teacher.kind is not TeacherKind.ENCODER:
        sys.exit("bench_topk.py: use an encoder without an MLM head (its decoder is the input embeddings)")
    sents = [t for _, t in itertools.islice(Corpus([args.corpus]).sentences(), args.n)]
    x = states(teacher, sents)
    w = teacher.model.get_input_embeddings().weight.detach().float()
    vocab = Vocab.build(Corpus([args.corpus]), VocabConfig(min_count=5))
    spelled = torch.from_numpy(np.flatnonzero(token_words(teacher, vocab, True) >= 0))
    decoders = {
        "whole vocabulary": None,
        f"tokens that spell a word of the corpus vocabulary ({len(vocab)})": spelled,
    }
    chunk = Scorer.CHUNK
    ways, scorers = {}, {}
    for label, ids in decoders.items():
        wd = w if ids is None else w[ids]

        def plain(wd: torch.Tensor = wd, ids: torch.Tensor | None = ids) -> tuple[torch.Tensor, torch.Tensor]:
            pairs = [(xs @ wd.T).topk(args.k, dim=-1) for xs in x.split(chunk)]
            rows = torch.cat([p[1] for p in pairs])
            return torch.cat([p[0] for p in pairs]), rows if ids is None else ids[rows]

        ways[(label, PLAIN)] = plain
        for blocked, way in ((False, "float32 blocked product, block maxima"), (True, "bf16 candidates")):
            sc = scorers[label] = Scorer.from_weights(w, token_ids=ids, blocked=blocked)  # the bf16 one stays
            ways[(label, f"Scorer.topk: {way}")] = lambda sc=sc: sc.topk(x, args.k)
    secs = {k: [] for k in ways}
    with torch.inference_mode():
        results = {k: f() for k, f in ways.items()}  # warm-up, and the outputs compared below
        for r in range(args.repeats):
            for name in list(ways)[r % len(ways) :] + list(ways)[: r % len(ways)]:
                t0 = time.perf_counter()
                ways[name]()
                secs[name].append(time.perf_counter() - t0)
        stages = {label: stage_counts(sc, x, args.k) for label, sc in scorers.items()}
    n = len(x)
    best = {k: min(v) / n * 1e6 for k, v in secs.items()}
    cmd = "PYTHONPATH=<pkg> python bench/speed/bench_topk.py " + argv_line(sys.argv[1:])
    fast = fast_bf16(torch.device("cpu"))
    lines = [
        "# top-k substitutes: Scorer.topk against the float32 product",
        "",
        f"Command: `{cmd}`",
        "",
        f"Teacher {args.teacher}: {n:,} rows (each word's first subword in the first {args.n} "
        f"{Path(args.corpus).name} sentences, last layer), decoder: the tied input embeddings "
        f"{tuple(w.shape)}, k = {args.k}, "
        f"{args.threads} threads, chunks of {chunk} rows, best of {args.repeats} rotated repeats. "
        f"Load at the start: `{load}`. CPU: {cpu_name()}, bf16 products "
        f"{'faster' if fast else 'slower'} than float32 (`fast_bf16`), so extract takes "
        f"{'bf16 candidates' if fast else 'the float32 blocked product'}.",
        "",
        "| decoder rows | way | us per row (best) | us per row (median) | speed-up | same ids |",
        "|---|---|---:|---:|---:|---|",
    ]
    for (label, way), v in secs.items():
        base = best[(label, PLAIN)]
        (ps, pi), (ss, si) = results[(label, PLAIN)], results[(label, way)]
        lines.append(
            f"| {label} | {way} | {best[(label, way)]:.1f} | {sorted(v)[len(v) // 2] / n * 1e6:.1f} "
            f"| {base / best[(label, way)]:.2f}x | {same_ids(pi, si)} "
            f"(scores within {float((ps - ss).abs().max()):.1e}) |"
        )
    lines += ["", "bf16 candidates, rows settled by each stage:", ""]
    for label, (first, second, full) in stages.items():
        lines.append(
            f"- {label}: proven by the first {args.k + Scorer.FIRST} candidates {first - second:,} of {n:,}; "
            f"rescored with {args.k + Scorer.MARGIN}: {second:,}; recomputed in float32: {full:,}."
        )
    lines.append("")
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
