"""What extract stores is what a plain forward pass of the teacher gives, signal by signal."""

from dataclasses import replace

import numpy as np
import pytest
import torch

import ctx2static
from ctx2static.cache import Cache
from ctx2static.errors import UserError
from ctx2static.pipeline.batching import run_sorted, sorted_batches
from ctx2static.pipeline.config import ExtractConfig, TeacherConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.feed import Feed, Setup, mark_occurrences, word_ids
from ctx2static.pipeline.models import TeacherKind
from ctx2static.pipeline.shard import sentence_request, shard_arrays, token_words
from ctx2static.pipeline.teacher import Request, Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

from .. import tiny_models as tm

K, S = 3, 2
CFG = ExtractConfig(shard_size=4, max_length=14, paragraph=True, vectors=True, topk=K, attention=S)


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


def read_layers(teacher, hidden_states) -> np.ndarray:
    """The hidden state extract reads for the first input: the teacher's layers averaged."""
    return np.mean([hidden_states[i][0].numpy() for i in teacher.layers or (-1,)], 0)


def _direct(teacher, words):
    """A plain forward pass on one sentence, independent of the batching code."""
    (e,) = teacher.encode([words], CFG.max_length)
    ids = torch.from_numpy(e.ids).unsqueeze(0)
    teacher.model.set_attn_implementation("eager")  # extract leaves the model's own (sdpa) attention set
    with torch.no_grad():
        out = teacher.model(input_ids=ids, output_hidden_states=True, output_attentions=True)
    return e, out


@pytest.mark.parametrize("name", ["bert", "gemma3"])
def test_the_lm_head_computes_no_logits(tiny_models, name):
    """[tokens, vocabulary] logits are 4 GB a batch for Gemma 3's 262k pieces; no signal needs them.

    Without top-k the head does not run at all; with it, on no rows (top-k reads its input)."""
    teacher = Teacher.load(str(tiny_models[name]))
    shapes = []
    hook = teacher.model.get_output_embeddings().register_forward_hook(lambda *a: shapes.append(a[2].shape))
    encs = teacher.encode([s.split() for s in tm.SENTENCES])
    try:
        teacher.forward(encs, Request(vectors=True))
        teacher.forward(encs, sentence_request(ExtractConfig(topk=2)))
    finally:
        hook.remove()
    assert len(shapes) == 1 and shapes[0][1] == 0


@pytest.mark.parametrize("name", ["bert", "roberta", "gpt2", "encoder", "llama", "mpnet", "gemma3"])
def test_cached_signals_match_a_direct_forward_pass(caches, corpus_sentences, name):
    cache, teacher = caches[name]
    sents = corpus_sentences
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


def test_paragraph_context_is_the_sentence_mean_within_the_paragraph(caches, corpus_sentences):
    cache, teacher = caches["bert"]
    sents = corpus_sentences
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


def test_layer_picks_the_hidden_state_read(tiny_models, corpus_file, corpus_sentences, tmp_path):
    teacher = Teacher.load(str(tiny_models["gpt2"]), TeacherConfig(layer=1))
    words = corpus_sentences[0]
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
    assert both.layer_name == [1, 2] and Teacher.load(str(tiny_models["gpt2"])).layer_name == 1  # auto
    assert Teacher.load(str(tiny_models["gpt2"]), TeacherConfig(layer="-1")).layer_name == "last"


def test_hidden_states_are_every_layer_pooled_in_one_pass(tiny_models, corpus_sentences):
    teacher = Teacher.load(str(tiny_models["bert"]))
    encs = teacher.encode(corpus_sentences[:3])  # unequal lengths: padding in the batch
    outs = teacher.forward(encs, Request(hidden_states=True))
    assert outs[0].vectors is None and outs[0].hidden.shape == (encs[0].n_groups, 3, 16)  # 2 layers + emb.
    assert outs[0].hidden_mean.shape == (3, 16)
    for spec in [(0,), (1,), (2,), (1, 2), (0, 1, 2)]:
        teacher.layers = spec
        for o, want in zip(outs, teacher.forward(encs, Request(vectors=True)), strict=True):
            np.testing.assert_allclose(o.hidden[:, list(spec)].mean(1), want.vectors, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(o.hidden_mean[list(spec)].mean(0), want.mean, rtol=1e-5, atol=1e-6)
    assert not np.allclose(outs[0].hidden[:, 1], outs[0].hidden[:, 2], atol=1e-3)


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


def test_occurrence_vectors_and_word_sums_are_those_of_the_teacher_outputs_bit_for_bit(caches, corpus_file):
    cache, teacher = caches["bert"]
    sents = list(Corpus([corpus_file]).sentences())
    words = [w for _, w in sents]
    cfg = ExtractConfig(max_length=14, token_budget=30)  # several batches, out of sentence order
    encs = teacher.encode(words, cfg.max_length)
    assert len(list(sorted_batches([len(e.ids) for e in encs], cfg.token_budget))) > 2
    mark_occurrences(encs, word_ids(cache.vocab.index, words))
    outs = run_sorted(encs, cfg.token_budget, lambda b: teacher.forward(b, Request(vectors=True)))
    want = np.concatenate([o.vectors[e.wanted] for o, e in zip(outs, encs, strict=True)])
    wids = np.concatenate(
        [w[e.wanted] for w, e in zip(word_ids(cache.vocab.index, words), encs, strict=True)]
    )
    ids, inverse = np.unique(wids, return_inverse=True)
    reference = np.zeros((len(ids), want.shape[1]))
    np.add.at(reference, inverse, want.astype(np.float64))  # in float64, in occurrence order
    setup = Setup(
        teacher.encoder, cache.vocab.index, cfg.max_length, cfg.token_budget, teacher.tokenizer.pad_token_id
    )
    prepared = Feed(setup, 0).prepare(sents)
    kept, _, _, kept_sums = shard_arrays(teacher, replace(cfg, vectors=True), sents, prepared)
    arrays, _, _, sums = shard_arrays(teacher, cfg, sents, prepared)
    assert "occ_vec" not in arrays and len(want) > 10 and len(ids) < len(wids)
    assert np.array_equal(kept["occ_vec"], want)
    for got in (sums, kept_sums):
        assert got.ids.tolist() == ids.tolist() and got.counts.tolist() == np.bincount(inverse).tolist()
        assert np.array_equal(got.sums, reference)


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


def test_sentence_cut_by_the_paragraph_limit_keeps_its_sentence_context(
    tiny_models, corpus_file, corpus_sentences, tmp_path
):
    corpus = Corpus([corpus_file])
    teacher = Teacher.load(str(tiny_models["bert"]))
    cfg = ExtractConfig(shard_size=4, paragraph=True, paragraph_max_length=10)
    extract(corpus, Vocab.build(corpus, VocabConfig(min_count=1)), teacher, tmp_path / "c", cfg)
    shard = Cache.open(tmp_path / "c").shard(0)
    sents = corpus_sentences
    assert [len(s) for s in sents[:2]] == [7, 9]  # 7 + 2 special tokens fit in 10, 9 + 2 do not
    np.testing.assert_array_equal(shard["para_ctx"][1], shard["sent_ctx"][1])
    (e,) = teacher.encode([sents[0]])
    with torch.no_grad():
        hid = teacher.model(input_ids=torch.from_numpy(e.ids)[None], output_hidden_states=True)
    want = read_layers(teacher, hid.hidden_states)[e.tok_group >= 0].mean(0)
    np.testing.assert_allclose(shard["para_ctx"][0], want, rtol=2e-3, atol=2e-3)  # fp16
