"""What verifying a cache costs: sha256 of every file a student reads, and the array checks, vs the student.

Builds a cache of Brown's shape through the real writer (random arrays: 57,340 sentences in
shards of 8,192, 1,116,225 occurrences of a 14,167-word vocabulary, 384-d fp16 occurrence vectors
and sentence means, as MiniLM's Brown cache), then in one process: hashes every file
(``Cache.verify_for``, MB/s), runs the array checks on every shard, and trains x2static with
``fit_cache_student`` (which verifies first); the share is verification seconds over the whole run.
x2static reads only the sentence means, so hashing whole shards (occurrence vectors included) is
its worst case; students that read the occurrence vectors train far longer on the same bytes.

    PYTHONPATH=<pkg> python bench/speed/bench_verify.py [--shards 7] [--out bench/results/verify.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ctx2static.cache import Cache, reader
from ctx2static.cache.validate import shard_problem
from ctx2static.cache.writer import CacheWriter, WordSums
from ctx2static.fileio.atomic import atomic_write
from ctx2static.students.registry import fit_cache_student
from ctx2static.text.vocab import Vocab

sys.path.insert(0, str(Path(__file__).parent))
from machine import cpu_name

SENTENCES, OCCURRENCES, VOCAB, DIM, SHARD = 57_340, 1_116_225, 14_167, 384, 8192


def build(folder: Path, n_shards: int, rng: np.random.Generator) -> None:
    """A cache of Brown's shape (the first ``n_shards`` shards), random arrays, through the real writer."""
    ranks = np.arange(1, VOCAB + 1)
    p = (1 / ranks) / (1 / ranks).sum()  # Zipf
    counts = np.maximum((p * OCCURRENCES).astype(np.int64), 1)
    vocab = Vocab([f"w{i}" for i in range(VOCAB)], counts)
    writer = CacheWriter.open(folder, {"teacher": {"name": "random"}, "options": {"vectors": True}}, vocab)
    per_sentence = OCCURRENCES / SENTENCES
    for i in range(n_shards):
        n = min(SHARD, SENTENCES - i * SHARD)
        lengths = rng.poisson(per_sentence, n) + 1
        ids = rng.choice(VOCAB, size=int(lengths.sum()), p=p).astype(np.int32)
        occ = rng.normal(size=(len(ids), DIM)).astype(np.float16)
        arrays = {
            "sent_para": np.arange(i * SHARD, i * SHARD + n, dtype=np.int64),
            "sent_offsets": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
            "word_ids": ids,
            "word_aligned": np.ones(len(ids), bool),
            "sent_ctx": rng.normal(size=(n, DIM)).astype(np.float16),
            "occ_vec": occ,
        }
        stats = {"n_sentences": n, "n_words": len(ids), "n_occurrences": len(ids)}
        writer.add_shard(arrays, None, stats, WordSums.of(ids, occ.astype(np.float32)))
    zeros = np.zeros((VOCAB, DIM), np.float32)
    tokens = {"id": np.zeros(0, np.int32), "token": np.zeros(0, object), "word": np.zeros(0, np.int32)}
    writer.finish({"token_emb": zeros, "word_emb": zeros}, tokens)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shards", type=int, default=7, help="Shards of 8,192 sentences (Brown: 7).")
    ap.add_argument("--out", type=Path, help="Write the results file here.")
    ap.add_argument("--work", type=Path, help="Folder for the cache (default: a temp folder).")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-verify-", dir=args.work) as tmp:
        folder = Path(tmp) / "cache"
        t = time.perf_counter()
        build(folder, args.shards, np.random.default_rng(0))
        built = time.perf_counter() - t
        cache = Cache.open(folder)
        size = sum((folder / n).stat().st_size for n in cache.files())
        t = time.perf_counter()
        hashed = cache.verify_for(["sent_ctx"])
        hash_s = time.perf_counter() - t
        check_s = 0.0
        for i, record in enumerate(cache.manifest["shards"]):
            shard = cache.shard(i)
            t = time.perf_counter()
            assert shard_problem(shard.arrays, None, record, VOCAB) is None
            check_s += time.perf_counter() - t
        check_x2 = 0.0
        for i, record in enumerate(cache.manifest["shards"]):
            shard = cache.shard(i, ["sent_ctx"])
            t = time.perf_counter()
            shard_problem(shard.arrays, None, record, VOCAB)
            check_x2 += time.perf_counter() - t
        reader._VERIFIED.clear()  # the student's run hashes again, as a fresh process would
        fit_cache_student("x2static", folder, {"epochs": 1})  # numba compile / cache load
        reader._VERIFIED.clear()
        t = time.perf_counter()
        vectors = fit_cache_student("x2static", folder, {"epochs": 1})
        run_s = time.perf_counter() - t
        t = time.perf_counter()
        reader._VERIFIED.clear()
        cache.verify_for(["sent_ctx"])
        hash2_s = time.perf_counter() - t
    mb = hashed / 1e6

    def row(step: str, size_mb: float | None, seconds: float) -> str:
        rate = f"{size_mb / seconds:,.0f} MB/s" if size_mb else ""
        return f"| {step} | {f'{size_mb:,.0f} MB' if size_mb else ''} | {seconds:.2f} | {rate} |"

    rows = [
        row("sha256 of the files x2static reads (every shard .h5, vocab.h5), first time", mb, hash_s),
        row("same again (what the run below spends; page cache warm)", mb, hash2_s),
        row("array checks of every array of every shard (reads not counted)", size / 1e6, check_s),
        row("array checks of x2static's arrays (index arrays, sent_ctx)", None, check_x2),
        row("x2static, 1 epoch, `fit_cache_student` (verification included)", None, run_s),
    ]
    share = (hash2_s + check_x2) / run_s
    load = os.getloadavg()[0]
    text = "\n".join(
        [
            "# Cache verification cost",
            "",
            f"Command: `PYTHONPATH=<pkg> python bench/speed/bench_verify.py --shards {args.shards}"
            + (f" --out {args.out}`" if args.out else "`"),
            "",
            f"Machine: {platform.machine()}, {cpu_name()}, {os.cpu_count()} CPU cores (shared; load average "
            f"at end {load:.1f}). Cache of Brown's shape ({args.shards} shards, random arrays, "
            f"{size / 1e6:,.0f} MB, built in {built:.0f} s); x2static trained "
            f"{vectors.meta['targets']:,} targets.",
            "",
            "| step | bytes | seconds | rate |",
            "|---|---|---|---|",
            *rows,
            "",
            f"Verification share of the x2static run: {100 * share:.1f}% (hashing plus its array checks over "
            "the whole run, which includes them).",
        ]
    )
    print(text)
    if args.out:
        with atomic_write(args.out, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
