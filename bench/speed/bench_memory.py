"""Peak memory does not grow with the corpus: fit-student and extract's driver on 1x and 4x the data.

Usage (from the repository root):

    PYTHONPATH=<pkg> python bench/speed/bench_memory.py students --cache CACHE \\
        --work WORK --out bench/results/memory_students.md
    PYTHONPATH=<pkg> python bench/speed/bench_memory.py extract --sentences 4096 --shard-size 512 \\
        --work /tmp/mem-extract --out bench/results/memory_extract.md

``students``: builds (once) a cache of the given cache's corpus repeated 4 times without a teacher
(the same shard files recorded again under new indices through the cache writer: hard links where
the filesystem allows, else copies), then runs ``cli.py fit-student`` for the cache students (ase,
x2static, sentence, bert-sg, ctx2vec) on both under ``/usr/bin/time -v``. ``extract``: ``cli.py
extract`` on the first ``--sentences`` Brown sentences and on that text 4 times over (one
vocabulary for both), with the local engine and with the Ray engine's driver (joining a Ray
started by this script, so that ``/usr/bin/time`` measures the driver alone). Both keep a closing
"## What it means" section of an earlier ``--out`` (the reading written by hand) below the new
numbers. ``peak``: one ``cli.py`` command (everything after ``--``) under ``/usr/bin/time -v`` with
the package at ``--pkg`` first on PYTHONPATH (a checkout before a change, one after), its row
appended to ``--out`` (peak RSS, wall, user and system CPU seconds). Peak RSS is ``Maximum
resident set size``.

    PYTHONPATH=<pkg> python bench/speed/bench_memory.py peak --label "extract minilm, Brown" \
        --pkg /tmp/before --out /tmp/rows.md -- extract --corpus brown.txt.xz --teacher minilm ...
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from machine import SHARED_CORPUS, argv_line, write_keeping_reading

from ctx2static.cache import Cache
from ctx2static.cache.layout import shard_name
from ctx2static.cache.writer import CacheWriter, WordSums, write_shard_files
from ctx2static.options import field_names
from ctx2static.students.registry import student_config
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

ROOT = Path(__file__).resolve().parents[2]
STUDENTS = ["ase", "x2static", "sentence", "bert-sg", "ctx2vec"]


def repeat_cache(src: Path, dst: Path, times: int) -> Path:
    """A cache of ``src``'s corpus ``times`` over: its shards recorded again under new indices.

    Each copy's first shard carries the whole per-word sums of ``src`` (the others none), so the
    sums are ``times`` those of ``src`` and every mean is the same.
    """
    cache = Cache.open(src)
    ident = {k: v for k, v in cache.manifest["identity"].items() if k != "format"}
    writer = CacheWriter.open(dst, {**ident, "repeated": times}, cache.vocab)
    if writer.complete:
        return dst
    sums, counts = cache.word_sums()
    everything = WordSums(np.arange(len(cache.vocab)), sums, counts)
    nothing = WordSums(np.zeros(0, np.int64), np.zeros((0, sums.shape[1])), np.zeros(0, np.int64))
    records = cache.manifest["shards"]
    for index in range(writer.n_shards, times * len(records)):
        record = records[index % len(records)]
        stats = {k: v for k, v in record.items() if k.startswith("n_")}
        files = _link_or_write(cache, record, dst, index)
        writer.record_shard(index, files, stats, everything if index % len(records) == 0 else nothing)
    vocab = cache.vocab_arrays()
    tables = {k: v for k, v in vocab.items() if k not in ("occ_sum", "occ_count")}
    writer.finish(tables, cache.teacher_tokens(), cache.teacher_tokenizer())
    return dst


def _link_or_write(cache: Cache, record: dict, dst: Path, index: int) -> dict[str, str]:
    """Shard ``record``'s files in ``dst`` as shard ``index``: hard links, else its arrays written again."""
    try:
        files = {}
        for name, digest in record["files"].items():
            new = name.replace(record["name"], shard_name(index))
            (dst / new).unlink(missing_ok=True)
            os.link(cache.folder / name, dst / new)
            files[new] = digest
        return files
    except OSError:  # another filesystem
        shard = cache.shard(record["index"])
        return write_shard_files(dst, index, shard.arrays, shard.attention)


def time_v(cmd: list[str], env: dict[str, str] | None = None) -> tuple[dict[str, float], str]:
    """``cmd`` under /usr/bin/time -v: peak RSS (MiB), wall, user and system seconds; and its stdout."""
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", **(env or {})}
    res = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env)
    if res.returncode:
        raise SystemExit(f"{' '.join(cmd)}\n{res.stderr[-3000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", res.stderr).group(1)) / 1024
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", res.stderr).group(1)
    cpu = {
        k: float(re.search(rf"{k} time \(seconds\): ([\d.]+)", res.stderr).group(1))
        for k in ("User", "System")
    }
    secs = sum(float(x) * 60**i for i, x in enumerate(reversed(wall.split(":"))))
    return {"rss": rss, "wall": secs, "user": cpu["User"], "sys": cpu["System"]}, res.stdout


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Peak RSS (MiB) and wall seconds of ``cmd`` under /usr/bin/time -v; and its stdout."""
    got, out = time_v(cmd)
    return got["rss"], got["wall"], out


def load() -> str:
    """The machine's load line (uptime)."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def table(rows: list[tuple[str, float, float, float, float]]) -> list[str]:
    """Markdown rows: what, peak RSS 1x and 4x, the ratio, wall seconds 1x and 4x."""
    lines = ["| run | peak RSS 1x (MiB) | peak RSS 4x (MiB) | 4x / 1x | wall 1x (s) | wall 4x (s) |"]
    lines.append("|---|---:|---:|---:|---:|---:|")
    for what, r1, r4, w1, w4 in rows:
        lines.append(f"| {what} | {r1:,.0f} | {r4:,.0f} | {r4 / r1:.3f} | {w1:,.0f} | {w4:,.0f} |")
    return lines


def students(args: argparse.Namespace) -> list[str]:
    """fit-student on the cache and on its 4x repeat."""
    src = Path(args.cache)
    x4 = repeat_cache(src, Path(args.work) / "x4", 4)
    out = Path(args.work) / "vectors"
    out.mkdir(parents=True, exist_ok=True)
    rows, loads = [], [load()]
    for name in args.students:
        res = []
        for tag, cache in (("1x", src), ("4x", x4)):
            cmd = [sys.executable, str(ROOT / "cli.py"), "fit-student", "-s", name, "--cache", str(cache)]
            has_threads = "threads" in field_names(type(student_config(name, {})))
            opts = [*args.student_args.split(), *(["--threads", str(args.threads)] if has_threads else [])]
            res.append(timed([*cmd, "-o", str(out / f"{name}-{tag}.bin"), *opts]))
            print(name, tag, res[-1][:2], flush=True)
        rows.append((name, res[0][0], res[1][0], res[0][1], res[1][1]))
        loads.append(load())
    c1, c4 = Cache.open(src), Cache.open(x4)
    return [
        f"Caches: `{src}` ({c1.totals('n_words'):,} corpus tokens, {c1.n_shards} shards, signals "
        f"{', '.join(c1.signals)}) and the same repeated 4 times ({c4.totals('n_words'):,} corpus tokens, "
        f"{c4.n_shards} shards; built by `repeat_cache` in this script). fit-student with default options "
        f"{args.student_args} and --threads {args.threads} (where the student has threads).",
        "",
        *table(rows),
        "",
        "Load (uptime) before the first student and after each:",
        "",
        *[f"- `{x}`" for x in loads],
    ]


def extract(args: argparse.Namespace) -> list[str]:
    """extract's driver (local engine: the whole process) on a corpus and on it 4 times over."""
    import ray

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    text = []
    for _, toks in itertools.islice(Corpus([args.corpus]).sentences(), args.sentences):
        text.append(" ".join(toks))
    one, four = work / "x1.txt", work / "x4.txt"
    one.write_text("\n".join(text) + "\n")
    four.write_text("\n\n".join(["\n".join(text)] * 4) + "\n")
    vocab = work / "vocab.tsv"
    Vocab.build(Corpus([one]), VocabConfig()).save(vocab)
    ray.init(num_cpus=2, include_dashboard=False)  # the Ray engine's drivers join it
    address = ray.get_runtime_context().gcs_address
    engines = {
        "local engine (teacher in the process), 2 threads": ["--threads", "2"],
        "ray engine: the driver (2 workers x 1 thread)": [
            "--engine", "ray", "--address", address, "--workers", "2", "--threads", "1",
        ],
    }  # fmt: skip
    rows, loads = [], [load()]
    for name, opts in engines.items():
        res = []
        for tag, corpus in (("1x", one), ("4x", four)):
            out = work / f"{name.split()[0]}-{tag}"
            cmd = [
                sys.executable, str(ROOT / "cli.py"), "extract", "--corpus", str(corpus), "--teacher",
                args.teacher, "--vocab", str(vocab), "--shard-size", str(args.shard_size), "--out", str(out),
            ]  # fmt: skip
            res.append(timed([*cmd, *opts]))
            print(name, tag, res[-1][:2], flush=True)
        rows.append((name, res[0][0], res[1][0], res[0][1], res[1][1]))
        loads.append(load())
    ray.shutdown()
    n1 = Cache.open(work / "local-1x").totals("n_words")
    return [
        f"Corpus: the first {args.sentences:,} sentences of {Path(args.corpus).name} ({n1:,} corpus tokens) "
        f"and the same text 4 times over; teacher {args.teacher}, default signals, shards of "
        f"{args.shard_size:,} sentences ({Cache.open(work / 'local-1x').n_shards} and "
        f"{Cache.open(work / 'local-4x').n_shards} shards), one vocabulary for both (--vocab).",
        "",
        *table(rows),
        "",
        "Load (uptime) before the first run and after each engine:",
        "",
        *[f"- `{x}`" for x in loads],
    ]


def peak(args: argparse.Namespace) -> None:
    """One cli.py command with the package at ``--pkg``: its row appended to ``--out``."""
    pkg = Path(args.pkg).resolve()
    cmd = [sys.executable, str(pkg / "ctx2static" / "cli.py"), *args.cli]
    before = load()
    got, _ = time_v(cmd, {"PYTHONPATH": str(pkg)})
    out = Path(args.out)
    if not out.exists():
        out.write_text(
            "| run | package | peak RSS (MiB) | wall (s) | user (s) | sys (s) | load before |\n"
            "|---|---|---:|---:|---:|---:|---|\n"
        )
    row = (
        f"| {args.label} | {args.pkg} | {got['rss']:,.0f} | {got['wall']:,.0f} | {got['user']:,.0f} "
        f"| {got['sys']:,.1f} | {before.split('load average: ')[-1]} |"
    )
    with out.open("a") as fh:
        fh.write(row + "\n")
    print(row, "\n  cli.py", " ".join(args.cli), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("students")
    s.add_argument("--cache", required=True)
    s.add_argument("--students", nargs="+", default=STUDENTS)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--student-args", default="", help="more fit-student options, e.g. '--dim 8'")
    e = sub.add_parser("extract")
    e.add_argument("--corpus", default=str(SHARED_CORPUS / "brown.txt.xz"))
    e.add_argument("--teacher", default="minilm")
    e.add_argument("--sentences", type=int, default=4096)
    e.add_argument("--shard-size", type=int, default=512)
    for p in (s, e):
        p.add_argument("--work", required=True)
        p.add_argument("--out", required=True)
    k = sub.add_parser("peak")
    k.add_argument("--label", required=True)
    k.add_argument("--pkg", required=True, help="a folder holding the package as ctx2static/")
    k.add_argument("--out", required=True)
    k.add_argument("cli", nargs="+", help="cli.py's arguments, after --")
    args = ap.parse_args()
    if args.what == "peak":
        peak(args)
        return
    body = students(args) if args.what == "students" else extract(args)
    cmd = "PYTHONPATH=<pkg> python bench/speed/bench_memory.py " + argv_line(sys.argv[1:])
    title = {"students": "fit-student", "extract": "extract's driver"}[args.what]
    lines = [f"# Peak memory of {title}: 1x against 4x the corpus", "", f"Command: `{cmd}`", "", *body]
    write_keeping_reading(Path(args.out), "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
