"""Cache bytes per corpus token, per signal set, and what a 1.28B-word corpus would take.

    python bench/speed/cache_bytes.py --corpus "$CTX2STATIC_SHARED"/corpus/brown.txt.xz \\
        --out bench/results/cache_bytes.md

Two in-process ``extract`` runs of the first ``--max-sentences`` sentences (``--vectors
--paragraph``, then ``--vectors --pca 128``), their sizes read as ``cache info`` reads them
(``cache.info.signal_bytes`` and ``once_bytes``), then the per-signal-set table, a bert-base column
(the same shapes at 768 wide) and the extrapolation to X2Static's Wikipedia corpus (Gupta & Jaggi
2021: 54M sentences, 1.28B words), all derived from the measured bytes. HDF5 datasets are stored
uncompressed, so every size is fixed by the arrays' shapes, not by their values.
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import h5py

from ctx2static.cache import Cache, layout
from ctx2static.cache.info import once_bytes, signal_bytes
from ctx2static.pipeline.extract import extract_files

sys.path.insert(0, str(Path(__file__).parent))
from machine import SHARED_CORPUS, argv_line, cpu_name

VECTOR_SIGNALS = ("sent_ctx", "para_ctx", "occ_vec")  # one teacher-wide row each; the rest are ids
BERT_BASE_DIM = 768
TARGET_WORDS = 1.28e9  # X2Static's Wikipedia corpus
# Vocabulary growth (Heaps' law) through two measured points, (corpus tokens, words seen 5 times):
# Brown alone and the whole shared corpus (brown + sotu + gcide), as the vocabulary builder counts them.
HEAPS_POINTS = ((1_161_192, 14_167), (6_430_325, 40_969))


@dataclass
class Measured:
    """One cache's sizes and counts."""

    options: dict[str, object]
    signals: dict[str, int]  # stored bytes per shard signal, summed over the shards
    once: dict[str, int]  # stored bytes of each per-cache table or file
    shapes: dict[str, tuple[int, ...]]  # vocab.h5's datasets
    widths: dict[str, int]  # row width of each vector signal
    tokens: int
    sentences: int
    occurrences: int
    vocab: int


def measure(folder: Path) -> Measured:
    """A finished cache's sizes, as ``cache info`` reports them, and the shapes that scale them."""
    cache = Cache.open(folder)
    shards = cache.manifest["shards"]
    with h5py.File(folder / layout.VOCAB_H5, "r") as f:
        shapes = {k: tuple(f[k].shape) for k in f}
    widths: dict[str, int] = {}
    for name in shards[0]["files"]:
        if name.endswith(".h5"):
            with h5py.File(folder / name, "r") as f:
                widths.update({k: f[k].shape[1] for k in VECTOR_SIGNALS if k in f})
    return Measured(
        options=dict(cache.manifest["identity"].get("options", {})),
        signals=signal_bytes(cache),
        once=once_bytes(cache),
        shapes=shapes,
        widths=widths,
        tokens=sum(s["n_words"] for s in shards),
        sentences=sum(s["n_sentences"] for s in shards),
        occurrences=sum(s["n_occurrences"] for s in shards),
        vocab=int(cache.manifest["identity"]["vocab"]["size"]),
    )


def run(
    corpus: list[str], teacher: str, scratch: Path, max_sentences: int, shard_size: int, pca: int
) -> dict[str, Measured]:
    """Extract and measure ``--vectors --paragraph`` and ``--vectors --pca`` caches in ``scratch``."""
    out = {}
    runs: dict[str, dict[str, object]] = {
        "vp": {"vectors": True, "paragraph": True},
        "pca": {"vectors": True, "pca": pca},
    }
    for name, signals in runs.items():
        folder = scratch / name
        options: dict[str, object] = {
            "max_sentences": max_sentences,
            "shard_size": shard_size,
            "threads": 1,
            **signals,
        }
        print(extract_files(corpus, teacher, folder, None, options), flush=True)
        out[name] = measure(folder)
    return out


def gb(bytes_per_token: float) -> str:
    return f"{bytes_per_token * TARGET_WORDS / 1e9:,.0f} GB"


def per_vocab_word(m: Measured, scale: float) -> float:
    """Bytes per vocabulary word of the tables with one row per word (float rows scaled to another width)."""
    total = 0.0
    for key, shape in m.shapes.items():
        if shape and shape[0] == m.vocab:
            wide = len(shape) == 2 and shape[1] == m.widths["sent_ctx"]
            total += m.once.get(key, 0) * (scale if wide else 1)
    total += m.once.get(layout.VOCAB_TSV, 0)
    return total / m.vocab


def heaps_vocab() -> tuple[float, float]:
    """The vocabulary at ``TARGET_WORDS`` by Heaps' law through ``HEAPS_POINTS``, and its exponent."""
    (t1, v1), (t2, v2) = HEAPS_POINTS
    beta = math.log(v2 / v1) / math.log(t2 / t1)
    return v2 * (TARGET_WORDS / t2) ** beta, beta


def render(ms: dict[str, Measured], teacher: str, command: str) -> str:
    """The whole results file from the two measured caches."""
    vp, pca = ms["vp"], ms["pca"]
    d = vp.widths["sent_ctx"]
    p = pca.options.get("pca")
    name = "MiniLM" if teacher == "minilm" else f"`{teacher}`"
    scale = BERT_BASE_DIM / d

    def bpt(m: Measured, key: str) -> float:
        return m.signals.get(key, 0) / m.tokens

    def ids(m: Measured) -> float:
        return sum(v for k, v in m.signals.items() if k not in VECTOR_SIGNALS) / m.tokens

    id_names = ", ".join(f"`{k}`" for k in vp.signals if k not in VECTOR_SIGNALS)
    lines = [
        "# Cache bytes per corpus token, per signal set, and what a 1.28B-word corpus takes",
        "",
        f"Written by `bench/speed/cache_bytes.py` (cache format {layout.FORMAT_VERSION}); "
        f"{datetime.date.today().isoformat()}, {cpu_name()} ({platform.machine()}). Command:",
        "",
        f"    {command}",
        "",
        f"Teacher `{teacher}`. Two `extract` runs, each with `--max-sentences "
        f"{vp.options.get('max_sentences')}`: `brown-vp` (`--vectors --paragraph`) and `brown-pca` "
        f"(`--vectors --pca {p}`); sizes as `cache info` reports them.",
        "",
        f"The caches hold {vp.sentences:,} sentences: {vp.tokens:,} corpus tokens "
        f"({vp.tokens / vp.sentences:.1f} a sentence), {vp.occurrences:,} occurrences of the {vp.vocab:,} "
        "vocabulary words. HDF5 datasets are stored uncompressed, so every number is fixed by the arrays' "
        "shapes, not by their values.",
        "",
        "## Measured (`cache info`, bytes per corpus token)",
        "",
        "| signal | brown-vp | brown-pca |",
        "|---|---:|---:|",
    ]

    def cell(m: Measured, key: str) -> str:
        return f"{bpt(m, key):,.1f}" if key in m.signals else ""

    for key in VECTOR_SIGNALS:
        reduced = pca.widths.get(key, d) != vp.widths.get(key, d)
        w = f"{vp.widths.get(key, d)}" + (f" / PCA {pca.widths[key]}" if reduced else "")
        lines.append(f"| `{key}` (fp16, {w}) | {cell(vp, key)} | {cell(pca, key)} |")
    lines.append(f"| {id_names} | {ids(vp):,.1f} | {ids(pca):,.1f} |")
    totals = {n: sum(m.signals.values()) / m.tokens for n, m in ms.items()}
    lines.append(f"| shards, total | {totals['vp']:,.1f} | {totals['pca']:,.1f} |")

    per_word = per_vocab_word(vp, 1.0)
    per_word_bert = per_vocab_word(vp, scale)
    vocab_tables = ", ".join(f"`{k}`" for k, s in vp.shapes.items() if s and s[0] == vp.vocab)
    fixed = sum(
        v for k, v in vp.once.items() if not (k in vp.shapes and vp.shapes[k] and vp.shapes[k][0] == vp.vocab)
    )
    fixed -= vp.once.get(layout.VOCAB_TSV, 0)
    lines += [
        "",
        f"Written once per cache: {vocab_tables}, `{layout.VOCAB_TSV}`: {per_word:,.0f} bytes per vocabulary "
        f"word; everything else (the teacher's token table, tokenizer and input embeddings, the manifest): "
        f"{fixed / 1e6:,.1f} MB.",
        "",
        "## Per signal set (each row: the default signals plus that flag)",
        "",
        f"bert-base column: the same shapes with {BERT_BASE_DIM}-wide fp16 rows (`sent_ctx`, `para_ctx`, "
        f"`occ_vec` x{scale:g}; ids and PCA rows unchanged), the same counts (bert-base-uncased has MiniLM's "
        "WordPiece vocabulary). 1.28B words: X2Static's Wikipedia corpus (Gupta & Jaggi 2021: 54M sentences, "
        "1.28B words), at these bytes per token (Wikipedia's longer sentences would make the per-sentence "
        "rows a little cheaper per token).",
        "",
        f"| signal set | {name} B/token | bert-base B/token | {name}, 1.28B words | bert-base, 1.28B words |",
        "|---|---:|---:|---:|---:|",
    ]
    base = ids(vp) + bpt(vp, "sent_ctx")
    base_b = ids(vp) + bpt(vp, "sent_ctx") * scale
    rows = [
        ("default (sentence means, word ids)", base, base_b),
        ("`--paragraph`", base + bpt(vp, "para_ctx"), base_b + bpt(vp, "para_ctx") * scale),
        ("`--vectors`", base + bpt(vp, "occ_vec"), base_b + bpt(vp, "occ_vec") * scale),
        (
            f"`--vectors --pca {p}`",
            ids(pca) + bpt(pca, "sent_ctx") + bpt(pca, "occ_vec"),
            ids(pca) + bpt(pca, "sent_ctx") * scale + bpt(pca, "occ_vec"),
        ),
    ]
    for label, a, b in rows:
        lines.append(f"| {label} | {a:,.1f} | {b:,.1f} | {gb(a)} | {gb(b)} |")

    v, beta = heaps_vocab()
    (t1, v1), (t2, v2) = HEAPS_POINTS
    lines += [
        "",
        f"Per-vocabulary tables: the vocabulary extrapolated by Heaps' law through Brown ({t1:,} tokens, "
        f"{v1:,} words seen 5 times) and the full shared corpus ({t2:,} tokens, {v2:,} words): "
        f"V = {v2:,} x ({TARGET_WORDS:.3g} / {t2:.3g})^{beta:.3f} = {v / 1e6:.2f}M words; "
        f"x {per_word:,.0f} bytes = {v * per_word / 1e9:.1f} GB ({name}), "
        f"x {per_word_bert:,.0f} bytes = {v * per_word_bert / 1e9:.1f} GB (bert-base). "
        "While extract runs, the running per-word sums (V x d float64) take "
        f"{v * d * 8 / 1e9:.1f} GB ({name}) / {v * BERT_BASE_DIM * 8 / 1e9:.1f} GB (bert-base) more; "
        "they are deleted when the cache is complete. A Wikipedia vocabulary grows faster than this mixed "
        "corpus's, so take the table sizes as a lower bound.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--corpus", nargs="+", default=[str(SHARED_CORPUS / "brown.txt.xz")], help="Corpus files."
    )
    ap.add_argument("--teacher", default="minilm", help="Teacher (default: the packaged MiniLM).")
    ap.add_argument("--max-sentences", type=int, default=4000, help="Sentences each extract reads.")
    ap.add_argument("--shard-size", type=int, default=2000, help="Sentences per shard.")
    ap.add_argument("--pca", type=int, default=128, help="The second run's --pca width.")
    ap.add_argument("--out", type=Path, help="Write the results file here (else print it).")
    ap.add_argument("--scratch", type=Path, help="Folder for the two caches (default: a temp folder).")
    args = ap.parse_args()
    command = "python bench/speed/cache_bytes.py " + argv_line(sys.argv[1:])
    with tempfile.TemporaryDirectory(prefix="cache-bytes-", dir=args.scratch) as tmp:
        ms = run(args.corpus, args.teacher, Path(tmp), args.max_sentences, args.shard_size, args.pca)
    text = render(ms, args.teacher, command)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
