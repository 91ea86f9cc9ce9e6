"""A shard's sentences in, its cache files out, and the per-vocabulary tables: every engine's work.

Each cache signal stored per shard is made here from the teacher's pass: its array
(:data:`SHARD_ARRAYS`) and, when it needs more of the forward than the means and vectors every
pass returns, its reduction (:data:`REDUCTIONS`: what it asks of the forward, how it is computed);
the teacher runs whatever reductions a request names, so a new signal leaves it as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from ctx2static.cache.layout import SIGNALS, shard_signals
from ctx2static.cache.writer import WordSums, write_shard_files
from ctx2static.errors import OptionError, Style, UserError, current_style, did_you_mean, spell
from ctx2static.memory import HeapTrim
from ctx2static.pipeline.align import Encoding
from ctx2static.pipeline.config import AUTO_TEMPLATE, EMBED_OFF, WORD_SLOT, ExtractConfig, parse_layers
from ctx2static.pipeline.feed import Feed, Prepared, Sentences, Setup, TableChunk, template_inputs
from ctx2static.pipeline.models import TeacherKind, hidden_width, resolve_word
from ctx2static.text.vocab import Vocab

if TYPE_CHECKING:  # torch and transformers load only when a teacher runs
    import torch

    from ctx2static.pipeline.batching import HostBatch
    from ctx2static.pipeline.teacher import Forward, Reduce, Request, Teacher


def teacher_identity(teacher: Teacher) -> dict:
    """The teacher's part of the cache identity: what it is and how it computes (from where it runs)."""
    tok = teacher.tokenizer
    return {
        "name": teacher.name,
        "source": teacher.source,
        "revision": teacher.fingerprint(),
        "family": teacher.kind.value,
        "substitutes_from": teacher.decoder,
        "layer": teacher.layer_name,
        "precision": teacher.precision.value,
        "backend": "torch" if teacher.onnx is None else "onnx",
        "device": teacher.device.type,
        "pooling": "mean over subword tokens",
        "max_length": teacher.max_length,
        "tokenizer": f"{type(tok).__name__} ({len(tok)} tokens)",
        "bos_prepended": teacher.bos_id is not None,
        "substitute_tokens": "all" if teacher.substitutes is None else len(teacher.substitutes),
    }


def paragraph_inputs(
    teacher: Teacher,
    paras: np.ndarray,
    encs: list[Encoding],
    words: list[list[str]],
    max_length: int,
    prompt: tuple[str, ...] = (),
) -> tuple[list[Encoding], list[np.ndarray]]:
    """X2Static Eq. 4 inputs: a paragraph's consecutive sentences packed into inputs, grouped by sentence.

    Each input holds at most ``max_length`` teacher tokens, ``prompt`` first; also returns each
    input's sentence indices.
    """
    limit = max_length - 3  # room for the special tokens
    if prompt:
        limit -= int((teacher.encode([prompt], max_length)[0].tok_group >= 0).sum())
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
    p_encs = [e.regroup(g) for e, g in zip(teacher.encode(texts, max_length, prompt), word_sent, strict=True)]
    return p_encs, members


Progress = Callable[[int, int], None]
"""Called after each teacher batch with its occurrences and teacher tokens (the extract bar)."""


def _topk(f: Forward, k: int) -> dict[str, torch.Tensor]:
    """SemGloVe md (Eq. 12-14): top-k substitutes per group from the decoder's input at the target positions.

    Raw logits; encoders take k+1 and drop the target itself.
    """
    import torch

    ids, first, has_target = f.padded.ids, f.padded.first, f.padded.has_target
    causal = f.teacher.kind is TeacherKind.CAUSAL
    rows = torch.arange(ids.shape[0], device=ids.device).unsqueeze(1)
    assert f.decoder_input is not None  # its Reduction asks for it
    sel, sel_ids = f.teacher.scorer.topk(f.decoder_input, k if causal else k + 1)
    if not causal:
        tgt = ids[rows, first.clamp(min=0)][has_target]
        is_t = sel_ids == tgt.unsqueeze(-1)
        drop = torch.where(is_t.any(-1), is_t.int().argmax(-1), torch.full_like(tgt, k))
        keep = torch.arange(k + 1, device=ids.device).view(1, -1) != drop.unsqueeze(-1)
        sel_ids, sel = sel_ids[keep].view(-1, k), sel[keep].view(-1, k)
    top = torch.full((*has_target.shape, k), -1, dtype=torch.long, device=ids.device)
    scores = torch.full((*has_target.shape, k), torch.nan, device=ids.device)
    top[has_target], scores[has_target] = sel_ids, sel
    return {"topk_ids": top.int(), "topk_scores": scores}


def _attention(f: Forward, s: int) -> dict[str, torch.Tensor]:
    """SemGloVe sd (Eq. 8-11): attention summed over layers and heads, block means, top S in +-S.

    ``attn_ctx`` [G, S]: positions of the context groups (-1 where none), ``attn_weight`` [G, S]
    their summed attention (raw).
    """
    import torch

    pool = f.padded.pool
    assert f.attentions is not None  # its Reduction asks for them
    att = torch.stack([a.float().sum(1) for a in f.attentions]).sum(0)  # [n, T, T]
    w2w = pool @ att @ pool.transpose(1, 2)  # [n, G, G]
    g = w2w.shape[1]
    pos = torch.arange(g, device=w2w.device)
    dist = (pos.view(-1, 1) - pos.view(1, -1)).abs()
    present = pool.sum(-1) > 0  # groups that have tokens
    ok = (dist <= s) & (dist > 0) & present.unsqueeze(1) & present.unsqueeze(2)
    w2w = w2w.masked_fill(~ok, -torch.inf)
    if g < s:  # fewer groups than S: pad so every batch returns S columns
        w2w = torch.nn.functional.pad(w2w, (0, s - g), value=-torch.inf)
    weight, ctx = w2w.topk(s, dim=-1)
    found = torch.isfinite(weight)
    return {
        "attn_ctx": torch.where(found, ctx, -1).int(),
        "attn_weight": torch.where(found, weight, torch.nan),
    }


@dataclass(frozen=True)
class Reduction:
    """A signal's own teacher output: how a batch's forward becomes it, and what it asks of the forward.

    ``reduce(forward, value)`` gets its option's value (1 for a switch) and returns arrays with
    one row per group (word), which each output's ``reduced`` holds under their names.
    """

    reduce: Reduce
    attentions: bool = False  # reads the attention weights (the forward runs eager attention)
    decoder_input: bool = False  # reads the decoder's input at each occurrence's target position


REDUCTIONS: dict[str, Reduction] = {
    "topk": Reduction(_topk, decoder_input=True),
    "attention": Reduction(_attention, attentions=True),
}
"""The teacher outputs the sentence pass computes beyond the means and vectors, by the extract option
that turns each on (its value is the reduction's)."""


def sentence_request(cfg: ExtractConfig) -> Request:
    """What the sentence pass asks of each forward: the vectors, and the reductions ``cfg`` turns on."""
    from ctx2static.pipeline.teacher import Request

    on = {option: r for option, r in REDUCTIONS.items() if getattr(cfg, option)}
    return Request(
        vectors=True,
        embedding=cfg.sentence_embedding,
        attentions=any(r.attentions for r in on.values()),
        decoder_input=any(r.decoder_input for r in on.values()),
        reductions=tuple((r.reduce, int(getattr(cfg, option))) for option, r in on.items()),
    )


@dataclass
class TeacherPass:
    """One shard's sentences after the teacher's pass over them: what every signal's array is made of.

    ``means`` [sentences, d] are each sentence's means over all its tokens (X2Static Eq. 3);
    ``embedding`` [sentences, d] the last layer's (the sentence head's input; no row unless asked);
    ``occ_vec`` [occurrences, d] (float32) the occurrence vectors and ``reduced`` each reduction's
    arrays at the occurrences, all in corpus order: each batch's rows are put in place as it
    finishes (:meth:`~ctx2static.pipeline.teacher.Teacher.forward_wanted`), so the shard's are the
    one copy held. ``sums`` are the occurrence vectors' per-word sums; where they are made on the
    device (:func:`sums_on_device`) ``occ_vec`` holds no row.
    """

    teacher: Teacher
    cfg: ExtractConfig
    words: list[list[str]]
    paras: np.ndarray
    prepared: Prepared
    means: np.ndarray
    embedding: np.ndarray
    occ_vec: np.ndarray
    reduced: dict[str, np.ndarray]
    sums: WordSums

    @property
    def means_dtype(self) -> type[np.floating]:
        """Sentence and paragraph means are fp16 unless ``float32_means``: half the bytes."""
        return np.float32 if self.cfg.float32_means else np.float16


def teacher_pass(
    teacher: Teacher,
    cfg: ExtractConfig,
    sents: Sentences,
    prepared: Prepared,
    progress: Progress | None = None,
) -> TeacherPass:
    """Run the teacher over a shard's prepared batches (``progress`` hears of each)."""
    request = sentence_request(cfg)
    occ_words = prepared.wids[prepared.occ]
    n_occ = len(occ_words)
    on_device = sums_on_device(teacher, cfg)
    if on_device:
        from ctx2static.pipeline.word_sums import DeviceSums

        ids, slots, counts = np.unique(occ_words, return_inverse=True, return_counts=True)
        device_sums = DeviceSums(len(ids), teacher.device)
    means = np.zeros((0, 0), np.float32)  # [sentences, d], the width known from the first batch
    embedding = np.zeros((0, 0), np.float32)
    occ_vec = np.zeros((0, 0), np.float32)
    reduced: dict[str, np.ndarray] = {}
    trim = HeapTrim()
    adds = (partial(device_sums.add, slots[dest]) if on_device else None for dest in prepared.dest)
    for batch, dest, mean, picked in _landed(teacher, request, prepared, adds):
        if not means.shape[1]:
            means = np.empty((len(prepared.n_words), mean.shape[1]), np.float32)
            occ_vec = np.empty((0 if on_device else n_occ, mean.shape[1]), np.float32)
        means[batch.rows] = mean
        pooled = picked.pop("embedding", None)
        if pooled is not None:
            if not embedding.shape[1]:
                embedding = np.empty((len(prepared.n_words), pooled.shape[1]), np.float32)
            embedding[batch.rows] = pooled
        if not on_device:
            occ_vec[dest] = picked.pop("vectors")
        for key, rows in picked.items():
            if key not in reduced:
                reduced[key] = np.empty((n_occ, *rows.shape[1:]), rows.dtype)
            reduced[key][dest] = rows
        trim()
        if progress is not None:
            progress(len(dest), batch.tokens)
    paras = np.asarray([pid for pid, _ in sents], dtype=np.int64)
    if on_device:
        sums = WordSums(ids.astype(np.int64), device_sums.result(means.shape[1]), counts.astype(np.int64))
    else:
        sums = WordSums.of(occ_words, occ_vec)
    return TeacherPass(
        teacher, cfg, [toks for _, toks in sents], paras, prepared, means, embedding, occ_vec, reduced, sums
    )


def _landed(
    teacher: Teacher,
    request: Request,
    prepared: Prepared,
    adds: Iterable[Callable[[torch.Tensor], None] | None],
) -> Iterator[tuple[HostBatch, np.ndarray, np.ndarray, dict[str, np.ndarray]]]:
    """Each batch with its destination rows, mean and picked rows, the next one launched first.

    On a GPU the next batch's forward is queued before this one's results are waited for, so the
    device computes it while the host puts these in place (``adds``: each batch's
    ``add_vectors``, :meth:`~ctx2static.pipeline.teacher.Teacher.launch_wanted`).
    """
    pending = None
    for batch, dest, add in zip(prepared.batches, prepared.dest, adds, strict=True):
        launched = (batch, dest, teacher.launch_wanted(batch, request, add))
        if pending is not None:
            yield pending[0], pending[1], *pending[2].get()
        pending = launched
    if pending is not None:
        yield pending[0], pending[1], *pending[2].get()


def sums_on_device(teacher: Teacher, cfg: ExtractConfig) -> bool:
    """Whether a shard's per-word sums are made on the teacher's device (:mod:`.word_sums`).

    On a GPU, unless the shard stores every occurrence vector (``--vectors``), which then crosses to
    the host anyway; on a CPU the host's compiled sum is the cheaper one (the product by a one-hot
    matrix costs a float64 multiply-add per distinct word of a chunk, per row and dimension).
    """
    return teacher.device.type == "cuda" and not cfg.vectors


def _sent_offsets(p: TeacherPass) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(p.prepared.n_words)]).astype(np.int64)


def per_occurrence(p: TeacherPass, key: str) -> np.ndarray:
    """A reduction's per-group array at the occurrences, in corpus order."""
    return p.reduced[key]


def _para_ctx(p: TeacherPass) -> np.ndarray:
    """X2Static Eq. 4: each sentence's mean when the teacher saw its paragraph (a second pass)."""
    from ctx2static.pipeline.batching import run_sorted
    from ctx2static.pipeline.teacher import Request

    teacher, cfg = p.teacher, p.cfg
    limit = min(cfg.paragraph_max_length, teacher.max_length)
    p_encs, members = paragraph_inputs(
        teacher, p.paras, p.prepared.encodings(), p.words, limit, prompt_words(cfg)
    )
    p_outs = run_sorted(p_encs, cfg.token_budget, lambda b: teacher.forward(b, Request(vectors=True)))
    # a sentence cut by the paragraph limit keeps its own sentence context instead
    para_ctx = p.means.copy()
    for o, e, mem in zip(p_outs, p_encs, members, strict=True):
        para_ctx[mem[e.complete]] = o.vectors[e.complete]
    return para_ctx.astype(p.means_dtype)


SHARD_ARRAYS: dict[str, Callable[[TeacherPass], np.ndarray]] = {
    "sent_para": lambda p: p.paras,
    "sent_offsets": _sent_offsets,
    "word_ids": lambda p: p.prepared.wids,
    "word_aligned": lambda p: p.prepared.complete,
    "sent_ctx": lambda p: p.means.astype(p.means_dtype),
    "para_ctx": _para_ctx,
    "sent_emb": lambda p: p.teacher.head(p.embedding).astype(p.means_dtype),
    "occ_vec": lambda p: p.occ_vec,  # float32, before any PCA (the shard maker reduces and stores it)
    "topk_ids": lambda p: per_occurrence(p, "topk_ids"),
    "topk_scores": lambda p: per_occurrence(p, "topk_scores"),
}
"""How each signal stored as a shard array is made from the teacher's pass (one function a signal;
a reduction's arrays are in the pass's outputs when its option is on)."""


def attention_rows(p: TeacherPass) -> dict[str, np.ndarray]:
    """The attention signal's rows (SemGloVe sd): occurrence row, context word, offset, summed weight."""
    n_words = p.prepared.n_words
    ends = np.cumsum(n_words)
    at = np.flatnonzero(p.prepared.occ)  # each occurrence's word, in the shard
    starts = (ends - n_words)[np.searchsorted(ends, at, side="right")]  # its sentence's first word
    ctx, weight = per_occurrence(p, "attn_ctx"), per_occurrence(p, "attn_weight")  # [occurrences, S]
    keep = ctx >= 0
    occ_ix = np.broadcast_to(np.arange(len(at))[:, None], ctx.shape)
    return {
        "occ": occ_ix[keep].astype(np.int32),
        "ctx": p.prepared.wids[(starts[:, None] + ctx)[keep]].astype(np.int32),
        "offset": (ctx - (at - starts)[:, None])[keep].astype(np.int16),
        "weight": weight[keep].astype(np.float32),
    }


def shard_arrays(
    teacher: Teacher,
    cfg: ExtractConfig,
    sents: Sentences,
    prepared: Prepared,
    progress: Progress | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None, dict, WordSums]:
    """Run the teacher over one shard's prepared sentences (``progress`` hears of each batch).

    Returns the dense arrays of the signals ``cfg`` turns on (:data:`SHARD_ARRAYS`), attention
    rows, stats and per-word sums of the occurrence vectors (always: they make ``ase`` and the
    students' start table).
    """
    p = teacher_pass(teacher, cfg, sents, prepared, progress)
    signals = shard_signals(cfg.to_dict())
    arrays = {k: SHARD_ARRAYS[k](p) for k in signals if SIGNALS[k].stored == "shard"}
    occ = prepared.occ
    attn = attention_rows(p) if "attention" in signals else None
    stats = {
        "n_sentences": len(sents),
        "n_words": len(arrays["word_ids"]),
        "n_occurrences": int(occ.sum()),
        "n_truncated_words": int((~arrays["word_aligned"]).sum()),
        "n_teacher_tokens": int(prepared.n_tokens.sum()),
    }
    return arrays, attn, stats, p.sums


def fit_pca(vectors: np.ndarray, dim: int) -> dict[str, np.ndarray]:
    """The cache's PCA of the occurrence vectors (SVD of the centred first shard, signs fixed)."""
    if len(vectors) < dim or vectors.shape[1] < dim:
        raise OptionError(
            f"{spell('pca', dim)}: the first shard has {len(vectors)} vectors of width {vectors.shape[1]}; "
            f"use a smaller {spell('pca')} or a larger {spell('shard_size')}",
            "pca",
            "shard_size",
        )
    x = vectors.astype(np.float64)
    mean = x.mean(0)
    _, sv, vt = np.linalg.svd(x - mean, full_matrices=False)
    comps = vt[:dim] * np.sign(vt[:dim, [0]] + (vt[:dim, [0]] == 0))
    return {
        "mean": mean.astype(np.float32),
        "components": comps.astype(np.float32),
        "explained_variance_ratio": (sv[:dim] ** 2 / (sv**2).sum()).astype(np.float32),
    }


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
        raise OptionError(
            f"{spell('topk', k)}: only {len(ids)} of the teacher's tokens spell a vocabulary word; "
            f"use a smaller {spell('topk')} or a larger vocabulary ({spell('min_count')})",
            "topk",
            "min_count",
        )
    teacher.restrict_substitutes(ids)


EMBED_PROMPT = "STS"
"""The prompt of a teacher's folder that ``--embed-template auto`` puts before the word: EmbeddingGemma's
STS prompt beat its five other prompts and the word alone by 7.3 avg5 or more on the dev halves
(measured: Results page, embed_table)."""
EMBED_CARRIER = "meaning: " + WORD_SLOT
"""``--embed-template auto`` for a folder without prompts: it beat the word alone on the dev halves
for MiniLM, MPNet and nomic (+2.9, +1.0, +1.8 avg5; nomic's own prefixes within 0.3 or below)."""

TABLE_CHUNK = 1 << 13
"""Vocabulary words encoded and run at a time for the tables: their encodings and outputs (about
2.5 KB a word in Python objects, one encoding more with a word template; 60k words of a 384-wide
teacher peaked 128 MiB lower in chunks of 8k than at once) are held for one chunk, not for the
whole vocabulary."""


def word_options(cfg: ExtractConfig, teacher: Teacher) -> ExtractConfig:
    """``cfg`` with the word table's ``auto`` settings made the teacher family's (``models.WORD_DEFAULTS``).

    The word layers are checked against the model here, before any shard runs, not at the end.
    """
    template, layer = resolve_word(cfg.word_template, cfg.word_layer, teacher.kind, teacher.layer_spec)
    if teacher.n_hidden:
        parse_layers(layer, teacher.n_hidden, "word_layer")
    max_length = min(cfg.max_length, teacher.max_length)
    if (
        template != WORD_SLOT
        and not template_inputs(teacher.encoder, ["a"], template, max_length)[0].complete[0]
    ):
        raise OptionError(
            f"{spell('word_template')}: its text takes more than {spell('max_length', cfg.max_length)} "
            "teacher tokens and "
            f"leaves the word no room; shorten the template or raise {spell('max_length')}",
            "word_template",
            "max_length",
        )
    prompt = corpus_prompt(cfg, teacher)
    check_prompt_room(prompt, cfg, teacher)
    return replace(
        cfg,
        word_template=template,
        word_layer=layer,
        embed_template=embed_template(cfg, teacher),
        prompt=prompt,
    )


def check_prompt_room(prompt: str, cfg: ExtractConfig, teacher: Teacher) -> None:
    """One line unless every input leaves a corpus word room after ``prompt`` (and the special tokens).

    A prompt as long as an input would cut every sentence to nothing: a cache of no occurrence.
    """
    if not prompt:
        return
    n = len(teacher.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    for name, length in (("max_length", cfg.max_length), ("paragraph_max_length", cfg.paragraph_max_length)):
        if name == "paragraph_max_length" and not cfg.paragraph:
            continue
        room = min(length, teacher.max_length) - 3  # the special tokens, as paragraph_inputs counts them
        if n >= room:
            raise OptionError(
                f"{spell('prompt')}: its text takes {n} teacher tokens, leaving no room for the corpus "
                f"under {spell(name, length)}; shorten the prompt or raise {spell(name)}",
                "prompt",
                name,
            )


def corpus_prompt(cfg: ExtractConfig, teacher: Teacher) -> str:
    """``--prompt`` as the teacher reads it: one of its folder's prompts by name, or the text given.

    A value with neither a space nor a colon is a name; one the folder lacks is refused with the
    names it has, so a misspelt ``document`` is not read as a one-word prompt.
    """
    asked, prompts = cfg.prompt.strip(), teacher.head.prompts
    if asked in prompts:
        return prompts[asked].strip()
    if not asked or any(c.isspace() or c == ":" for c in asked):
        return asked
    names = ", ".join(sorted(prompts, key=str.lower)) or "none"
    text = "title: none | text:"
    example = spell("prompt", f"'{text}'") if current_style() is Style.FLAG else spell("prompt", text)
    raise OptionError(
        f"{spell('prompt', cfg.prompt)}: not one of the teacher's prompts ({names})"
        f"{did_you_mean(asked, prompts)}; name one, or give the text itself, e.g. {example}",
        "prompt",
    )


def prompt_words(cfg: ExtractConfig) -> tuple[str, ...]:
    """The resolved ``--prompt`` as the words every corpus input starts with."""
    return tuple(cfg.prompt.split())


def embed_template(cfg: ExtractConfig, teacher: Teacher) -> str:
    """The embed table's template: ``auto`` made the teacher's STS prompt, or "meaning: {w}" without one.

    ``auto`` is off for teachers that are not encoders (a causal or masked LM has no sentence
    embedding of its own) and where the head cannot be read from the all-token mean
    (:attr:`~ctx2static.pipeline.head.SentenceHead.refused`); a template given for such a head is
    refused, naming why.
    """
    head, asked = teacher.head, cfg.embed_template
    if asked == EMBED_OFF or (
        asked == AUTO_TEMPLATE and (teacher.kind is not TeacherKind.ENCODER or head.refused)
    ):
        return EMBED_OFF
    if head.refused:
        raise OptionError(
            f"{spell('embed_template', asked)}: the teacher's sentence head cannot be read ({head.refused}); "
            f"use {spell('embed_template', EMBED_OFF)}",
            "embed_template",
        )
    if asked == AUTO_TEMPLATE:
        prompt = head.prompts.get(EMBED_PROMPT)
        return prompt + WORD_SLOT if prompt is not None else EMBED_CARRIER
    return asked


def feed_for(teacher: Teacher, vocab: Vocab, cfg: ExtractConfig, workers: int = 0) -> Feed:
    """What prepares ``teacher``'s inputs for ``cfg``: ``workers`` feeding processes, none: this one."""
    max_length = min(cfg.max_length, teacher.max_length)
    pad_id = int(teacher.tokenizer.pad_token_id)
    return Feed(
        Setup(teacher.encoder, vocab.index, max_length, cfg.token_budget, pad_id, prompt_words(cfg)), workers
    )


def vocab_tables(
    teacher: Teacher, vocab: Vocab, cfg: ExtractConfig, words: np.ndarray, feed: Feed
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The per-vocabulary tables and the teacher token table, written once at the end of extract.

    Tables: "token" (input-embedding mean of the word's subwords, the word alone), "word" (the
    word inside ``cfg.word_template``, the mean of its own subwords' states at ``cfg.word_layer``,
    ``auto`` as :func:`word_options` resolves it), "embed" (the word inside ``cfg.embed_template``,
    the teacher's own sentence embedding of it: the last layer's mean over every token, through
    :attr:`~ctx2static.pipeline.teacher.Teacher.head`; unless off), and the teacher's whole
    input-embedding matrix ("teacher_token_emb", fp16: with the tokenizer it lets any string be
    composed from its subwords); the token table maps each teacher token id to its string and the
    static word it spells (-1 for none). ``feed`` encodes and pads the next chunks of words
    (:data:`TABLE_CHUNK`, :class:`~ctx2static.pipeline.feed.TableChunk`) while the teacher runs
    this one; each word's rows are its own whatever the chunk, so only the dense tables grow with
    the vocabulary.
    """
    from ctx2static.pipeline.teacher import Request

    cfg = word_options(cfg, teacher)
    emb = teacher.model.get_input_embeddings().weight.detach().float().cpu().numpy()
    n = len(vocab)
    token_emb = np.zeros((n, emb.shape[1]), np.float32)
    word_emb: np.ndarray | None = None  # the hidden width: known from the first output
    complete = np.zeros(n, bool)
    layers = parse_layers(cfg.word_layer, teacher.n_hidden, "word_layer") if teacher.n_hidden else ()
    request = Request(vectors=True, layers=layers)
    last = Request(layers=(teacher.n_hidden - 1,) if teacher.n_hidden else ())
    embed: np.ndarray | None = None  # the head's width: known from the first output
    chunks = (
        (start, (vocab.words[start : start + TABLE_CHUNK], cfg.word_template, cfg.embed_template))
        for start in range(0, n, TABLE_CHUNK)
    )
    passes = 1 + (cfg.embed_template != EMBED_OFF)  # a forward a word for each table, after extract's bar
    bar = tqdm(total=n * passes, unit="word", unit_scale=True, desc="word tables", mininterval=1.0)
    for start, _, chunk in feed.map(TableChunk.of, chunks):
        for batch in chunk.batches:  # one group an input, all wanted: a row a word, in batch order
            vectors = teacher.forward_wanted(batch, request)[1]["vectors"]
            if word_emb is None:
                word_emb = np.zeros((n, vectors.shape[1]), np.float32)
            word_emb[start + batch.rows] = vectors
            bar.update(len(batch.rows))
        for batch in chunk.embed_batches:
            pooled = teacher.head(teacher.forward_wanted(batch, last)[0])
            if embed is None:
                embed = np.zeros((n, pooled.shape[1]), np.float32)
            embed[start + batch.rows] = pooled
            bar.update(len(batch.rows))
        firsts = np.cumsum(chunk.n_pieces) - chunk.n_pieces
        for k in np.unique(chunk.n_pieces):  # words of k pieces at once: the bits of each one's mean
            rows = np.flatnonzero(chunk.n_pieces == k)
            if k:
                token_emb[start + rows] = emb[chunk.pieces[firsts[rows, None] + np.arange(k)]].sum(
                    1
                ) / np.float32(k)
            else:
                token_emb[start + rows] = emb[0] * 0
        complete[start : start + len(chunk.complete)] = chunk.complete
    bar.close()
    arrays = {
        "token_emb": token_emb,
        "word_emb": word_emb if word_emb is not None else np.zeros((0, emb.shape[1]), np.float32),
        "word_complete": complete,
        "teacher_token_emb": emb.astype(np.float16),
    }
    if embed is not None:
        arrays["embed_emb"] = embed
    n_tok = len(teacher.tokenizer)
    strings = teacher.tokenizer.convert_ids_to_tokens(list(range(n_tok)))
    tokens = {
        "id": np.arange(n_tok, dtype=np.int32),
        "token": np.asarray([s if s is not None else "" for s in strings], dtype=object),
        "word": words,
    }
    return arrays, tokens


@dataclass
class ShardDone:
    """A shard whose files are written: what the process owning the manifest records."""

    index: int
    files: dict[str, str]  # file name -> sha256
    stats: dict[str, int]
    sums: WordSums
    pca: dict[str, np.ndarray] | None = None  # fitted on this shard (the first) when the cache had none


class ShardMaker:
    """A loaded teacher set up for one cache: a shard's sentences in, its written files out.

    The one way sentences become a shard, for every engine: the local engine runs one in this
    process, the Ray engine one per worker. ``feeders`` worker processes prepare the next shards
    while this one runs the teacher, from when the caller enters :attr:`feed` until it leaves it
    (:mod:`~ctx2static.pipeline.feed`); outside it, each shard is prepared here when it comes.
    """

    def __init__(
        self, teacher: Teacher, vocab: Vocab, cfg: ExtractConfig, lowercase: bool, feeders: int = 0
    ) -> None:
        self.teacher, self.vocab = teacher, vocab
        self.cfg = self.resolve(cfg)
        self.feed = feed_for(teacher, vocab, self.cfg, feeders)
        needy = [o for o, r in REDUCTIONS.items() if getattr(cfg, o) and (r.attentions or r.decoder_input)]
        if teacher.onnx is not None and needy:
            raise UserError(
                f"{spell(needy[0])} needs the LM head or attention weights, which "
                f"{spell('backend', 'onnx')} does not compute; use {spell('backend', 'torch')}"
            )
        if cfg.sentence_embedding and teacher.head.refused:
            raise OptionError(
                f"{spell('sentence_embedding')}: the teacher's sentence head cannot be read "
                f"({teacher.head.refused}); leave {spell('sentence_embedding')} off for this teacher",
                "sentence_embedding",
            )
        self.words = token_words(teacher, vocab, lowercase)
        if cfg.topk:
            word_substitutes(teacher, self.words, cfg.topk)
        self.progress: Progress | None = None

    def watch(self, progress: Progress) -> bool:
        """Report each teacher batch to ``progress``; True: this engine reports batches."""
        self.progress = progress
        return True

    def identity(self) -> dict:
        """The teacher's part of the cache identity."""
        return teacher_identity(self.teacher)

    def resolve(self, cfg: ExtractConfig) -> ExtractConfig:
        """``cfg`` as this teacher runs it: the word table's ``auto`` settings spelled out."""
        return word_options(cfg, self.teacher)

    def width(self) -> int:
        """The width of the teacher's hidden states: the columns of the per-word sums and tables."""
        return hidden_width(self.teacher.model.config)

    def make(
        self,
        folder: Path,
        index: int,
        sents: Sentences,
        pca: dict[str, np.ndarray] | None,
        prepared: Prepared | None = None,
    ) -> ShardDone:
        """Compute shard ``index`` and write its files into ``folder`` (occ_vec PCA-reduced, fp16).

        ``pca`` is the cache's projection; None with ``--pca`` fits it on this shard's vectors.
        ``prepared``: the sentences' inputs as :attr:`feed` made them (None: prepared here).
        """
        cfg = self.cfg
        prepared = prepared or self.feed.prepare(sents)
        arrays, attn, stats, sums = shard_arrays(self.teacher, cfg, sents, prepared, self.progress)
        fitted = None
        if cfg.vectors:
            vec = arrays["occ_vec"]
            if cfg.pca:
                if pca is None:
                    pca = fitted = fit_pca(vec, cfg.pca)
                vec = (vec - pca["mean"]) @ pca["components"].T
            arrays["occ_vec"] = vec.astype(np.float16)
        return ShardDone(index, write_shard_files(folder, index, arrays, attn), stats, sums, fitted)

    def map(
        self, folder: Path, jobs: Iterable[tuple[int, list]], pca: dict[str, np.ndarray] | None
    ) -> Iterator[ShardDone]:
        """The local engine: each ``(index, sentences)`` job in turn, its teacher pass in this process."""
        for index, sents, prepared in self.feed.shards(jobs):
            yield self.make(folder, index, sents, pca, prepared)

    def tables(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], str]:
        """The per-vocabulary tables, the teacher token table and the tokenizer (JSON), once per cache."""
        arrays, tokens = vocab_tables(self.teacher, self.vocab, self.cfg, self.words, self.feed)
        return arrays, tokens, self.teacher.encoder.to_str()
