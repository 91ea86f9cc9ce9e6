"""Where the teacher pass spends its time (issue 42): extract under cProfile, the shares by stage.

    python bench/speed/profile_extract.py --teachers minilm mpnet --precision int8 --n 4000 --threads 2 \\
        --out bench/results/profile_extract.md

One in-process ``extract`` of the first ``--n`` sentences of the corpus, read as a corpus of their
own (its vocabulary at min_count 5 and its tables scale with it), default signals. The shards are
profiled: each stage's time is the cumulative time of the functions that do it
(:data:`SHARD_STAGES`, none calling another), the signal arrays and the batching glue by
difference; the vocabulary tables (one more teacher pass, over the vocabulary's words) are timed
by the clock, and the rest of the run (reading, manifest) is what remains. cProfile adds a cost to
every Python call, which weighs on the Python stages (alignment, sums) more than on the forward; a second run
without the profiler gives the true wall time, so the table says what the profiler added. A stage
above 10% of the run is worth a fix (the issue's rule).
A closing section headed "## What it means" in an existing ``--out`` (the reading written by hand
after a run) is kept below the new tables.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import itertools
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from machine import SHARED_CORPUS, argv_line, cpu_name, write_keeping_reading

from ctx2static.pipeline import shard
from ctx2static.pipeline.config import ExtractConfig, TeacherConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.feed import Prepared
from ctx2static.pipeline.shard import ShardMaker
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

SHARD_STAGES: dict[str, list[tuple[str, str]]] = {
    "teacher forward (the model's layers)": [("pipeline/teacher.py", "_run")],
    "layers averaged, pooled into words and sentences": [("pipeline/teacher.py", "_reduce")],
    "padding a batch": [("pipeline/batching.py", "host_batch"), ("pipeline/teacher.py", "_padded")],
    "tokenizer and word alignment": [("pipeline/align.py", "encode")],
    "vocabulary ids and occurrence marks": [
        ("pipeline/feed.py", "word_ids"),
        ("pipeline/feed.py", "mark_occurrences"),
    ],
    "per-word sums": [("cache/writer.py", "of")],
    "shard files written (HDF5, parquet, sha256)": [("cache/writer.py", "write_shard_files")],
}
"""Stage of a shard -> the (file, function) pairs whose cumulative time it is (none calls another)."""

SIGNALS = "signal arrays (offsets, sentence means, contexts)"
GLUE = "batching and the occurrence rows"
PACKING = "a shard's prepared inputs packed (what a feeding process hands over)"


def cumulative(stats: pstats.Stats, funcs: list[tuple[str, str]]) -> float:
    """Summed cumulative seconds of ``funcs``."""
    table = stats.stats  # type: ignore[attr-defined]
    return sum(
        cum
        for (path, _, func), (_, _, _, cum, _) in table.items()
        if any(path.endswith(f) and func == name for f, name in funcs)
    )


def shard_seconds(stats: pstats.Stats) -> dict[str, float]:
    """Each stage's seconds within the shards; the packing, signal arrays and batching glue by difference.

    A shard is prepared (``Prepared.of``: ids, tokenizer, alignment, occurrence marks, the batches
    padded on the host), then its teacher pass runs each batch's forward (``launch_wanted``: the
    device copy, the model, pooling), puts its rows in place and sums them by word.
    """
    out = {stage: cumulative(stats, funcs) for stage, funcs in SHARD_STAGES.items()}
    at = {
        name: cumulative(stats, [(path, name)])
        for path, name in [
            ("pipeline/shard.py", "teacher_pass"),
            ("pipeline/teacher.py", "launch_wanted"),
            ("pipeline/teacher.py", "_run"),
            ("pipeline/teacher.py", "_reduce"),
            ("pipeline/teacher.py", "_padded"),
            ("pipeline/feed.py", "of"),
            ("pipeline/feed.py", "word_ids"),
            ("pipeline/feed.py", "mark_occurrences"),
            ("pipeline/align.py", "encode"),
            ("pipeline/batching.py", "host_batch"),
            ("pipeline/shard.py", "shard_arrays"),
        ]
    }
    inside_forward = at["_run"] + at["_reduce"] + at["_padded"]
    inside_prepare = at["word_ids"] + at["mark_occurrences"] + at["encode"] + at["host_batch"]
    out[PACKING] = max(at["of"] - inside_prepare, 0.0)
    out[GLUE] = max(at["launch_wanted"] - inside_forward, 0.0) + max(
        at["teacher_pass"] - at["launch_wanted"] - out["per-word sums"], 0.0
    )
    out[SIGNALS] = max(at["shard_arrays"] - at["teacher_pass"], 0.0)
    return out


def profile(teacher: Teacher, corpus: Corpus, vocab: Vocab) -> tuple[float, float, dict[str, float]]:
    """Wall seconds without and with the profiler, and each stage's seconds in the profiled run."""
    cfg = ExtractConfig()
    prof = cProfile.Profile()
    spent = {"shards": 0.0, "tables": 0.0}
    make, prepare, tables = ShardMaker.make, Prepared.__dict__["of"], shard.vocab_tables

    def profiled(fn: Any) -> Any:
        def run(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return prof.runcall(fn, *a, **k)
            finally:
                spent["shards"] += time.perf_counter() - t

        return run

    def timed_tables(*a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return tables(*a, **k)
        finally:
            spent["tables"] += time.perf_counter() - t

    with tempfile.TemporaryDirectory() as tmp:
        extract(corpus, vocab, teacher, Path(tmp) / "warm", ExtractConfig(max_sentences=64))
        t0 = time.perf_counter()
        extract(corpus, vocab, teacher, Path(tmp) / "plain", cfg)
        plain = time.perf_counter() - t0
        ShardMaker.make = profiled(make)  # type: ignore[method-assign]
        Prepared.of = profiled(Prepared.of)  # type: ignore[method-assign]  # a shard prepared in this process
        shard.vocab_tables = timed_tables
        t0 = time.perf_counter()
        try:
            extract(corpus, vocab, teacher, Path(tmp) / "profiled", cfg)
        finally:
            ShardMaker.make, shard.vocab_tables = make, tables  # type: ignore[method-assign]
            Prepared.of = prepare  # type: ignore[method-assign]
        profiled = time.perf_counter() - t0
    secs = shard_seconds(pstats.Stats(prof))
    secs["other, within the shards"] = max(spent["shards"] - sum(secs.values()), 0.0)
    secs["vocabulary tables (the word table's own pass, the token table)"] = spent["tables"]
    secs["corpus reading, manifest, cache files (outside the shards)"] = max(
        profiled - spent["shards"] - spent["tables"], 0.0
    )
    return plain, profiled, secs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teachers", nargs="+", default=["minilm", "mpnet"])
    ap.add_argument("--precision", default="int8")
    ap.add_argument("--backend", default="torch")
    ap.add_argument("--n", type=int, default=4000, help="sentences")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--corpus", default=str(SHARED_CORPUS / "brown.txt.xz"))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    sents = [t for _, t in itertools.islice(Corpus([args.corpus]).sentences(), args.n)]
    lines = [
        f"# Where extract spends its time ({args.precision}, {args.backend})",
        "",
        f"Date: {datetime.date.today()}. Command (repository root): `python {argv_line(sys.argv)}`",
        f"Machine: {cpu_name()}, {args.threads} torch threads, torch {torch.__version__}. "
        f"Load at start: `{load}`.",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        # the sample is the corpus, so the vocabulary and its tables scale with it as in a whole run
        sample = Path(tmp) / "sample.txt"
        sample.write_text("".join(" ".join(t) + "\n" for t in sents), encoding="utf-8")
        corpus = Corpus([sample])
        vocab = Vocab.build(corpus, VocabConfig(min_count=5))
        for name in args.teachers:
            teacher = Teacher.load(name, TeacherConfig(precision=args.precision, backend=args.backend))
            tokens = sum(len(e.ids) for e in teacher.encode(sents))
            plain, profiled, secs = profile(teacher, corpus, vocab)
            lines += [
                "",
                f"## {name}",
                "",
                f"{args.n:,} sentences of `{Path(args.corpus).name}` ({sum(map(len, sents)):,} words, "
                f"{tokens:,} teacher tokens, {len(vocab):,} vocabulary words), default signals. Without the "
                f"profiler: {plain:.1f} s ({tokens / plain:,.0f} teacher tokens/s); "
                f"profiled: {profiled:.1f} s.",
                "",
                "| stage | seconds (profiled) | share |",
                "|---|---:|---:|",
            ]
            for stage, sec in sorted(secs.items(), key=lambda kv: -kv[1]):
                big = sec / profiled > 0.10 and not stage.startswith("teacher forward")
                lines.append(f"| {stage} | {sec:.2f} | {100 * sec / profiled:.1f}%{' **(>10%)**' * big} |")
            del teacher
    print("\n".join(lines))
    write_keeping_reading(args.out, "\n".join(lines))


if __name__ == "__main__":
    main()
