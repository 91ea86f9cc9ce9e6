"""The teacher stage: run a teacher once over a corpus and hand each shard's arrays to the cache writer."""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterator
from dataclasses import asdict
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from ctx2static.cache.layout import PCA_H5
from ctx2static.cache.writer import CacheWriter, WordSums
from ctx2static.errors import UserError
from ctx2static.fileio import sha256_file
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # torch and transformers load only when a teacher runs
    from ctx2static.pipeline.align import Encoding
    from ctx2static.pipeline.teacher import Teacher, TeacherOutput


def _identity(teacher: Teacher, corpus: Corpus, vocab: Vocab, cfg: ExtractConfig) -> dict:
    """Everything that determines the cache's content; a resumed run must match it exactly."""
    tok = teacher.tokenizer
    ident = {
        "teacher": {
            "name": teacher.name,
            "source": teacher.source,
            "revision": teacher.fingerprint(),
            "family": teacher.kind.value,
            "substitutes_from": teacher.decoder,
            "layer": teacher.layer_name,
            "precision": teacher.precision,
            "pooling": "mean over subword tokens",
            "max_length": teacher.max_length,
            "tokenizer": f"{type(tok).__name__} ({len(tok)} tokens)",
            "bos_prepended": teacher.bos_id is not None,
            "substitute_tokens": "all" if teacher.substitutes is None else len(teacher.substitutes),
        },
        "corpus": [{"path": str(Path(p).resolve()), "sha256": sha256_file(p)} for p in corpus.paths],
        "corpus_config": asdict(corpus.config),
        "vocab": {"sha256_16": vocab.digest(), "size": len(vocab)},
        "options": asdict(cfg),
        "code_version": version("ctx2static"),
    }
    return ident


def _chunks(it: Iterator, size: int) -> Iterator[list]:
    while batch := list(itertools.islice(it, size)):
        yield batch


def paragraph_inputs(
    teacher: Teacher, paras: np.ndarray, encs: list[Encoding], words: list[list[str]], max_length: int
) -> tuple[list[Encoding], list[np.ndarray]]:
    """X2Static Eq. 4 inputs: a paragraph's consecutive sentences packed into inputs, grouped by sentence.

    Each input holds at most ``max_length`` teacher tokens; also returns each input's sentence indices.
    """
    limit = max_length - 3  # room for the special tokens
    texts, word_sent, members = [], [], []
    i = 0
    while i < len(encs):
        j, used = i, 0
        while j < len(encs) and paras[j] == paras[i]:
            n = int((encs[j].tok_group >= 0).sum())
            if j > i and used + n > limit:
                break
            used += n
            j += 1
        texts.append([w for s in range(i, j) for w in words[s]])
        word_sent.append(np.repeat(np.arange(j - i), [len(words[s]) for s in range(i, j)]))
        members.append(np.arange(i, j))
        i = j
    p_encs = [e.regroup(g) for e, g in zip(teacher.encode(texts, max_length), word_sent, strict=True)]
    return p_encs, members


def word_ids(vocab: Vocab, words: list[list[str]]) -> list[np.ndarray]:
    """Static vocabulary ids of each sentence's words (-1 outside the vocabulary)."""
    index = vocab.index
    return [np.fromiter((index.get(w, -1) for w in ws), dtype=np.int32, count=len(ws)) for ws in words]


def mark_occurrences(encs: list[Encoding], wids: list[np.ndarray]) -> list[np.ndarray]:
    """Occurrences: vocabulary words the teacher saw whole; set as each encoding's ``wanted`` groups.

    Per-occurrence signals are kept for them only, so no top-k is computed for the rest.
    """
    occ = [(w >= 0) & e.complete for e, w in zip(encs, wids, strict=True)]
    for e, m in zip(encs, occ, strict=True):
        e.wanted = m
    return occ


def shard_arrays(
    teacher: Teacher, cfg: ExtractConfig, vocab: Vocab, sents: list[tuple[int, list[str]]]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None, dict, WordSums]:
    """Run the teacher over one shard's sentences.

    Returns its dense arrays (sentence and paragraph means in fp16 unless ``float32_means``; the
    per-occurrence vectors in
    float32 when asked for, before any PCA), attention rows, stats and per-word sums of the
    occurrence vectors (always: they make ``ase`` and the students' start table).
    """
    from ctx2static.pipeline.batching import run_sorted
    from ctx2static.pipeline.teacher import Request

    words = [toks for _, toks in sents]
    paras = np.asarray([pid for pid, _ in sents], dtype=np.int64)
    means_dtype = np.float32 if cfg.float32_means else np.float16
    wids = word_ids(vocab, words)
    encs = teacher.encode(words, cfg.max_length)
    aligned = [e.complete for e in encs]
    occ = mark_occurrences(encs, wids)
    request = Request(vectors=True, topk=cfg.topk, attention=cfg.attention)
    outs: list[TeacherOutput] = run_sorted(encs, cfg.token_budget, lambda b: teacher.forward(b, request))
    arrays: dict[str, np.ndarray] = {
        "sent_para": paras,
        "sent_offsets": np.concatenate([[0], np.cumsum([len(w) for w in wids])]).astype(np.int64),
        "word_ids": np.concatenate(wids),
        "word_aligned": np.concatenate(aligned),
        "sent_ctx": np.stack([o.mean for o in outs]).astype(means_dtype),
    }
    occ_vec = np.concatenate([o.vectors[m] for o, m in zip(outs, occ, strict=True)])
    sums = WordSums.of(arrays["word_ids"][np.concatenate(occ)], occ_vec)
    if cfg.vectors:
        arrays["occ_vec"] = occ_vec
    if cfg.topk:
        arrays["topk_ids"] = np.concatenate([o.topk_ids[m] for o, m in zip(outs, occ, strict=True)])
        arrays["topk_scores"] = np.concatenate([o.topk_scores[m] for o, m in zip(outs, occ, strict=True)])
    attn = None
    if cfg.attention:
        rows: dict[str, list[np.ndarray]] = {"occ": [], "ctx": [], "offset": [], "weight": []}
        base = 0
        for o, w, m in zip(outs, wids, occ, strict=True):
            pos = np.flatnonzero(m)
            ctx, wt = o.attn_ctx[pos], o.attn_weight[pos]
            occ_ix = np.broadcast_to((base + np.arange(len(pos)))[:, None], ctx.shape)
            keep = ctx >= 0
            rows["occ"].append(occ_ix[keep])
            rows["ctx"].append(w[ctx[keep]])
            rows["offset"].append((ctx - pos[:, None])[keep])
            rows["weight"].append(wt[keep])
            base += len(pos)
        dtypes = {"occ": np.int32, "ctx": np.int32, "offset": np.int16, "weight": np.float32}
        attn = {
            k: np.concatenate(v).astype(dtypes[k]) if v else np.zeros(0, dtypes[k]) for k, v in rows.items()
        }
    if cfg.paragraph:
        limit = min(cfg.paragraph_max_length, teacher.max_length)
        p_encs, members = paragraph_inputs(teacher, paras, encs, words, limit)
        p_outs = run_sorted(p_encs, cfg.token_budget, lambda b: teacher.forward(b, Request(vectors=True)))
        # a sentence cut by the paragraph limit keeps its own sentence context instead
        para_ctx = np.stack([o.mean for o in outs])
        for o, e, mem in zip(p_outs, p_encs, members, strict=True):
            para_ctx[mem[e.complete]] = o.vectors[e.complete]
        arrays["para_ctx"] = para_ctx.astype(means_dtype)
    stats = {
        "n_sentences": len(sents),
        "n_words": len(arrays["word_ids"]),
        "n_occurrences": int(sum(int(m.sum()) for m in occ)),
        "n_truncated_words": int(sum(int((~a).sum()) for a in aligned)),
        "n_teacher_tokens": int(sum(len(e.ids) for e in encs)),
    }
    return arrays, attn, stats, sums


def _pca(writer: CacheWriter, vectors: np.ndarray, dim: int) -> dict[str, np.ndarray]:
    """The cache's PCA, fitted on the first shard's vectors (SVD, signs fixed) and stored with it."""
    stored = writer.aux(PCA_H5)
    if stored is not None:
        return stored
    if len(vectors) < dim or vectors.shape[1] < dim:
        raise UserError(
            f"--pca {dim}: the first shard has {len(vectors)} vectors of width {vectors.shape[1]}; "
            "use a smaller --pca or a larger --shard-size"
        )
    x = vectors.astype(np.float64)
    mean = x.mean(0)
    _, sv, vt = np.linalg.svd(x - mean, full_matrices=False)
    comps = vt[:dim] * np.sign(vt[:dim, [0]] + (vt[:dim, [0]] == 0))
    pca = {
        "mean": mean.astype(np.float32),
        "components": comps.astype(np.float32),
        "explained_variance_ratio": (sv[:dim] ** 2 / (sv**2).sum()).astype(np.float32),
    }
    writer.add_aux(PCA_H5, pca)
    return pca


def token_words(teacher: Teacher, vocab: Vocab, lowercase: bool) -> np.ndarray:
    """The static word each teacher token spells (its decoded text, stripped), -1 for none."""
    tok, index = teacher.tokenizer, vocab.index
    surface = (tok.decode([i]).strip() for i in range(len(tok)))
    return np.fromiter(
        (index.get(s.lower() if lowercase else s, -1) for s in surface), dtype=np.int32, count=len(tok)
    )


def word_substitutes(teacher: Teacher, words: np.ndarray, k: int) -> None:
    """Restrict top-k substitutes to the teacher tokens that spell a vocabulary word.

    The students map substitutes to static words and drop the rest (SemGloVe md, ``X = M B``), so the
    other tokens (subword pieces, unused slots, words outside the vocabulary) would only displace
    usable ones; leaving them out also spares their rows of the decoder product.
    """
    ids = np.flatnonzero(words >= 0)
    if len(ids) <= k:
        raise UserError(
            f"--topk {k}: only {len(ids)} of the teacher's tokens spell a vocabulary word; "
            "use a smaller --topk or a larger vocabulary (--min-count)"
        )
    teacher.restrict_substitutes(ids)


def vocab_tables(
    teacher: Teacher, vocab: Vocab, cfg: ExtractConfig, words: np.ndarray
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The per-vocabulary tables and the teacher token table, written once at the end of extract.

    Tables: "token" (input-embedding subword mean), "word" (the word encoded alone), and the
    teacher's whole input-embedding matrix ("teacher_token_emb", fp16: with the tokenizer it lets
    any string be composed from its subwords); the token table maps each teacher token id to its
    string and the static word it spells (-1 for none).
    """
    from ctx2static.pipeline.batching import run_sorted
    from ctx2static.pipeline.teacher import Request

    encs = teacher.encode([[w] for w in vocab.words], cfg.max_length)
    outs = run_sorted(encs, cfg.token_budget, lambda b: teacher.forward(b, Request(vectors=True)))
    emb = teacher.model.get_input_embeddings().weight.detach().float().cpu().numpy()
    token_emb = np.stack(
        [emb[e.ids[e.tok_group == 0]].mean(0) if (e.tok_group == 0).any() else emb[0] * 0 for e in encs]
    )
    arrays = {
        "token_emb": token_emb.astype(np.float32),
        "word_emb": np.stack([o.vectors[0] for o in outs]).astype(np.float32),
        "word_complete": np.asarray([bool(e.complete[0]) for e in encs]),
        "teacher_token_emb": emb.astype(np.float16),
    }
    n_tok = len(teacher.tokenizer)
    strings = teacher.tokenizer.convert_ids_to_tokens(list(range(n_tok)))
    tokens = {
        "id": np.arange(n_tok, dtype=np.int32),
        "token": np.asarray([s if s is not None else "" for s in strings], dtype=object),
        "word": words,
    }
    return arrays, tokens


def extract(corpus: Corpus, vocab: Vocab, teacher: Teacher, out: str | Path, cfg: ExtractConfig) -> dict:
    """Write (or resume) the cache in ``out``; return its manifest (plus this run's ``run`` timing).

    The cache writer records each shard only once it is written whole, so a re-run continues
    after the last recorded shard and yields the same bytes as one run. A re-run (of a complete
    cache too) re-verifies the committed files and rebuilds the damaged ones
    (:class:`~ctx2static.cache.writer.CacheWriter`).
    """
    words = token_words(teacher, vocab, corpus.config.lowercase)
    if cfg.topk:
        word_substitutes(teacher, words, cfg.topk)
    writer = CacheWriter.open(out, _identity(teacher, corpus, vocab, cfg), vocab)
    try:
        return _write(corpus, vocab, teacher, writer, cfg, words)
    finally:
        writer.close()


def _write(
    corpus: Corpus, vocab: Vocab, teacher: Teacher, writer: CacheWriter, cfg: ExtractConfig, words: np.ndarray
) -> dict:
    """The shards the cache lacks or holds damaged, then the vocabulary tables (see :func:`extract`)."""
    if writer.complete and not writer.damaged:
        return writer.manifest
    done = writer.n_shards
    sentences = corpus.sentences()
    if cfg.max_sentences:
        sentences = itertools.islice(sentences, cfg.max_sentences)
    t0, n_tok = time.perf_counter(), 0
    pca: dict[str, np.ndarray] | None = None
    with tqdm(unit="sent", desc="extract", initial=done * cfg.shard_size, mininterval=1.0) as bar:
        for i, sents in enumerate(_chunks(sentences, cfg.shard_size)):
            if i < done and i not in writer.damaged:
                continue
            arrays, attn, stats, sums = shard_arrays(teacher, cfg, vocab, sents)
            if cfg.vectors:
                vec = arrays["occ_vec"]
                if cfg.pca:
                    pca = pca or _pca(writer, vec, cfg.pca)
                    vec = (vec - pca["mean"]) @ pca["components"].T
                arrays["occ_vec"] = vec.astype(np.float16)
            if i < done:
                writer.rebuild_shard(i, arrays, attn)
                log.info("shard %d rebuilt", i)
            else:
                writer.add_shard(arrays, attn, stats, sums)
                bar.update(len(sents))
            n_tok += stats["n_teacher_tokens"]
    secs = time.perf_counter() - t0
    run = {"seconds": secs, "teacher_tokens_per_s": n_tok / secs if secs else 0.0}
    if not writer.n_shards:
        raise UserError(f"{', '.join(map(str, corpus.paths))}: no sentences to extract")
    if not writer.complete:
        tables, tokens = vocab_tables(teacher, vocab, cfg, words)
        writer.finish(tables, tokens, teacher.tokenizer.backend_tokenizer.to_str())
    return {**writer.manifest, "run": run}
