"""Run a teacher once over a corpus and write the sharded, resumable cache (layout: cache/store.py)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import h5py
import numpy as np
from tqdm import tqdm

import ctx2static
from ctx2static.cache.store import (
    FORMAT_VERSION,
    PCA_H5,
    TEACHER_TOKENS,
    VOCAB_H5,
    VOCAB_TSV,
    read_manifest,
    sha256_file,
    shard_name,
    write_h5,
    write_manifest,
    write_parquet,
)
from ctx2static.errors import UserError
from ctx2static.pipeline.corpus import Corpus
from ctx2static.pipeline.vocab import Vocab

if TYPE_CHECKING:  # torch and transformers load only when a teacher runs, not for the CLI's options
    from ctx2static.pipeline.align import Encoding
    from ctx2static.pipeline.teacher import Output, Teacher

# the teacher forward's dtype (Teacher.load): auto = bfloat16 on a GPU (float16 without bf16), else float32
PRECISIONS = ("auto", "float32", "bfloat16", "float16")


@dataclass(frozen=True)
class ExtractConfig:
    """What to cache and how to batch (the per-occurrence signals are off unless asked for)."""

    shard_size: int = 8192  # sentences per shard, length-sorted within one (pads Brown 3.5%; 2048: 9.9%)
    max_length: int = 512  # teacher tokens per sentence (capped at the model's maximum)
    paragraph: bool = False  # X2Static paragraph context (Eq. 4)
    paragraph_max_length: int = 500  # X2Static reference code
    vectors: bool = False  # subword-pooled vector per occurrence (ASE, BERT+Skip-gram, Context-to-Vec)
    pca: int = 0  # reduce those vectors to this many dimensions, PCA fitted on the first shard (0 = off)
    topk: int = 0  # SemGloVe md: top-k substitutes per occurrence (0 = off)
    attention: int = 0  # SemGloVe sd: window +-S, top S context words (0 = off)
    token_budget: int = 4096  # padded tokens per batch
    max_sentences: int = 0  # 0 = the whole corpus


def _identity(teacher: Teacher, corpus: Corpus, vocab: Vocab, cfg: ExtractConfig) -> dict:
    """Everything that determines the cache's content; a resumed run must match it exactly."""
    tok = teacher.tokenizer
    ident = {
        "teacher": {
            "name": teacher.name,
            "source": teacher.source,
            "revision": teacher.fingerprint(),
            "family": teacher.family.value,
            "substitutes_from": teacher.decoder,
            "layer": "last" if teacher.layer == -1 else teacher.layer,
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
        "code_version": ctx2static.__version__,
        "format": FORMAT_VERSION,
    }
    return json.loads(json.dumps(ident))


def _diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    keys = sorted(set(a) | set(b))
    out = []
    for k in keys:
        if isinstance(a.get(k), dict) and isinstance(b.get(k), dict):
            out += _diff(a[k], b[k], f"{prefix}{k}.")
        elif a.get(k) != b.get(k):
            out.append(f"{prefix}{k}")
    return out


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


def _shard_arrays(
    teacher: Teacher, cfg: ExtractConfig, vocab: Vocab, sents: list[tuple[int, list[str]]]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None, dict]:
    """Run the teacher over one shard's sentences; return dense arrays, attention rows and stats."""
    from ctx2static.pipeline.teacher import Want, run_sorted

    words = [toks for _, toks in sents]
    paras = np.asarray([pid for pid, _ in sents], dtype=np.int64)
    wids = word_ids(vocab, words)
    encs = teacher.encode(words, cfg.max_length)
    aligned = [e.complete for e in encs]
    occ = mark_occurrences(encs, wids)
    want = Want(vectors=cfg.vectors, topk=cfg.topk, attention=cfg.attention)
    outs: list[Output] = run_sorted(encs, cfg.token_budget, lambda b: teacher.forward(b, want))
    arrays: dict[str, np.ndarray] = {
        "sent_para": paras,
        "sent_offsets": np.concatenate([[0], np.cumsum([len(w) for w in wids])]).astype(np.int64),
        "word_ids": np.concatenate(wids),
        "word_aligned": np.concatenate(aligned),
        "sent_ctx": np.stack([o.mean for o in outs]).astype(np.float32),
    }
    if cfg.vectors:
        arrays["occ_vec"] = np.concatenate([o.vectors[m] for o, m in zip(outs, occ, strict=True)])
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
        p_outs = run_sorted(p_encs, cfg.token_budget, lambda b: teacher.forward(b, Want(vectors=True)))
        # a sentence cut by the paragraph limit keeps its own sentence context instead
        para_ctx = arrays["sent_ctx"].copy()
        for o, e, mem in zip(p_outs, p_encs, members, strict=True):
            para_ctx[mem[e.complete]] = o.vectors[e.complete]
        arrays["para_ctx"] = para_ctx
    stats = {
        "n_sentences": len(sents),
        "n_words": len(arrays["word_ids"]),
        "n_occurrences": int(sum(int(m.sum()) for m in occ)),
        "n_truncated_words": int(sum(int((~a).sum()) for a in aligned)),
        "n_teacher_tokens": int(sum(len(e.ids) for e in encs)),
    }
    return arrays, attn, stats


def _pca(out: Path, manifest: dict, vectors: np.ndarray, dim: int) -> dict[str, np.ndarray]:
    """Load the cache's PCA, or fit it on the first shard's vectors (SVD, signs fixed) and store it."""
    path = out / PCA_H5
    if PCA_H5 in manifest.get("aux_files", {}):
        with h5py.File(path, "r") as f:
            return {k: f[k][()] for k in f}
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
    manifest.setdefault("aux_files", {})[PCA_H5] = write_h5(path, pca)
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


def _vocab_files(teacher: Teacher, vocab: Vocab, cfg: ExtractConfig, words: np.ndarray, out: Path) -> dict:
    """Per-word baselines ("token": input-embedding subword mean; "word": the word encoded alone)."""
    from ctx2static.pipeline.teacher import Want, run_sorted

    encs = teacher.encode([[w] for w in vocab.words], cfg.max_length)
    outs = run_sorted(encs, cfg.token_budget, lambda b: teacher.forward(b, Want(vectors=True)))
    emb = teacher.model.get_input_embeddings().weight.detach().float().cpu().numpy()
    token_emb = np.stack(
        [emb[e.ids[e.tok_group == 0]].mean(0) if (e.tok_group == 0).any() else emb[0] * 0 for e in encs]
    )
    arrays = {
        "token_emb": token_emb.astype(np.float32),
        "word_emb": np.stack([o.vectors[0] for o in outs]).astype(np.float32),
        "word_complete": np.asarray([bool(e.complete[0]) for e in encs]),
    }
    n_tok = len(teacher.tokenizer)
    strings = teacher.tokenizer.convert_ids_to_tokens(list(range(n_tok)))
    return {
        VOCAB_H5: write_h5(out / VOCAB_H5, arrays),
        TEACHER_TOKENS: write_parquet(
            out / TEACHER_TOKENS,
            {
                "id": np.arange(n_tok, dtype=np.int32),
                "token": np.asarray([s if s is not None else "" for s in strings], dtype=object),
                "word": words,
            },
        ),
    }


def extract(corpus: Corpus, vocab: Vocab, teacher: Teacher, out: str | Path, cfg: ExtractConfig) -> dict:
    """Write (or resume) the cache in ``out``; return its manifest.

    Shards are written whole (temp name, then rename) and recorded in the manifest only after;
    a re-run continues after the last recorded shard and yields the same bytes as one run.
    """
    out = Path(out)
    words = token_words(teacher, vocab, corpus.config.lowercase)
    if cfg.topk:
        word_substitutes(teacher, words, cfg.topk)
    ident = _identity(teacher, corpus, vocab, cfg)
    manifest = read_manifest(out)
    if manifest is not None:
        diff = _diff(manifest.get("identity", {}), ident)
        if diff:
            raise UserError(
                f"{out}: holds a cache from a different run (differs in {', '.join(diff[:6])}); "
                "pass another --out or delete that folder"
            )
        if manifest.get("complete"):
            return manifest
        for stale in out.glob(".*.tmp"):  # left by a killed writer
            stale.unlink()
    else:
        out.mkdir(parents=True, exist_ok=True)
        vocab.save(out / VOCAB_TSV)
        signals = ["sent_para", "sent_offsets", "word_ids", "word_aligned", "sent_ctx"]
        signals += ["para_ctx"] * cfg.paragraph + ["occ_vec"] * cfg.vectors
        signals += ["topk_ids", "topk_scores"] * bool(cfg.topk) + ["attention"] * bool(cfg.attention)
        manifest = {"identity": ident, "signals": signals, "shards": [], "complete": False}
        write_manifest(out, manifest)
    done = len(manifest["shards"])
    sentences = corpus.sentences()
    if cfg.max_sentences:
        sentences = itertools.islice(sentences, cfg.max_sentences)
    t0, n_tok = time.perf_counter(), 0
    pca: dict[str, np.ndarray] | None = None
    bar = tqdm(unit="sent", desc="extract", initial=done * cfg.shard_size, mininterval=1.0)
    for i, sents in enumerate(_chunks(sentences, cfg.shard_size)):
        if i < done:
            continue
        arrays, attn, stats = _shard_arrays(teacher, cfg, vocab, sents)
        if cfg.vectors:
            vec = arrays["occ_vec"]
            if cfg.pca:
                pca = pca or _pca(out, manifest, vec, cfg.pca)
                vec = (vec - pca["mean"]) @ pca["components"].T
            arrays["occ_vec"] = vec.astype(np.float16)
        stem = shard_name(i)
        files = {f"{stem}.h5": write_h5(out / f"{stem}.h5", arrays)}
        if attn is not None:
            files[f"{stem}.attn.parquet"] = write_parquet(out / f"{stem}.attn.parquet", attn)
        manifest["shards"].append({"name": stem, "files": files, **stats})
        write_manifest(out, manifest)
        n_tok += stats["n_teacher_tokens"]
        bar.update(len(sents))
    bar.close()
    secs = time.perf_counter() - t0
    if not manifest["shards"]:
        raise UserError(f"{', '.join(map(str, corpus.paths))}: no sentences to extract")
    manifest["vocab_files"] = _vocab_files(teacher, vocab, cfg, words, out)
    totals = {k: sum(s[k] for s in manifest["shards"]) for k in manifest["shards"][0] if k.startswith("n_")}
    manifest["totals"] = totals
    manifest["complete"] = True
    write_manifest(out, manifest)
    manifest["run"] = {"seconds": secs, "teacher_tokens_per_s": n_tok / secs if secs else 0.0}
    return manifest


def set_threads(threads: int) -> None:
    """Limit torch's CPU threads (0 = torch's default)."""
    if threads:
        import torch

        torch.set_num_threads(threads)
