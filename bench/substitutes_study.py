"""Top-k substitutes from tokens that spell a vocabulary word (as extract) against the whole vocabulary.

Extracts the same sentences twice with top-k only (the second run as extract did before: candidates
over the whole teacher vocabulary), counts the substitutes a student can use (tokens that spell a static
word other than the target), then fits SemGloVe-md from each cache with both weightings and evaluates
all side by side.

    python bench/substitutes_study.py --corpus ../shared/corpus/brown.txt.xz --work runs/subst \
        --out bench/results/substitutes.md
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

import ctx2static.pipeline.extract as extract_mod
from ctx2static.cache import Cache
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig
from ctx2static.threads import torch_threads

CLI = Path(__file__).resolve().parents[1] / "cli.py"
K = 10


def usable(cache: Cache) -> float:
    """Mean number of substitutes per occurrence that spell a static word other than the target."""
    token_word = cache.teacher_tokens()["word"].astype(np.int64)
    total, n = 0, 0
    for shard in cache.shards(["topk_ids"]):
        sub = token_word[shard["topk_ids"].astype(np.int64)]
        target = shard["word_ids"][shard.occurrences()].astype(np.int64)
        total += int(((sub >= 0) & (sub != target[:, None])).sum())
        n += len(sub)
    return total / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch_threads(args.threads).__enter__()  # this process only runs the study
    corpus = Corpus([args.corpus])
    vocab = Vocab.build(corpus, VocabConfig(min_count=5))
    cfg = ExtractConfig(topk=K)
    rows, vectors = [], []
    for name in ("words", "whole"):
        teacher = Teacher.load("minilm")
        out = args.work / name
        start = time.perf_counter()
        if name == "words":
            extract(corpus, vocab, teacher, out, cfg)
        else:  # extract before the restriction: top-k over every teacher token
            with mock.patch.object(extract_mod, "word_substitutes", lambda *_: None):
                extract(corpus, vocab, teacher, out, cfg)
        secs = time.perf_counter() - start
        cache = Cache.open(out)
        n_sub = cache.manifest["identity"]["teacher"]["substitute_tokens"]
        rows.append(f"| {name} | {n_sub} | {secs:.0f} | {usable(cache):.2f} |")
        for weighting in ("divide", "reciprocal"):
            vec = args.work / f"semglove-lm-{weighting}-{name}.bin"
            if not vec.exists():
                sets = ["--set", "cooc=lm", "--set", f"weighting={weighting}"]
                fit = ["fit-student", "-s", "semglove", "--cache", str(out), "-o", str(vec), *sets]
                subprocess.run([sys.executable, str(CLI), *fit], check=True)
            vectors.append(str(vec))
    table = args.work / "eval.md"
    subprocess.run([sys.executable, str(CLI), "eval", *vectors, "--markdown", str(table)], check=True)
    lines = [
        "# Top-k substitutes: tokens that spell a vocabulary word against the whole teacher vocabulary",
        "",
        f"Command: `python bench/substitutes_study.py {' '.join(sys.argv[1:])}`",
        "",
        f"Teacher minilm, {Path(args.corpus).name}, vocabulary {len(vocab)} (min count 5), top-{K}, "
        f"{args.threads} threads; extract wall seconds include the per-word baselines.",
        "",
        "| candidates | tokens | extract s | usable substitutes per occurrence |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        "## SemGloVe-md from each cache",
        "",
        table.read_text(),
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
