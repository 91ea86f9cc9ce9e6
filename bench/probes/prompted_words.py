"""Prompted word vectors (issue 41): does a template around a word lift the word-alone vectors?

    python bench/probes/prompted_words.py --teachers minilm nomic --threads 2

Each word of the five avg5 similarity sets is encoded alone, as the ``word`` table does
(``pipeline/shard.py`` ``vocab_tables``: ``Teacher.encode`` of the word list, ``Teacher.forward``),
but inside each template of :data:`TEMPLATES`, and read four ways: the mean of the word's own
subword states (the ``word`` table's pooling; the template's other tokens are left out) or the mean
over all tokens (special ones included: the sentence-transformers mean pooling), each at the last
layer or at the teacher's default layer spec (``--layer auto``). The mean of the templates' unit
vectors is one more template. One forward pass per template gives every layer
(``Request(hidden_states=True)``).

Each set's pairs are split in halves by a fixed seed (``--seed``): the setting (template, pooling,
layer) with the best avg5 on the development half is chosen per teacher, and its avg5 on the
report half is the headline. The table written to ``--out`` holds both halves and, for reference
only, every pair (never used to choose). Two teachers combined: the unit vectors of each teacher's
chosen setting concatenated (and nomic's "{w}" with MiniLM's choice, issue 41's combination).
A closing section headed "## What it means" in an existing ``--out``
(the reading written by hand after a run) is kept below the new tables.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ctx2static.eval import load_benchmarks
from ctx2static.eval.benchmarks import Family, SimilaritySet
from ctx2static.eval.similarity import evaluate_similarity
from ctx2static.eval.suite import AVG5
from ctx2static.pipeline.batching import run_sorted
from ctx2static.pipeline.config import AUTO_LAYER
from ctx2static.pipeline.feed import template_inputs
from ctx2static.pipeline.models import teacher_layer
from ctx2static.pipeline.teacher import Request, Teacher, torch_threads
from ctx2static.vectors import Vectors

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import argv_line, write_keeping_reading

TEMPLATES = (
    "{w}",
    "meaning: {w}",
    "search_query: {w}",
    "search_document: {w}",
    "clustering: {w}",
    "classification: {w}",
    "the word {w}",
    "{w} is a word",
    "this is about {w}",
)
"""The word alone, Ranjan 2025's prompt, nomic's four task prefixes, three neutral carriers."""

MEAN = "mean of templates"
POOLS = ("word", "all")  # the word's own subword states / every token of the input
HALVES = ("dev", "report", "all pairs")


@dataclass(frozen=True)
class Setting:
    template: str
    pool: str
    layer: str  # "last" or the teacher's default spec

    def label(self) -> str:
        return f'"{self.template}"' if self.template != MEAN else MEAN

    def describe(self, teacher: str) -> str:
        return f"{teacher} {self.label()} ({self.pool}, {self.layer})"


def unit(m: np.ndarray) -> np.ndarray:
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)


def split_halves(benchmarks: list[SimilaritySet], seed: int) -> dict[str, list[SimilaritySet]]:
    """Each set's pairs in a development and a report half (one generator, sets in AVG5 order)."""
    rng = np.random.default_rng(seed)
    halves: dict[str, list[SimilaritySet]] = {"dev": [], "report": [], "all pairs": benchmarks}
    for b in benchmarks:
        perm = rng.permutation(len(b.pairs))
        for half, idx in (("dev", perm[: len(perm) // 2]), ("report", perm[len(perm) // 2 :])):
            idx = np.sort(idx)
            halves[half].append(SimilaritySet(b.name, [b.pairs[i] for i in idx], b.gold[idx]))
    return halves


def avg5_halves(seed: int) -> tuple[list[SimilaritySet], dict[str, list[SimilaritySet]], list[str]]:
    """The bundled avg5 sets, their halves by ``seed`` (:func:`split_halves`) and every word they hold."""
    loaded = load_benchmarks((Family.SIMILARITY,), {}, bundled=True)
    by_name = {b.name: b for b in loaded if isinstance(b, SimilaritySet)}
    benchmarks = [by_name[n] for n in AVG5]
    words = sorted({w.lower() for b in benchmarks for pair in b.pairs for w in pair})
    print(f"{len(words)} words of the avg5 sets", flush=True)
    return benchmarks, split_halves(benchmarks, seed), words


def teacher_matrices(teacher: Teacher, words: list[str], budget: int) -> dict[Setting, np.ndarray]:
    """Unit vectors of every word for each template, pooling and layer (and the mean of templates)."""
    layer_sets = {"last": [-1]}
    if teacher.layer_name != "last":
        layer_sets[f"default {teacher_layer(teacher.name, AUTO_LAYER)}"] = list(teacher.layers)
    out: dict[Setting, np.ndarray] = {}
    for template in TEMPLATES:
        t0 = time.perf_counter()
        encs = template_inputs(teacher.encoder, words, template, teacher.max_length)
        if not all(e.complete[0] for e in encs):
            raise SystemExit(f"{template}: some words lost tokens to truncation")
        outs = run_sorted(encs, budget, lambda b: teacher.forward(b, Request(hidden_states=True)))
        word = np.stack([o.hidden[0] for o in outs])  # [n, n_hidden, d]
        every = np.stack([o.hidden_mean for o in outs])
        for pool, states in (("word", word), ("all", every)):
            for name, idx in layer_sets.items():
                out[Setting(template, pool, name)] = unit(states[:, idx].mean(1)).astype(np.float32)
        print(f"  {teacher.name} {template!r}: {time.perf_counter() - t0:.0f}s", flush=True)
    for pool in POOLS:
        for name in layer_sets:
            stacked = [out[Setting(t, pool, name)] for t in TEMPLATES]
            out[Setting(MEAN, pool, name)] = unit(np.mean(stacked, 0))
    return out


def scores(
    words: list[str], matrix: np.ndarray, halves: dict[str, list[SimilaritySet]]
) -> dict[str, list[float]]:
    """Per half: Spearman x 100 of each AVG5 set, then avg5 (every word is covered)."""
    v = Vectors(words, matrix)
    res = {}
    for half, benches in halves.items():
        row = []
        for b in benches:
            s = evaluate_similarity(v, b)
            assert s.covered == s.total, f"{b.name}: {s.total - s.covered} pairs not covered"
            row.append(s.score)
        res[half] = [*row, float(np.mean(row))]
    return res


def fmt(xs: list[float]) -> str:
    return " | ".join(f"{x:.1f}" for x in xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teachers", nargs="+", default=["minilm", "nomic"])
    ap.add_argument("--seed", type=int, default=41, help="the dev/report split of each set's pairs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--token-budget", type=int, default=2048, help="padded teacher tokens per batch")
    ap.add_argument("--out", type=Path, default=Path("bench/results/prompted_words.md"))
    args = ap.parse_args()
    t_start = time.perf_counter()
    benchmarks, halves, words = avg5_halves(args.seed)

    results: dict[str, dict[Setting, dict[str, list[float]]]] = {}
    chosen: dict[str, Setting] = {}
    kept: dict[str, dict[Setting, np.ndarray]] = {}
    timing: dict[str, float] = {}
    with torch_threads(args.threads):
        for name in args.teachers:
            t0 = time.perf_counter()
            teacher = Teacher.load(name)
            mats = teacher_matrices(teacher, words, args.token_budget)
            timing[name] = time.perf_counter() - t0
            results[name] = {s: scores(words, m, halves) for s, m in mats.items()}
            chosen[name] = max(results[name], key=lambda s: results[name][s]["dev"][-1])
            keep = {chosen[name]} | {s for s in mats if s.template == "{w}"}
            kept[name] = {s: mats[s] for s in keep}
            del teacher, mats

    combos: list[tuple[str, dict[str, list[float]]]] = []
    if len(args.teachers) > 1:
        pick = {n: kept[n][chosen[n]] for n in args.teachers}
        label = " + ".join(chosen[n].describe(n) for n in args.teachers)
        combos.append((label, scores(words, np.hstack(list(pick.values())), halves)))
    if "nomic" in kept and len(args.teachers) > 1:
        # nomic's "{w}" read the way its dev half prefers among the "{w}" settings
        plain = max(
            (s for s in kept["nomic"] if s.template == "{w}"), key=lambda s: results["nomic"][s]["dev"][-1]
        )
        for other in (n for n in args.teachers if n != "nomic"):
            label = f"{plain.describe('nomic')} + {chosen[other].describe(other)}"
            combos.append(
                (label, scores(words, np.hstack([kept["nomic"][plain], kept[other][chosen[other]]]), halves))
            )

    secs = time.perf_counter() - t_start
    sizes = ", ".join(
        f"{b.name} {len(d.pairs)}/{len(r.pairs)}"
        for b, d, r in zip(benchmarks, halves["dev"], halves["report"], strict=True)
    )
    head = " | ".join(AVG5)
    lines = [
        "# Prompted word vectors: templates, pooling and layer for the word-alone vectors",
        "",
        f"Date: {datetime.date.today()}. Command (repository root): `python {argv_line(sys.argv)}`",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores (shared), "
        f"{args.threads} torch thread(s), float32. Total {secs / 60:.1f} min; teacher passes "
        + ", ".join(f"{n} {t / 60:.1f} min" for n, t in timing.items())
        + f" ({len(TEMPLATES)} templates x {len(words):,} words each).",
        "",
        f"Every word of the avg5 sets ({len(words):,}, lower-cased) encoded alone inside each template, "
        "with the product's teacher code (`Teacher.encode` / `Teacher.forward`, as the `word` table). "
        "Pooling `word`: mean of the word's own subword states (the `word` table's pooling; the template's "
        "other tokens left out); `all`: mean over every token incl. [CLS]/[SEP] (the sentence-transformers "
        'mean pooling; for "{w}" the two differ only by the special tokens). Layer `last`, or the '
        "teacher's default (`--layer auto`, 1: = every layer but the embeddings, averaged). "
        f'"{MEAN}": mean of the unit vectors of all {len(TEMPLATES)} templates. Every pair covered.',
        "",
        f"Split: each set's pairs are permuted by `numpy.random.default_rng({args.seed})` (one generator, "
        f"sets in the order {', '.join(AVG5)}); the first half (floor) is the development half, the rest the "
        f"report half (dev/report pairs: {sizes}). The setting is chosen per teacher on the dev half's "
        "avg5 only; the report half is the headline; `all pairs` is for comparison with issue 41's table "
        "and was never used to choose. Spearman x100.",
        "",
        "## Chosen settings (report half: the headline)",
        "",
        f"| teacher, setting | half | {head} | avg5 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in args.teachers:
        s = chosen[name]
        for half in HALVES:
            lines.append(
                f"| {name} {s.label()} ({s.pool}, {s.layer}) | {half} | {fmt(results[name][s][half])} |"
            )
    for label, res in combos:
        for half in HALVES:
            lines.append(f"| {label}, unit vectors concatenated | {half} | {fmt(res[half])} |")
    for name in args.teachers:
        lines += [
            "",
            f"## {name}: every setting (avg5 per half; sorted by dev)",
            "",
            "| template | pooling | layer | dev avg5 | report avg5 | all pairs avg5 | report: " + head + " |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for s, res in sorted(results[name].items(), key=lambda kv: -kv[1]["dev"][-1]):
            lines.append(
                f"| {s.label()} | {s.pool} | {s.layer} | {res['dev'][-1]:.1f} | {res['report'][-1]:.1f} | "
                f"{res['all pairs'][-1]:.1f} | {fmt(res['report'][:-1])} |"
            )
    print("\n".join(lines))
    write_keeping_reading(args.out, "\n".join(lines))


if __name__ == "__main__":
    main()
