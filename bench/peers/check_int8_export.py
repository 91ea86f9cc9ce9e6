"""Do quantized and reduced Model2Vec exports load in model2vec and encode as ``Vectors.encode``?

Two steps, because ctx2static is not installed in the peers' venv:

    # 1. ctx2static's environment: export float32 / float16 / int8 folders at full and reduced dims,
    #    and save Vectors.encode's vectors of the same texts (texts.json, ref-<dims>.npy)
    python bench/peers/check_int8_export.py prepare /root/bench-runs/brown-mpnet-ase.bin \\
        --corpus ../shared/corpus/brown.txt.xz --out /tmp/int8check
    # 2. the peers' venv: load each folder in model2vec, encode the texts, compare
    /root/peers-venv/bin/python bench/peers/check_int8_export.py compare /tmp/int8check \\
        --md bench/results/export_quantize.md

The reference of a reduced folder is ``vectors.reduced(D).encode(...)``, the table the folder
was made from before quantization. Texts whose words are all in the table are reported apart:
there the tokenisations agree, so float32 must give cosine 1; a word outside the table is the
mean of its teacher pieces in ``Vectors.encode`` but counts once per piece in a token bag.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

QUANTIZE = ("float32", "float16", "int8")


def folder_name(quantize: str, dims: int) -> str:
    return f"{quantize}-{dims or 'full'}"


def prepare(args: argparse.Namespace) -> None:
    """Export the folders and save the texts, the reference vectors and which texts are all known."""
    from peerrun import corpus_texts

    from ctx2static.api import export
    from ctx2static.vectors import Vectors
    from ctx2static.words import tokenize

    out = args.out
    out.mkdir(parents=True, exist_ok=False)
    vectors = Vectors.load(args.vectors)
    texts = list(corpus_texts(args.corpus))[:: args.every][: args.texts]
    known = [all(vectors.row_of(w) is not None for w in tokenize(t, vectors.lowercase)) for t in texts]
    pooling = {"weighting": args.weighting, "sif_a": args.sif_a}
    for dims in args.dims:
        table = vectors.reduced(dims) if dims else vectors
        np.save(out / f"ref-{dims or 'full'}.npy", table.encode(texts, **pooling))
        for quantize in QUANTIZE:
            folder = out / folder_name(quantize, dims)
            export(vectors, "model2vec", folder, score=False, quantize=quantize, dims=dims, **pooling)
    info = {
        "vectors": str(args.vectors), "dim": vectors.dim, "words": len(vectors), **pooling,
        "texts": texts, "known": known, "dims": args.dims,
        "command": " ".join(["python", *sys.argv]),
    }  # fmt: skip
    (out / "texts.json").write_text(json.dumps(info), encoding="utf-8")
    print(f"{out}: {len(texts)} texts ({sum(known)} of table words only), {len(args.dims) * 3} folders")


def folder_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 2**20


def compare(args: argparse.Namespace) -> None:
    """Load each folder in model2vec, encode the texts, and write the cosines and sizes as Markdown."""
    import model2vec
    from model2vec import StaticModel

    info = json.loads((args.folder / "texts.json").read_text(encoding="utf-8"))
    texts, known = info["texts"], np.array(info["known"])
    rows = []
    for dims in info["dims"]:
        ref = np.load(args.folder / f"ref-{dims or 'full'}.npy")
        for quantize in QUANTIZE:
            folder = args.folder / folder_name(quantize, dims)
            got = StaticModel.from_pretrained(folder).encode(texts)
            norms = np.maximum(np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1), 1e-12)
            cos = (got * ref).sum(1) / norms
            rows.append(
                f"| {dims or info['dim']} | {quantize} | {folder_mib(folder):.1f} | "
                f"{cos[known].mean():.5f} | {cos[known].min():.4f} | {cos.mean():.5f} | {cos.min():.4f} |"
            )
    lines = [
        "# Model2Vec exports: folder size and fidelity to `Vectors.encode` (float32 / float16 / int8)",
        "",
        f"Date: {time.strftime('%Y-%m-%d', time.gmtime())}; model2vec {model2vec.__version__}; "
        f"{platform.machine()}, {os.cpu_count()} cores (no timings here).",
        "",
        f"Vectors: `{info['vectors']}` ({info['words']:,} words x {info['dim']}, with a composer), "
        f"weighting `{info['weighting']}` (a = {info['sif_a']}), normalize on. Texts: {len(texts)} Brown "
        f"lines, {int(known.sum())} of them of table words only. Cosine of "
        "`StaticModel.from_pretrained(folder).encode(texts)` with `Vectors.encode` of the table the folder "
        "was made from (reduced to the dims by PCA, before quantization).",
        "",
        "Commands:",
        "",
        "```",
        info["command"],
        " ".join([Path(sys.executable).as_posix(), *sys.argv]),
        "```",
        "",
        "| dims | rows | folder MiB | cos, known words: mean | min | cos, all texts: mean | min |",
        "|---:|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.md:
        args.md.write_text(text, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare", help="ctx2static's environment: export and save the references")
    p.add_argument("vectors", type=Path)
    p.add_argument("--corpus", action="append", required=True, help="text files, one sentence a line")
    p.add_argument("--out", type=Path, required=True, help="a new folder")
    p.add_argument("--texts", type=int, default=2000)
    p.add_argument("--every", type=int, default=25, help="take every N-th line of the corpus")
    p.add_argument("--dims", type=int, nargs="+", default=[0, 256], help="0: the table's own")
    p.add_argument("--weighting", default="sif")
    p.add_argument("--sif-a", type=float, default=1e-3)
    c = sub.add_parser("compare", help="the peers' venv: load the folders in model2vec and compare")
    c.add_argument("folder", type=Path)
    c.add_argument("--md", type=Path, help="write the table here too")
    args = ap.parse_args()
    prepare(args) if args.step == "prepare" else compare(args)


if __name__ == "__main__":
    main()
