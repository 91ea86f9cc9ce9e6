"""The word table's template and layer on similarity and analogy (issue 41), from a cache's vocabulary.

    python bench/probes/word_table.py --caches runs/words_brown/caches/{minilm,mpnet,nomic} \\
        --out bench/results/word_table.md

``prompted_words.md`` chose the encoders' word-table default ("meaning: {w}" at the last layer) on
similarity pairs alone. This builds the table up to four ways (the word alone or inside "meaning: {w}",
at the teacher's default layers or the last) for each cache's whole vocabulary, with the product's
code (``pipeline/shard.py`` ``vocab_tables``, the teacher the cache names, float32), and scores each
with ``cli.py eval``'s similarity and analogy families on the items all of them cover, so the
analogy questions search the same vocabulary as the cache's students do.
A closing section headed "## What it means" in an existing ``--out``
(the reading written by hand after a run) is kept below the new tables.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import sys
import time
from pathlib import Path

import numpy as np

from ctx2static.cache import Cache
from ctx2static.cache.reader import read_manifest
from ctx2static.eval import load_benchmarks
from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.benchmarks import Family
from ctx2static.eval.comparison import compare_tables
from ctx2static.pipeline.config import ExtractConfig, TeacherConfig
from ctx2static.pipeline.shard import feed_for, vocab_tables
from ctx2static.pipeline.teacher import Teacher, torch_threads
from ctx2static.text.vocab import Vocab
from ctx2static.vectors import Vectors

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import argv_line, write_keeping_reading

SETTINGS = {
    "alone_all": ("{w}", "1:"),
    "alone_last": ("{w}", "-1"),
    "meaning_all": ("meaning: {w}", "1:"),
    "meaning_last": ("meaning: {w}", "-1"),
}
"""name -> (template, layer): the seeds' word alone at the encoders' default layers (``1:``), and the
three changes; ``meaning_all`` is ``auto`` for an encoder now. ``--save`` writes each table to a
folder named for its cache and setting (``nomic_meaning_last``), which ``words_split.py`` reads."""

SHOWN = ("ws353", "simlex999", "men3k", "rw", "rg65", "avg5", "google", "msr")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--caches", nargs="+", type=Path, required=True)
    ap.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    ap.add_argument("--save", type=Path, help="also write each table as a vectors folder here")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    benchmarks = load_benchmarks((Family.SIMILARITY, Family.ANALOGY), {}, bundled=True)
    lines = [
        "# The word table's template and layer: similarity and analogy",
        "",
        f"Date: {datetime.date.today()}. Command (repository root): `python {argv_line(sys.argv)}`",
        "",
        "Each cache's vocabulary, its word table built in each setting asked for with the product's "
        "`vocab_tables` (float32 teacher); scores x100 on the items all of them cover (`cli.py eval`'s "
        "common items); analogy: 3CosAdd accuracy over the whole vocabulary. Layer `1:` is the encoders' "
        'default `--layer`; "meaning: {w}" at `1:` is `--word-template auto --word-layer auto` for them.',
    ]
    for folder in args.caches:
        cache = Cache.open(folder)
        teacher_name = str(read_manifest(folder)["identity"]["teacher"]["name"])
        vocab = Vocab.load(folder / "vocab.tsv")
        words = cache.teacher_tokens()["word"]
        t0 = time.perf_counter()
        with torch_threads(args.threads):
            teacher = Teacher.load(teacher_name, TeacherConfig())
            tables = {}
            for setting in args.settings:
                template, layer = SETTINGS[setting]
                cfg = dataclasses.replace(ExtractConfig(), word_template=template, word_layer=layer)
                arrays, _ = vocab_tables(teacher, vocab, cfg, words, feed_for(teacher, vocab, cfg))
                table = Vectors(list(vocab.words), arrays["word_emb"])
                tables[f'"{template}", layer {layer}'] = table
                if args.save:
                    table.save(args.save / f"{folder.name}_{setting}")
        secs = time.perf_counter() - t0
        scores = compare_tables(tables, benchmarks, AnalogyConfig(), common=True).common
        lines += [
            "",
            f"## {teacher_name} ({len(vocab):,} words, `{folder.name}`; tables in {secs / 60:.1f} min)",
            "",
            f"| word table | {' | '.join(SHOWN)} |",
            "|---|" + "---:|" * len(SHOWN),
        ]
        for name, rows in scores.items():
            by = {s.benchmark: s.score for s in rows if s.metric in ("spearman", "3CosAdd acc")}
            sims = [by.get(n, np.nan) for n in SHOWN[:5]]
            by["avg5"] = float(np.mean(sims))
            lines.append(f"| {name} | {' | '.join(f'{by.get(n, np.nan):.1f}' for n in SHOWN)} |")
        del teacher
    print("\n".join(lines))
    write_keeping_reading(args.out, "\n".join(lines))


if __name__ == "__main__":
    main()
