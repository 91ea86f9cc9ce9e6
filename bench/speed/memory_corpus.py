"""Peak memory of reading a corpus does not follow its size: three hostile files through the reader.

Usage (from the repository root):

    PYTHONPATH=<pkg> python bench/speed/memory_corpus.py --scratch SCRATCH \\
        --sizes 30M,300M,3G --before <pkg before> --before-max 300M --out bench/results/memory_corpus.md

Three files of each size (decimal: 3G is 3e9 bytes of text) are written once into ``--scratch``
(never the repository), xz-compressed as the issue's "bomb" (repetitive text compresses to a few
MB): ``lines``, short lines (3 to 12 words, each ending in a full stop) without one blank line,
which ``--split auto`` reads one sentence a line and which was held whole as one paragraph;
``one-line``, the same words with no newline at all, one line of the whole size (``auto`` reads it
as documents: a full stop every few words); ``one-line-bare``, that line without the full stops,
which ``auto`` reads as lines and which was held whole too. Each is read in a fresh process by what
``extract`` and ``fit-student`` run before a teacher or a student: ``Corpus`` with the defaults
(split auto, the default bounds), ``Vocab.build`` (``--min-count 5``) and ``encode_corpus`` into
``--scratch``; peak RSS of each pass is sampled with :class:`ctx2static.memory.PeakRss` and the
time taken. ``--before`` names a PYTHONPATH holding another checkout's package (the code before
a change), run on the sizes up to ``--before-max`` (it held the whole file) under an address-space
limit of ``--limit-gb`` so that it fails with MemoryError rather than take the machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import lzma
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from machine import argv_line, cpu_name, write_keeping_reading

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("lines", "one-line", "one-line-bare")
BLOCKS = 64  # distinct 1 MB blocks the text is drawn from (it compresses, it is not one repeat)


def parse_size(text: str) -> int:
    """``30M`` / ``3G`` (decimal) as bytes."""
    units = {"K": 10**3, "M": 10**6, "G": 10**9}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def _blocks(kind: str) -> list[bytes]:
    """BLOCKS blocks of about 1 MB: short lines (3 to 12 words) drawn from 2,000 lines of 20,000 words.

    Drawing whole lines from a small pool makes the text compress about 10:1 with xz -1. The lines
    end in a full stop but for ``one-line-bare``; all but ``lines`` are joined by a blank.
    """
    rng = random.Random(38)
    words = [f"w{i}" for i in range(20_000)]
    stop = "" if kind == "one-line-bare" else " ."
    pool = [" ".join(rng.choices(words, k=rng.randint(3, 12))) + stop for _ in range(2_000)]
    end = "\n" if kind == "lines" else " "
    return [end.join(rng.choices(pool, k=16_000)).encode() + end.encode() for _ in range(BLOCKS)]


def generate(scratch: Path, kind: str, size: int) -> Path:
    """The ``kind`` file of ``size`` bytes of text (written once, lazily, block by block)."""
    path = scratch / f"{kind}-{size}.txt.xz"
    if path.exists():
        return path
    blocks, rng = _blocks(kind), random.Random(size)
    part = path.with_name(path.name + ".part")
    written = 0
    with lzma.open(part, "wb", preset=1) as fh:
        while written < size:
            block = blocks[rng.randrange(BLOCKS)][: size - written]
            fh.write(block)
            written += len(block)
    part.replace(path)
    return path


def read_one(path: Path, work: Path) -> dict:
    """Run in a fresh process: the reader's two passes over ``path``, their peak RSS and seconds."""
    from ctx2static.memory import PeakRss, current_rss
    from ctx2static.text.corpus import Corpus
    from ctx2static.text.encoded import encode_corpus
    from ctx2static.text.vocab import Vocab, VocabConfig

    out: dict = {"start_mib": current_rss() / 2**20}
    try:
        t0 = time.perf_counter()
        with PeakRss() as peak:
            corpus = Corpus([path])
            vocab = Vocab.build(corpus, VocabConfig(min_count=5))
        out.update(vocab_s=time.perf_counter() - t0, vocab_mib=peak.megabytes, words=len(vocab))
        out["split"] = corpus.readings[0].split.value
        t0 = time.perf_counter()
        with PeakRss() as peak:
            enc = encode_corpus(corpus, vocab, work)
        out.update(encode_s=time.perf_counter() - t0, encode_mib=peak.megabytes)
        out.update(tokens=len(enc.ids), sentences=enc.n_sentences)
    except MemoryError:
        out["failed"] = "MemoryError"
    return out


def measure(path: Path, work: Path, pythonpath: str, limit_gb: float) -> dict:
    """:func:`read_one` in a fresh interpreter with ``pythonpath`` first (its package measured)."""
    env = {**os.environ, "PYTHONPATH": pythonpath}
    cmd = [sys.executable, __file__, "--read", str(path), "--work", str(work), "--limit-gb", str(limit_gb)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return {"failed": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1][:120]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _package(pythonpath: str) -> str:
    """Which checkout a PYTHONPATH imports, and its commit."""
    code = "import ctx2static, os; print(os.path.realpath(os.path.dirname(ctx2static.__file__)))"
    where = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": pythonpath},
                           capture_output=True, text=True).stdout.strip()  # fmt: skip
    commit = subprocess.run(
        ["git", "-C", where, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()  # fmt: skip
    if commit.returncode != 0:
        return f"`{where}` (not a git checkout: say which commit it holds)"
    return f"`{where}` at {commit.stdout.strip()}{' (uncommitted changes)' if dirty else ''}"


def _row(label: str, kind: str, size: int, path: Path, r: dict) -> str:
    head = f"| {label} | {kind} | {size / 1e9:g} GB ({path.stat().st_size / 2**20:.1f} MiB xz) |"
    if "failed" in r:
        return head + f" {r['failed']} | | | | | |"
    return head + (
        f" {r['split']} | {r['sentences']:,} | {r['start_mib']:,.0f} | {r['vocab_mib']:,.0f} | "
        f"{r['encode_mib']:,.0f} | {r['vocab_s']:,.0f} + {r['encode_s']:,.0f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scratch", type=Path, help="folder for the generated files and the encoded ids")
    ap.add_argument("--sizes", default="30M,300M", help="comma-separated sizes of text, e.g. 30M,300M,3G")
    ap.add_argument("--before", default="", help="PYTHONPATH of the package before a change (optional)")
    ap.add_argument("--before-max", default="300M", help="largest size read by --before")
    ap.add_argument("--limit-gb", type=float, default=6.0, help="address-space limit of each reading process")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"which files, of {', '.join(KINDS)}")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "memory_corpus.md")
    ap.add_argument("--read", type=Path, help=argparse.SUPPRESS)  # the worker: one file, JSON out
    ap.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.read:
        limit = int(args.limit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        print(json.dumps(read_one(args.read, args.work)))
        return
    if args.scratch is None:
        ap.error("--scratch is required")
    args.scratch.mkdir(parents=True, exist_ok=True)
    after = os.environ.get("PYTHONPATH", "")
    runs = [("after", after, float("inf"))] + (
        [("before", args.before, parse_size(args.before_max))] * bool(args.before)
    )
    rows = []
    for size in map(parse_size, args.sizes.split(",")):
        for kind in args.kinds.split(","):
            path = generate(args.scratch, kind, size)
            for label, pythonpath, most in runs:
                if size <= most:
                    r = measure(path, args.scratch / "work", pythonpath, args.limit_gb)
                    rows.append(_row(label, kind, size, path, r))
                    print(rows[-1], flush=True)
    command = "PYTHONPATH=<after> python " + argv_line([str(Path(__file__).relative_to(ROOT)), *sys.argv[1:]])
    lines = [
        "# Peak memory of reading a corpus: short lines without blank lines, one line without a newline",
        "",
        f"Command: `{command}`",
        "",
        f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC. Machine: {cpu_name()}, "
        f"{os.cpu_count()} cores, shared with other jobs (seconds are not speed measurements). "
        f"Load: `{subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}`.",
        "",
        f"After: {_package(after)}." + (f" Before: {_package(args.before)}." if args.before else ""),
        "",
        "Each file read in a fresh process by `Corpus` (split auto, default bounds), `Vocab.build`"
        " (min count 5) and `encode_corpus`, as `extract` and `fit-student` read text; peak RSS of each"
        f" pass sampled by `memory.PeakRss`, under an address-space limit of {args.limit_gb:g} GiB.",
        "",
        "| code | file | text (on disk) | split | sentences | RSS at start (MiB) | peak, vocabulary pass"
        " (MiB) | peak, encoding pass (MiB) | seconds (vocabulary + encoding) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    write_keeping_reading(args.out, "\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
