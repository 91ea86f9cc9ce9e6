"""`cache info`: what a cache holds, its sizes, bytes per token per signal, checksum validity."""

from __future__ import annotations

import os
from pathlib import Path

import h5py

from ctx2static.cache.layout import SIGNALS, VOCAB_H5
from ctx2static.cache.reader import Cache


def signal_bytes(cache: Cache) -> dict[str, int]:
    """Stored bytes per signal, summed over the shards (HDF5 dataset storage, Parquet file size)."""
    sizes: dict[str, int] = {}
    for s in cache.manifest["shards"]:
        for name in s["files"]:
            p = cache.folder / name
            if not p.is_file():
                continue  # verify() reports it
            if name.endswith(".attn.parquet"):
                sizes["attention"] = sizes.get("attention", 0) + os.path.getsize(p)
                continue
            try:
                with h5py.File(p, "r") as f:
                    for key in f:
                        sizes[key] = sizes.get(key, 0) + f[key].id.get_storage_size()
            except (OSError, KeyError, ValueError):  # what h5py raises for a damaged file
                continue  # verify() reports it
    return sizes


def describe(folder: str | os.PathLike, verify: bool = True) -> tuple[str, bool]:
    """A human-readable report of a cache folder (one line per signal) and whether it is valid."""
    cache = Cache.open(folder)
    m = cache.manifest
    ident = m["identity"]
    t = ident["teacher"]
    shards = m["shards"]
    n_words = sum(s["n_words"] for s in shards)
    n_occ = sum(s["n_occurrences"] for s in shards)
    lines = [
        f"cache {Path(folder)}: {'complete' if cache.complete else 'INCOMPLETE (re-run extract to resume)'}",
        f"teacher: {t['name']} [{t['family']}, substitutes from {t['substitutes_from']}] rev {t['revision']}",
        f"  {t['source']}; layer {t.get('layer', 'last')}, {t.get('precision', 'precision not recorded')}; "
        f"tokenizer {t['tokenizer']}; max length {t['max_length']}",
        "corpus: " + ", ".join(f"{c['path']} (sha256 {c['sha256'][:12]})" for c in ident["corpus"]),
        f"vocab: {ident['vocab']['size']} words (sha256 {ident['vocab']['sha256_16']})",
        f"options: {ident['options']}",
        f"shards: {len(shards)}; sentences {sum(s['n_sentences'] for s in shards)}; words {n_words}; "
        f"occurrences {n_occ}; words cut by max length {sum(s['n_truncated_words'] for s in shards)}",
        "signal                bytes   bytes/word  description",
    ]
    for key, size in signal_bytes(cache).items():
        desc = SIGNALS[key].description
        lines.append(f"{key:<14}{size:>13,}  {size / max(n_words, 1):>10.1f}  {desc}")
    vocab_h5 = cache.folder / VOCAB_H5
    if vocab_h5.is_file():
        lines.append(f"vocab signals: token_emb, word_emb ({vocab_h5.stat().st_size:,} bytes)")
    total = sum(f.stat().st_size for f in cache.folder.iterdir() if f.is_file())
    lines.append(f"total on disk: {total:,} bytes")
    problems = cache.verify() if verify else []
    if verify:
        lines.append(
            f"checksums: {len(cache.files())} files verified, all valid"
            if not problems
            else "checksums: INVALID: " + "; ".join(problems)
        )
    return "\n".join(lines), not problems
