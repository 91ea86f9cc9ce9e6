"""Write small teacher caches with known content (no teacher), for the cache students' tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ctx2static.cache.store import (
    TEACHER_TOKENS,
    VOCAB_H5,
    VOCAB_TSV,
    shard_name,
    write_h5,
    write_manifest,
    write_parquet,
)
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
    topk: tuple[np.ndarray, np.ndarray] | None = None,
    token_words: np.ndarray | None = None,
    attention: dict[str, np.ndarray] | None = None,
) -> Path:
    """A cache of ``sentences`` (word ids, -1 = OOV) with the given per-sentence/occurrence arrays."""
    folder.mkdir(parents=True, exist_ok=True)
    flat = np.concatenate([np.asarray(s, dtype=np.int64) for s in sentences])
    counts = np.bincount(flat[flat >= 0], minlength=len(words))
    Vocab(words, counts).save(folder / VOCAB_TSV)
    signals = ["sent_para", "sent_offsets", "word_ids", "word_aligned", "sent_ctx"]
    signals += ["para_ctx"] * (para_ctx is not None) + ["occ_vec"] * (occ_vec is not None)
    signals += ["topk_ids", "topk_scores"] * (topk is not None) + ["attention"] * (attention is not None)
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
        if topk is not None:
            arrays["topk_ids"] = topk[0][occ_base : occ_base + n_occ].astype(np.int32)
            arrays["topk_scores"] = topk[1][occ_base : occ_base + n_occ].astype(np.float32)
        name = f"{shard_name(i)}.h5"
        files = {name: write_h5(folder / name, arrays)}
        if attention is not None:  # rows with a global occurrence index, re-based per shard
            sel = (attention["occ"] >= occ_base) & (attention["occ"] < occ_base + n_occ)
            cols = {k: v[sel] for k, v in attention.items()}
            cols["occ"] = (cols["occ"] - occ_base).astype(np.int32)
            aname = f"{shard_name(i)}.attn.parquet"
            files[aname] = write_parquet(folder / aname, cols)
        occ_base += n_occ
        shards.append({"name": shard_name(i), "files": files, "n_words": len(ids), "n_occurrences": n_occ})
    vocab_files = {}
    if vocab_tables is not None:
        vocab_files[VOCAB_H5] = write_h5(folder / VOCAB_H5, vocab_tables)
    if token_words is not None:
        n_tok = len(token_words)
        table = {
            "id": np.arange(n_tok, dtype=np.int32),
            "token": np.array([f"t{t}" for t in range(n_tok)], dtype=object),
        }
        table["word"] = np.asarray(token_words, dtype=np.int32)
        vocab_files[TEACHER_TOKENS] = write_parquet(folder / TEACHER_TOKENS, table)
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
