"""How rogue is each teacher's largest dimension? The statistic behind ``standardize=auto``.

    python bench/probes/rogue_dimensions.py NAME=CACHE [NAME=CACHE ...]

For each cache: max_d E[x_d^2] / median_d E[x_d^2] (students/postprocess.py, ``ROGUE_RATIO``) of
the sentence contexts x2static reads (``sent_ctx``), of the ase table (per-word means), and of the
word and token tables. A markdown table on stdout;
bench/results/rogue_dimensions.md has the numbers and what z-scoring does to the students.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ctx2static.cache import Cache
from ctx2static.students.cache_input import occurrence_means
from ctx2static.students.postprocess import ROGUE_RATIO, DimensionStats


def _cell(stats: DimensionStats) -> str:
    return f"{stats.rogue_ratio:,.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("caches", nargs="+", help="NAME=CACHE folder")
    args = ap.parse_args()
    print(f"| teacher | dim | sent_ctx | ase | word | token | auto z-scores (ratio > {ROGUE_RATIO:,.0f}) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for item in args.caches:
        name, folder = item.split("=", 1)
        cache = Cache.open(Path(folder))
        ctx = DimensionStats.of_rows(cache.shard(i, ["sent_ctx"])["sent_ctx"] for i in range(cache.n_shards))
        means, seen = occurrence_means(cache)
        ase = DimensionStats.of_rows([means[seen > 0]])
        tables = cache.vocab_arrays()
        word, token = (DimensionStats.of_rows([tables[k]]) for k in ("word_emb", "token_emb"))
        rogue = [k for k, s in zip(("sent_ctx", "ase", "word", "token"), (ctx, ase, word, token), strict=True)
                 if s.rogue_ratio > ROGUE_RATIO]  # fmt: skip
        cells = " | ".join(_cell(s) for s in (ctx, ase, word, token))
        print(f"| {name} | {len(ctx.mean)} | {cells} | {', '.join(rogue) or 'none'} |")
    print()
    print("Cells: max_d E[x_d^2] / median_d E[x_d^2] over the cache's rows (sentences, words).")


if __name__ == "__main__":
    main()
