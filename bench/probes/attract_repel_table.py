"""The specialisation table: one row per retrofitting variant of one vectors file, scores as columns.

A variant is ``LABEL=OPTIONS``: ``before`` (the input as is), or comma-separated RetrofitConfig
keys, e.g. ``ar+prop=method=attract-repel,propagate=true``. Each variant runs through the
library's ``retrofit_vectors`` (the code ``cli.py retrofit`` runs) and ``evaluate`` (the code
``cli.py eval`` runs); the table gives every bundled score picked by ``--family`` plus the
retrofit time and the words moved. Rows are appended to ``--out`` (Markdown) as they finish.
A ``propagate=true`` variant reuses the output of the same variant without it when one ran
before (its seconds are then the map's alone) and applies ``retrofit.propagate`` to it: the same
map ``retrofit_vectors`` would fit, on the rows that the method moved.

``--hold-out`` measures post-specialisation where it matters (Vulic et al. 2018's "lexically
disjoint" setting): every word of the bundled similarity sets is removed from the lexicons
first, so those words are never specialised directly and only ``propagate`` can reach them.

    python bench/probes/attract_repel_table.py /tmp/ar/word.bin -l wordnet --antonyms wordnet-antonyms \
        --variant before= --variant faruqui=method=faruqui \
        --variant ar=method=attract-repel --out runs/ar/word.md
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from ctx2static.eval import AnalogyConfig, Family, evaluate, load_benchmarks
from ctx2static.eval.similarity import SimilaritySet
from ctx2static.options import configure
from ctx2static.retrofit.config import Method, RetrofitConfig
from ctx2static.retrofit.lexicon import read_lexicon
from ctx2static.retrofit.propagate import propagate
from ctx2static.retrofit.solver import retrofit_vectors
from ctx2static.vectors import Vectors

SHORT = {"3CosAdd acc": "add", "3CosMul acc": "mul"}


def parse_variant(text: str) -> tuple[str, RetrofitConfig | None]:
    label, _, options = text.partition("=")
    if not options:
        return label, None
    values = dict(item.split("=", 1) for item in options.split(","))
    return label, configure(RetrofitConfig, values)


def column(score) -> str:
    metric = SHORT.get(score.metric, "")
    return f"{score.benchmark} {metric}".strip() if score.family == "analogy" else score.benchmark


def shown(score) -> bool:
    return score.family != "analogy" or (score.benchmark in ("google", "msr") and score.metric in SHORT)


def held_out(lexicons: list[str], words: set[str], folder: Path) -> list[str]:
    """Copies of ``lexicons`` without any of ``words`` (as headword or neighbour)."""
    out = []
    for i, lex in enumerate(lexicons):
        path = folder / f"{i}-{Path(lex).name.split('.')[0]}.txt"
        with path.open("w") as fh:
            for head, nbrs in read_lexicon(lex):
                kept = [w for w in nbrs if w.lower() not in words]
                if head.lower() not in words and kept:
                    fh.write(" ".join([head, *kept]) + "\n")
        out.append(str(path))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("vectors", type=Path)
    ap.add_argument("--lexicon", "-l", action="append", required=True)
    ap.add_argument("--antonyms", "-a", action="append", default=[])
    ap.add_argument("--variant", action="append", required=True, help="LABEL=key=value,key=value")
    ap.add_argument("--family", action="append", choices=[f.value for f in Family])
    ap.add_argument("--hold-out", action="store_true", help="drop similarity-set words from lexicons")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--save", type=Path, help="also save each variant's vectors in this folder")
    args = ap.parse_args()
    variants = [parse_variant(v) for v in args.variant]
    families = tuple(Family(f) for f in args.family) if args.family else (Family.SIMILARITY, Family.ANALOGY)
    benchmarks = load_benchmarks(families)
    vectors = Vectors.load(args.vectors)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    lexicons = "+".join(Path(x).name.split(".")[0] for x in args.lexicon + args.antonyms)
    if args.hold_out:
        words = {w.lower() for b in benchmarks if isinstance(b, SimilaritySet) for p in b.pairs for w in p}
        folder = Path(tempfile.mkdtemp())
        args.lexicon = held_out(args.lexicon, words, folder)
        args.antonyms = held_out(args.antonyms, words, folder)
        lexicons += " (similarity words held out)"
    header = None
    done: dict[str, Vectors] = {}  # outputs without propagate, by their config
    q0 = vectors.unit()
    for label, config in variants:
        start = time.perf_counter()
        out, moved = vectors, 0
        if config is not None:
            plain = RetrofitConfig(**{**config.to_dict(), "propagate": False, "ridge": RetrofitConfig.ridge})
            key = str(plain.to_dict())
            if key not in done:
                antonyms = args.antonyms if config.method is Method.ATTRACT_REPEL else []
                done[key], _ = retrofit_vectors(vectors, args.lexicon, plain, antonyms)
            out = done[key]
            changed = np.any(out.matrix != q0, axis=1)
            if config.propagate:
                q, _, _ = propagate(q0, out.matrix, changed, config.ridge)
                out = Vectors(out.words, q, out.counts, out.meta)
            moved = int(np.any(out.matrix != q0, axis=1).sum())
        seconds = time.perf_counter() - start
        if args.save is not None:
            out.save(f"{args.save / f'{args.vectors.stem}.{label}'}/")  # a trailing / saves a folder
        scores = [s for s in evaluate(out, benchmarks, AnalogyConfig()) if shown(s)]
        cells = {column(s): f"{s.score:.1f}" for s in scores}
        if header is None:
            header = ["vectors", "lexicons", "variant", *cells, "moved", "seconds"]
            if not args.out.exists():
                args.out.write_text("| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n")
        row = [args.vectors.stem, lexicons, label, *cells.values(), str(moved), f"{seconds:.0f}"]
        with args.out.open("a") as fh:
            fh.write("| " + " | ".join(row) + " |\n")
        print(" | ".join(row), flush=True)


if __name__ == "__main__":
    main()
