"""Small teacher caches with known content (no teacher), written through the real cache writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ctx2static.cache.writer import CacheWriter, WordSums
from ctx2static.text.vocab import Vocab


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
    sent_emb: np.ndarray | None = None,
    finish: bool = True,
) -> Path:
    """A cache of ``sentences`` (word ids, -1 = OOV) with the given per-sentence/occurrence arrays.

    The per-word sums are those of ``occ_vec`` (without it, each occurrence counts as its
    sentence's ``sent_ctx`` row). Without ``vocab_tables`` the word/token tables are zeros; without
    ``token_words`` the teacher token table is empty; ``finish=False`` leaves the cache as a killed
    extract would (no tables).
    """
    flat = np.concatenate([np.asarray(s, dtype=np.int64) for s in sentences])
    counts = np.bincount(flat[flat >= 0], minlength=len(words))
    options = {
        "paragraph": para_ctx is not None,
        "vectors": occ_vec is not None,
        "topk": 0 if topk is None else topk[0].shape[1],
        "attention": 0 if attention is None else 1,
        "sentence_embedding": sent_emb is not None,
    }
    identity = {"teacher": {"name": "synthetic"}, "options": options}
    writer = CacheWriter.open(folder, identity, Vocab(words, counts))
    occ_base = 0
    for s0 in range(0, len(sentences), shard_size):
        sents = sentences[s0 : s0 + shard_size]
        ids = np.concatenate([np.asarray(s, dtype=np.int32) for s in sents])
        arrays = {
            "sent_para": np.arange(s0, s0 + len(sents), dtype=np.int32),
            "sent_offsets": np.concatenate([[0], np.cumsum([len(s) for s in sents])]).astype(np.int64),
            "word_ids": ids,
            "word_aligned": np.ones(len(ids), dtype=bool),
            "sent_ctx": sent_ctx[s0 : s0 + len(sents)].astype(np.float16),
        }
        if sent_emb is not None:
            arrays["sent_emb"] = sent_emb[s0 : s0 + len(sents)].astype(np.float16)
        if para_ctx is not None:
            arrays["para_ctx"] = para_ctx[s0 : s0 + len(sents)].astype(np.float16)
        n_occ = int((ids >= 0).sum())
        if occ_vec is not None:
            arrays["occ_vec"] = occ_vec[occ_base : occ_base + n_occ].astype(np.float16)
            vectors = arrays["occ_vec"].astype(np.float32)
        else:
            sent_of = np.repeat(np.arange(len(sents)), [len(s) for s in sents])[ids >= 0]
            vectors = arrays["sent_ctx"][sent_of].astype(np.float32)
        if topk is not None:
            arrays["topk_ids"] = topk[0][occ_base : occ_base + n_occ].astype(np.int32)
            arrays["topk_scores"] = topk[1][occ_base : occ_base + n_occ].astype(np.float32)
        rows = None
        if attention is not None:  # rows with a global occurrence index, re-based per shard
            sel = (attention["occ"] >= occ_base) & (attention["occ"] < occ_base + n_occ)
            rows = {k: v[sel] for k, v in attention.items()}
            rows["occ"] = (rows["occ"] - occ_base).astype(np.int32)
        occ_base += n_occ
        stats = {"n_sentences": len(sents), "n_words": len(ids), "n_occurrences": n_occ}
        writer.add_shard(arrays, rows, stats, WordSums.of(ids[ids >= 0], vectors))
    if finish:
        dim = sent_ctx.shape[1]
        zeros = np.zeros((len(words), dim), np.float32)
        tables = vocab_tables or {"token_emb": zeros, "word_emb": zeros}
        tokens = np.asarray([] if token_words is None else token_words, dtype=np.int32)
        token_table = {
            "id": np.arange(len(tokens), dtype=np.int32),
            "token": np.array([f"t{t}" for t in range(len(tokens))], dtype=object),
            "word": tokens,
        }
        writer.finish(tables, token_table)
    return Path(folder)
