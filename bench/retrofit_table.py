"""Issue 5 results table: evaluate vectors before and after retrofitting (both methods).

For each VECTORS file: retrofit it with every method to the merged lexicons, then run
``cli.py eval`` once over the original and the retrofitted files (one column each), writing
``<outdir>/<name>.md``. Everything goes through the command line, so the table is exactly what a
user gets.

    python bench/retrofit_table.py runs/sgns.bin runs/x2static.bin --lexicon wordnet \
        --lexicon ../shared/lexicons/ppdb-xl.txt --outdir bench/results/retrofit_table
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

CLI = Path(__file__).resolve().parents[1] / "cli.py"
METHODS = ("faruqui", "graph")


def run(args: list[str]) -> None:
    print("+", " ".join(args), flush=True)
    subprocess.run([sys.executable, str(CLI), *args], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("vectors", nargs="+", type=Path)
    ap.add_argument("--lexicon", "-l", action="append", required=True, help="as for `cli.py retrofit`")
    ap.add_argument("--outdir", type=Path, required=True)
    ap.add_argument(
        "--retrofit-arg",
        action="append",
        default=[],
        help="extra retrofit option, e.g. --retrofit-arg=--nu=50",
    )
    ap.add_argument(
        "--eval-arg",
        action="append",
        default=[],
        help="extra eval option, e.g. --eval-arg=--family=similarity",
    )
    args = ap.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    lexicons = [x for lex in args.lexicon for x in ("--lexicon", lex)]
    for vec in args.vectors:
        name = vec.name.removesuffix(".bin").removesuffix(".txt")
        outputs = []
        for method in METHODS:
            out = args.outdir / f"{name}.{method}.bin"
            run(["retrofit", str(vec), *lexicons, "--method", method, "--out", str(out), *args.retrofit_arg])
            outputs.append(str(out))
        table = args.outdir / f"{name}.md"
        run(["eval", str(vec), *outputs, "--markdown", str(table), *args.eval_arg])


if __name__ == "__main__":
    main()
