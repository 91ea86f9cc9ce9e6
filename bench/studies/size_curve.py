"""The data-size curve: MiniLM students on nested samples of the combined corpus, one study per size.

Usage (from the repository root; the samples come from bench/data/build_prose.py):

    python bench/studies/size_curve.py run --data DATA/size-curve --out runs/size_curve \\
        --sizes 1M 2M 4M 8M 16M [--precision int8]
    python bench/studies/size_curve.py table --out runs/size_curve --md bench/results/size_curve.md \\
        --png bench/results/size_curve.png

``run`` writes ``OUT/SIZE/study.toml`` for each size and runs it with ``cli.py run`` (a rerun skips
what is done and resumes an interrupted extraction, so the same command continues in a later
session). Every study reads ``combined-SIZE.jsonl.xz`` (raw documents, split into sentences by the
raw-text path; a document is x2static's paragraph) with the MiniLM teacher at its default signals
and layer, plus per-occurrence vectors for ``bert-sg`` up to ``--vectors-up-to`` (they cost about
0.8 kB a token on disk). ``table`` reads the studies' score records and writes the Markdown table
(in place of the one an existing ``--md`` holds, its hand-written text kept) and the plot. Each
study scores the items its own vocabulary covers, and a larger sample covers more (RW above all),
so ``table`` also scores avg5 on fixed items: those the smallest sample's vocabulary covers (nested
samples: every larger vocabulary at the same ``min_count`` holds it), and the plot draws that
column.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

from ctx2static.eval import evaluate, load_benchmarks
from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.suite import avg5, common_items
from ctx2static.fileio.atomic import atomic_write
from ctx2static.vectors import Vectors

ROOT = Path(__file__).resolve().parents[2]
STUDENTS = {  # output name -> (student, options)
    "ase": ("ase", {}),
    "word": ("word", {}),
    "x2static-sent": ("x2static", {"context": "sent"}),
    "x2static-para": ("x2static", {"context": "para"}),
    "bert-sg": ("bert-sg", {}),
}
COLUMNS = (  # (label, benchmark, metric) read from each output's scores
    ("avg5", "avg5", None),
    ("SimLex", "simlex999", None),
    ("Google", "google", "3CosAdd acc"),
    ("MSR", "msr", "3CosAdd acc"),
    ("POS", "pos-brown", None),
    ("NER", "ner-wnut16", None),
    ("RT", "sentiment-rt", None),
    ("VADER", "sentiment-vader-movies", None),
)


def size_tokens(size: str) -> float:
    """'4M' -> 4e6 (the nominal size of a sample; 'all' has no nominal size)."""
    return float(size[:-1]) * 1e6 if size.endswith("M") else float("nan")


def study_text(corpus: Path, precision: str, vectors: bool) -> str:
    """The TOML of one size's study."""
    lines = [
        "[corpus]",
        f"files = [{json.dumps(str(corpus))}]",
        "min_count = 5",
        "",
        "[teachers.minilm]",
        'model = "minilm"',
        "threads = 2",
        f'precision = "{precision}"',
        "paragraph = true",
        f"vectors = {str(vectors).lower()}",
        "",
    ]
    for name, (student, options) in STUDENTS.items():
        if student == "bert-sg" and not vectors:
            continue
        lines += [f"[students.{name}]", f'student = "{student}"', 'teacher = "minilm"']
        if options:
            lines.append("options = { " + ", ".join(f'{k} = "{v}"' for k, v in options.items()) + " }")
        lines.append("")
    lines += ["[eval]", 'families = ["similarity", "analogy", "downstream"]', ""]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> None:
    """Write and run each size's study, smallest first."""
    for size in args.sizes:
        corpus = (args.data / f"combined-{size}.jsonl.xz").resolve()
        if not corpus.is_file():
            sys.exit(f"{corpus}: no such sample; build it with bench/data/build_prose.py samples")
        folder = args.out / size
        folder.mkdir(parents=True, exist_ok=True)
        vectors = size_tokens(size) <= args.vectors_up_to * 1e6
        toml = folder / f"size_{size}.toml"
        toml.write_text(study_text(corpus, args.precision, vectors))
        cmd = [sys.executable, str(ROOT / "cli.py"), "run", str(toml), "--out", str(folder)]
        print("$", shlex.join(cmd), flush=True)
        subprocess.run(cmd, check=True, cwd=ROOT)


def score(record: Path, benchmark: str, metric: str | None) -> float | None:
    """One score (already x100) from an eval record, or None if the benchmark is not there."""
    if not record.is_file():
        return None
    for s in json.loads(record.read_text())["scores"]:
        if s["benchmark"] == benchmark and (metric is None or s["metric"] == metric):
            return s["score"]
    return None


def fixed_avg5(folder: Path, masks: dict, benchmarks: list) -> float:
    """avg5 of the vectors in ``folder`` on the items of ``masks`` (the smallest sample's)."""
    scores = evaluate(Vectors.load(folder), benchmarks, AnalogyConfig(), only=masks)
    return avg5(scores).score


def around_table(md: Path, table: str) -> str:
    """``table`` in place of the size table an earlier ``md`` holds, the hand-written text around it kept.

    The commands, the setting and the reading above and below the table are written by hand after
    a run; a new file is the table alone.
    """
    text = md.read_text(encoding="utf-8") if md.is_file() else ""
    at = text.find("| size | output |")
    if at < 0:
        return table
    end = text.find("\n\n", at)
    return text[:at] + table + (text[end + 1 :] if end >= 0 else "")


def table(args: argparse.Namespace) -> None:
    """The Markdown table and the plot of every size found under --out."""
    sizes = sorted((p.name for p in args.out.iterdir() if (p / "eval").is_dir()), key=size_tokens)
    similarity = load_benchmarks(["similarity"])
    smallest = args.out / sizes[0] / "vectors"
    masks = common_items([Vectors.load(smallest / name) for name in STUDENTS if (smallest / name).is_dir()],
                         similarity, AnalogyConfig())  # fmt: skip
    rows, series = [], {name: [] for name in STUDENTS}
    for size in sizes:
        cache = json.loads((args.out / size / "caches" / "minilm.json").read_text())
        for name in STUDENTS:
            rec = args.out / size / "eval" / f"{name}.json"
            if not rec.is_file():
                continue
            fixed = fixed_avg5(args.out / size / "vectors" / name, masks, similarity)
            cells = [fixed, *(score(rec, b, m) for _, b, m in COLUMNS)]
            rows.append(
                f"| {size} | {name} | "
                + " | ".join("" if c is None else f"{c:.1f}" for c in cells)
                + f" | {cache.get('seconds', 0) / 60:.0f} |"
            )
            series[name].append((size_tokens(size), fixed))
    head = (
        f"| size | output | avg5 on {sizes[0]}'s items | "
        + " | ".join(c[0] for c in COLUMNS)
        + " | extract min |"
    )
    rule = "|---|---|" + "---:|" * (len(COLUMNS) + 2)
    text = around_table(args.md, "\n".join([head, rule, *rows]) + "\n")
    with atomic_write(args.md, "w", encoding="utf-8") as fh:
        fh.write(text)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, points in series.items():
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("corpus tokens")
    ax.set_ylabel(f"avg5 on the {sizes[0]} sample's items (Spearman x100)")
    ax.set_title("MiniLM students by corpus size")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--data", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--sizes", nargs="+", default=["1M", "2M", "4M", "8M", "16M"])
    r.add_argument("--precision", default="float32", choices=["float32", "int8"])
    r.add_argument("--vectors-up-to", type=float, default=16, help="bert-sg's vectors up to this many M")
    t = sub.add_parser("table")
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--md", type=Path, required=True)
    t.add_argument("--png", type=Path, required=True)
    args = ap.parse_args()
    run(args) if args.command == "run" else table(args)


if __name__ == "__main__":
    main()
