"""`cache info`: what a cache holds, its sizes, bytes per corpus token per signal, checksum validity.

Sizes come in two parts: what grows with the corpus (the shards' signals, per corpus token) and
what is written once per cache (the per-vocabulary tables, the teacher's tokens and tokenizer,
the manifest): a fixed size, whose share per token shrinks as the corpus grows.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from ctx2static.cache import layout
from ctx2static.cache.hdf5 import open_h5
from ctx2static.cache.reader import REBUILD, Cache, not_own_file

ONCE = {  # what the per-cache parts hold, beyond the signals of cache.layout.SIGNALS
    "word_complete": "whether the teacher read each word whole (alone and inside the word template)",
    "teacher_token_emb": "the teacher's input embedding of every token (fp16)",
    layout.VOCAB_TSV: "the static vocabulary (word, count)",
    layout.TEACHER_TOKENS: "teacher token id -> string -> static word",
    layout.TEACHER_TOKENIZER: "the teacher's tokenizer",
    layout.PCA_H5: "the PCA of the occurrence vectors (--pca)",
    layout.MANIFEST: "identity, shard records, checksums",
}


def _h5_storage(path: Path, sizes: dict[str, int]) -> None:
    """Add each dataset's stored bytes in one HDF5 file to ``sizes`` (a damaged file adds nothing)."""
    try:
        with open_h5(path, f"delete it and {REBUILD}") as f:
            for key in f:
                sizes[key] = sizes.get(key, 0) + f[key].id.get_storage_size()
    except (OSError, KeyError, ValueError):  # what h5py raises for a damaged file
        pass  # verify() reports it


def signal_bytes(cache: Cache) -> dict[str, int]:
    """Stored bytes per shard signal, summed over the shards (HDF5 dataset storage, Parquet file size)."""
    sizes: dict[str, int] = {}
    for s in cache.manifest["shards"]:
        for name in s["files"]:
            p = cache.folder / name
            if not_own_file(p):
                continue  # verify() reports it
            if name.endswith(".attn.parquet"):
                sizes["attention"] = sizes.get("attention", 0) + os.path.getsize(p)
            else:
                _h5_storage(p, sizes)
    return sizes


def once_bytes(cache: Cache) -> dict[str, int]:
    """Stored bytes of what is written once per cache: ``vocab.h5``'s tables one by one, the other files.

    Everything in the folder but the shards' files (and temp files of a killed writer).
    """
    shard_files = {name for s in cache.manifest["shards"] for name in s["files"]}
    sizes: dict[str, int] = {}
    for p in sorted(cache.folder.iterdir()):
        if not_own_file(p) or p.name in shard_files or p.name.startswith("."):
            continue
        if p.name == layout.VOCAB_H5:
            _h5_storage(p, sizes)
        else:
            sizes[p.name] = p.stat().st_size
    return sizes


def _description(key: str) -> str:
    if key in layout.SIGNALS:
        return layout.SIGNALS[key].description
    running = key.startswith("word_sums")
    return ONCE.get(key, "the per-word sums of the shards committed so far" if running else "")


def describe(folder: str | os.PathLike, verify: bool = True) -> tuple[str, bool]:
    """A human-readable report of a cache folder (one line per signal) and whether it is valid."""
    cache = Cache.open(folder)
    m = cache.manifest
    ident = m["identity"]
    t, v = (defaultdict(lambda: "?", ident.get(k, {})) for k in ("teacher", "vocab"))  # older, synthetic
    shards = m["shards"]
    n_words = sum(s["n_words"] for s in shards)
    n_occ = sum(s["n_occurrences"] for s in shards)
    lines = [
        f"cache {Path(folder)}: {'complete' if cache.complete else 'INCOMPLETE (re-run extract to resume)'}",
        f"teacher: {t['name']} [{t['family']}, substitutes from {t['substitutes_from']}] rev {t['revision']}",
        f"  {t['source']}; layer {t.get('layer', 'last')}, {t.get('precision', 'precision not recorded')} "
        f"on {t.get('backend', 'torch')} ({t.get('device', 'device not recorded')}); "
        f"tokenizer {t['tokenizer']}; max length {t['max_length']}",
        "corpus: " + ", ".join(f"{c['path']} (sha256 {c['sha256'][:12]})" for c in ident.get("corpus", [])),
        f"vocab: {v['size']} words (sha256 {v['sha256_16']})",
        f"options: {ident.get('options', {})}",
        f"shards: {len(shards)}; sentences {sum(s['n_sentences'] for s in shards)}; words {n_words}; "
        f"occurrences {n_occ}; words cut by max length {sum(s.get('n_truncated_words', 0) for s in shards)}",
        "signal                         bytes  bytes/token  description (bytes/token: per corpus token)",
    ]
    for title, sizes in [
        ("per corpus token (shards)", signal_bytes(cache)),
        ("once per cache (fixed: its share per token shrinks as the corpus grows)", once_bytes(cache)),
    ]:
        lines.append(f"-- {title}")
        for key, size in sizes.items():
            lines.append(f"{key:<24}{size:>13,}  {size / max(n_words, 1):>11.1f}  {_description(key)}")
        total = sum(sizes.values())
        lines.append(f"{'(sum)':<24}{total:>13,}  {total / max(n_words, 1):>11.1f}")
    disk = sum(f.stat().st_size for f in cache.folder.iterdir() if f.is_file())
    lines.append(f"total on disk: {disk:,} bytes, {disk / max(n_words, 1):.1f} per corpus token")
    problems = cache.verify() if verify else []
    if verify:
        lines.append(
            f"checksums: {len(cache.files())} files verified, all valid"
            if not problems
            else "checksums: INVALID: " + "; ".join(problems)
        )
    return "\n".join(lines), not problems
