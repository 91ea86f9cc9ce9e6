"""How rogue is each teacher's largest dimension? The statistic behind ``standardize=auto``.

    python bench/probes/rogue_dimensions.py NAME=CACHE [NAME=CACHE ...] --out bench/results/rogue_ratios.md

For each cache: max_d E[x_d^2] / median_d E[x_d^2] (transforms/postprocess.py, ``ROGUE_RATIO``) of
the sentence contexts x2static reads (``sent_ctx``), of the ase table (per-word means), and of the
word and token tables. ``bench/results/rogue_dimensions.md`` (its study) shows what z-scoring does
to the students. A "## What it means" section at the end of an existing ``--out`` (the reading
written by hand after a run) is kept.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

from ctx2static.cache import Cache
from ctx2static.errors import UserError
from ctx2static.fileio.outputs import check_writable
from ctx2static.students.cache_input import occurrence_means
from ctx2static.transforms.postprocess import ROGUE_RATIO, DimensionStats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import argv_line, cpu_name, write_keeping_reading

COLUMNS = ("sent_ctx", "ase", "word", "token")


def ratios(folder: Path) -> tuple[int, list[DimensionStats]]:
    """The cache's dimension and the statistics of its four tables, in ``COLUMNS`` order."""
    cache = Cache.open(folder)
    ctx = DimensionStats.of_rows(cache.shard(i, ["sent_ctx"])["sent_ctx"] for i in range(cache.n_shards))
    means, seen = occurrence_means(cache)
    ase = DimensionStats.of_rows([means[seen > 0]])
    tables = cache.vocab_arrays()
    word, token = (DimensionStats.of_rows([tables[k]]) for k in ("word_emb", "token_emb"))
    return len(ctx.mean), [ctx, ase, word, token]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("caches", nargs="+", help="NAME=CACHE folder")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    caches = [item.partition("=")[::2] for item in args.caches]
    for item, (_, folder) in zip(args.caches, caches, strict=True):
        if not folder:
            raise UserError(f"{item}: give each cache as NAME=FOLDER, e.g. gemma3=runs/caches/gemma3")
    check_writable(args.out, inputs=[folder for _, folder in caches], folder=False)  # before the passes
    rows = []
    for name, folder in caches:
        dim, stats = ratios(Path(folder))
        rogue = [k for k, s in zip(COLUMNS, stats, strict=True) if s.rogue_ratio > ROGUE_RATIO]
        cells = " | ".join(f"{s.rogue_ratio:,.0f}" for s in stats)
        rows.append(f"| {name} | {dim} | {cells} | {', '.join(rogue) or 'none'} |")
        print(rows[-1], flush=True)
    lines = [
        "# Rogue dimensions: each teacher's largest dimension against its median one",
        "",
        f"Command (repository root): `python bench/probes/rogue_dimensions.py {argv_line(sys.argv[1:])}`",
        "",
        f"Date: {datetime.date.today()}. Machine: {cpu_name()}. Each cell is max_d E[x_d^2] / median_d"
        " E[x_d^2] over the cache's rows: its sentence contexts (`sent_ctx`, what x2static reads), its"
        " per-word means (the `ase` table before z-scoring), its `word` and `token` tables."
        f" `standardize = auto` z-scores a table whose ratio is above {ROGUE_RATIO:,.0f}"
        " (transforms/postprocess.py); what that does to the students: `rogue_dimensions.md`.",
        "",
        f"| teacher | dim | {' | '.join(COLUMNS)} | auto z-scores |",
        "|---|---:|---:|---:|---:|---:|---|",
        *rows,
        "",
    ]
    write_keeping_reading(args.out, "\n".join(lines))


if __name__ == "__main__":
    try:
        main()
    except UserError as e:
        raise SystemExit(f"error: {e}") from None
