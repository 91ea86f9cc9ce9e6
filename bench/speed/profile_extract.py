"""Where the teacher pass spends its time (issue 42): extract under cProfile, the shares by stage.

    python bench/speed/profile_extract.py --teacher minilm --precision int8 --n 4000 --threads 2 \\
        --out bench/results/profile_extract.md

One in-process ``extract`` of the first ``--n`` sentences of the corpus, read as a corpus of their
own (its vocabulary at min_count 5 and its tables scale with it), default signals, profiled;
each stage's time is the cumulative time of the functions that do it (:data:`STAGES`, chosen so
that none calls another), and "other" is the rest of the run. cProfile adds a cost to every Python
call, which weighs on the Python stages (alignment, sums) more than on the forward; a second run
without the profiler gives the true wall time, so the table says what the profiler added. A stage
above 10% of the run is worth a fix (the issue's rule).
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

import torch
from machine import SHARED_CORPUS, cpu_name

from ctx2static.pipeline.config import ExtractConfig, TeacherConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

STAGES: dict[str, list[tuple[str, str]]] = {
    "teacher forward (the model's layers)": [("pipeline/teacher.py", "_run")],
    "layers averaged, pooled into words and sentences": [
        ("pipeline/teacher.py", "_reduce"),
        ("pipeline/teacher.py", "split"),
    ],
    "padding a batch": [("pipeline/teacher.py", "_pad")],
    "tokenizer and word alignment": [("pipeline/teacher.py", "encode")],
    "vocabulary ids and occurrence marks": [
        ("pipeline/shard.py", "word_ids"),
        ("pipeline/shard.py", "mark_occurrences"),
    ],
    "corpus reading and sharding": [("pipeline/extract.py", "shard_jobs")],
    "shard arrays (offsets, contexts)": [("pipeline/shard.py", "shard_arrays")],
    "per-word sums": [("cache/writer.py", "of")],
    "shard files written (HDF5, parquet, sha256)": [("cache/writer.py", "write_shard_files")],
    "vocabulary tables (word table, token table)": [("pipeline/shard.py", "vocab_tables")],
    "cache finished (manifest, vocabulary files)": [("cache/writer.py", "finish")],
}
"""Stage -> the (file, function) pairs whose cumulative time it is."""


def stage_seconds(stats: pstats.Stats) -> dict[str, float]:
    """Each stage's cumulative seconds, summed over its functions."""
    table = stats.stats  # type: ignore[attr-defined]
    out = dict.fromkeys(STAGES, 0.0)
    for (path, _, func), (_, _, _, cum, _) in table.items():
        for stage, funcs in STAGES.items():
            if any(path.endswith(f) and func == name for f, name in funcs):
                out[stage] += cum
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teacher", default="minilm")
    ap.add_argument("--precision", default="auto")
    ap.add_argument("--backend", default="torch")
    ap.add_argument("--n", type=int, default=4000, help="sentences")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--corpus", default=str(SHARED_CORPUS / "brown.txt.xz"))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    sents = [t for _, t in itertools.islice(Corpus([args.corpus]).sentences(), args.n)]
    # the sample is the corpus, so the vocabulary and its tables scale with it as in a whole run
    sample = Path(tempfile.mkdtemp()) / "sample.txt"
    sample.write_text("".join(" ".join(t) + "\n" for t in sents), encoding="utf-8")
    corpus = Corpus([sample])
    vocab = Vocab.build(corpus, VocabConfig(min_count=5))
    teacher = Teacher.load(args.teacher, TeacherConfig(precision=args.precision, backend=args.backend))
    n_words, tokens = sum(map(len, sents)), sum(len(e.ids) for e in teacher.encode(sents))
    cfg = ExtractConfig()
    with tempfile.TemporaryDirectory() as tmp:
        extract(corpus, vocab, teacher, Path(tmp) / "warm", ExtractConfig(max_sentences=64))
        t0 = time.perf_counter()
        extract(corpus, vocab, teacher, Path(tmp) / "plain", cfg)
        plain = time.perf_counter() - t0
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.runcall(extract, corpus, vocab, teacher, Path(tmp) / "profiled", cfg)
        profiled = time.perf_counter() - t0
    secs = stage_seconds(pstats.Stats(prof))
    secs["other"] = max(profiled - sum(secs.values()), 0.0)
    sample.unlink()
    sample.parent.rmdir()
    lines = [
        f"# Where extract spends its time: {args.teacher}, {args.precision}, {args.backend}",
        "",
        f"Date: {datetime.date.today()}. Command (repository root): `python {' '.join(sys.argv)}`",
        f"Machine: {cpu_name()}, {args.threads} torch threads, torch {torch.__version__}. "
        f"Load at start: `{load}`.",
        "",
        f"{args.n:,} sentences of `{Path(args.corpus).name}` ({n_words:,} words, {tokens:,} teacher tokens, "
        f"{len(vocab):,} vocabulary words), "
        f"default signals. Without the profiler: {plain:.1f} s ({tokens / plain:,.0f} teacher tokens/s)"
        f"; profiled: {profiled:.1f} s (cProfile's cost falls on the Python stages).",
        "",
        "| stage | seconds (profiled) | share |",
        "|---|---:|---:|",
    ]
    for stage, s in sorted(secs.items(), key=lambda kv: -kv[1]):
        mark = " **(>10%)**" if s / profiled > 0.10 and not stage.startswith("teacher forward") else ""
        lines.append(f"| {stage} | {s:.2f} | {100 * s / profiled:.1f}%{mark} |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
