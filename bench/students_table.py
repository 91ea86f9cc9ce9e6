"""Issue 4 results table: every student from one teacher cache, next to the plain baselines.

Trains each student through the command line (exactly what a user runs), then evaluates all the
vectors side by side with ``cli.py eval`` and appends a throughput table (tokens/s from each
output's metadata, next to plain SGNS when its vectors file is given).

    python bench/students_table.py --cache runs/minilm --baseline runs/sgns.bin \
        --out bench/results/students_minilm.md --student ase --student x2static ...
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

CLI = Path(__file__).resolve().parents[1] / "cli.py"

# name -> fit-student --set options
RUNS = {
    "ase": [],
    "word": [],
    "token": [],
    "x2static": [],
    "x2static-para": ["context=para"],
    "bert-sg": [],
    "ctx2vec": [],
    "semglove-attention": ["cooc=attention"],
    "semglove-lm": ["cooc=lm"],
}


def model2vec_peer(cache: Path, out: Path) -> Path:
    """Model2Vec (pip model2vec[distill], PCA 256, its defaults) from the cache's teacher.

    The static model embeds subword tokens; each word of the cache's vocabulary gets
    ``StaticModel.encode(word)`` (its tokens' mean), so it is evaluated on the same vocabulary.
    """
    if out.exists():
        return out
    import time

    import numpy as np
    from model2vec.distill import distill

    from ctx2static.cache import Cache
    from ctx2static.vectors import Vectors

    c = Cache.open(cache)
    teacher = c.manifest["identity"]["teacher"]
    start = time.perf_counter()
    model = distill(model_name=teacher["source"], pca_dims=256)
    seconds = time.perf_counter() - start
    words = list(c.vocab.words)
    matrix = np.asarray(model.encode(words, batch_size=4096), dtype=np.float32)
    meta = {"student": "model2vec", "teacher": teacher.get("name"), "train_seconds": round(seconds, 2)}
    Vectors(words, matrix, c.vocab.counts.copy(), meta).save(out)
    print(f"model2vec: distilled from {teacher['source']} in {seconds:.1f} s -> {out}", flush=True)
    return out


def run(args: list[str]) -> None:
    print("+ cli.py", " ".join(args), flush=True)
    subprocess.run([sys.executable, str(CLI), *args], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", required=True, type=Path)
    ap.add_argument("--student", action="append", choices=list(RUNS), help="default: all")
    ap.add_argument("--baseline", action="append", default=[], type=Path, help="plain vectors to compare")
    ap.add_argument("--workdir", type=Path, default=Path("runs/students"))
    ap.add_argument("--out", required=True, type=Path, help="Markdown results file")
    ap.add_argument("--set", action="append", default=[], help="extra --set for every student")
    ap.add_argument("--model2vec", action="store_true", help="add Model2Vec from the same teacher as a peer")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    outputs = []
    for name in args.student or list(RUNS):
        student = name.split("-")[0] if name.startswith(("x2static", "semglove")) else name
        out = args.workdir / f"{name}.bin"
        if not out.exists():
            sets = [x for s in RUNS[name] + args.set for x in ("--set", s)]
            run(["fit-student", "-s", student, "--cache", str(args.cache), "-o", str(out), *sets])
        outputs.append(out)
    if args.model2vec:
        outputs.insert(0, model2vec_peer(args.cache, args.workdir / "model2vec.bin"))
    vectors = [*map(str, args.baseline), *map(str, outputs)]
    run(["eval", *vectors, "--markdown", str(args.out)])
    lines = ["", "## Training throughput", ""]
    lines += ["| vectors | student | seconds | tokens/s |", "|---|---|---:|---:|"]
    for path in vectors:
        side = Path(path + ".meta.json")
        meta = json.loads(side.read_text())["meta"] if side.is_file() else {}
        rate = meta.get("tokens_per_second")
        lines.append(
            f"| {Path(path).name} | {meta.get('student', '?')} | {meta.get('train_seconds', '?')} "
            f"| {'?' if rate is None else f'{rate:,}'} |"
        )
    with open(args.out, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
