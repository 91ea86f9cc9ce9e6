"""Write small teacher caches with known content (no teacher), for the cache students' tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from ctx2static.cache.store import VOCAB_H5, VOCAB_TSV, shard_name, write_h5, write_manifest
from ctx2static.pipeline.vocab import Vocab


def write_cache(
    folder: Path,
    words: list[str],
    sentences: list[list[int]],
    shard_size: int,
    sent_ctx: np.ndarray,
    occ_vec: np.ndarray | None = None,
    para_ctx: np.ndarray | None = None,
    vocab_tables: dict[str, np.ndarray] | None = None,
) -> Path:
    """A cache of ``sentences`` (word ids, -1 = OOV) with the given per-sentence/occurrence arrays."""
    folder.mkdir(parents=True, exist_ok=True)
    flat = np.concatenate([np.asarray(s, dtype=np.int64) for s in sentences])
    counts = np.bincount(flat[flat >= 0], minlength=len(words))
    Vocab(words, counts).save(folder / VOCAB_TSV)
    signals = ["sent_para", "sent_offsets", "word_ids", "word_aligned", "sent_ctx"]
    signals += ["para_ctx"] * (para_ctx is not None) + ["occ_vec"] * (occ_vec is not None)
    shards, occ_base = [], 0
    for i, s0 in enumerate(range(0, len(sentences), shard_size)):
        sents = sentences[s0 : s0 + shard_size]
        ids = np.concatenate([np.asarray(s, dtype=np.int32) for s in sents])
        arrays = {
            "sent_para": np.arange(s0, s0 + len(sents), dtype=np.int32),
            "sent_offsets": np.concatenate([[0], np.cumsum([len(s) for s in sents])]).astype(np.int64),
            "word_ids": ids,
            "word_aligned": np.ones(len(ids), dtype=bool),
            "sent_ctx": sent_ctx[s0 : s0 + len(sents)].astype(np.float32),
        }
        if para_ctx is not None:
            arrays["para_ctx"] = para_ctx[s0 : s0 + len(sents)].astype(np.float32)
        n_occ = int((ids >= 0).sum())
        if occ_vec is not None:
            arrays["occ_vec"] = occ_vec[occ_base : occ_base + n_occ].astype(np.float16)
        occ_base += n_occ
        name = f"{shard_name(i)}.h5"
        files = {name: write_h5(folder / name, arrays)}
        shards.append({"name": shard_name(i), "files": files, "n_words": len(ids), "n_occurrences": n_occ})
    vocab_files = {}
    if vocab_tables is not None:
        vocab_files[VOCAB_H5] = write_h5(folder / VOCAB_H5, vocab_tables)
    totals = {"n_words": int(sum(s["n_words"] for s in shards))}
    manifest = {
        "identity": {"teacher": {"name": "synthetic"}},
        "signals": signals,
        "shards": shards,
        "vocab_files": vocab_files,
        "totals": totals,
        "complete": True,
    }
    write_manifest(folder, manifest)
    return folder
