"""The sentence-embedding signal: each sentence as the teacher's own head embeds it.

The expectation is sentence-transformers' ``encode`` of the sentence's text from the same folder
(its mean pooling over every token, dense layers and normalisation), not the product's forward.
"""

import json
import shutil
from dataclasses import replace

import numpy as np
import pytest

from ctx2static.errors import OptionError

from .test_word_table import CFG, _extract


def _sent_emb(cache) -> np.ndarray:
    return np.concatenate([cache.shard(i, ["sent_emb"])["sent_emb"] for i in range(cache.n_shards)])


@pytest.mark.slow
def test_each_sentence_is_the_sentence_transformers_embedding_of_its_text(
    tiny_models, corpus_file, corpus_sentences, tmp_path
):
    from sentence_transformers import SentenceTransformer

    cfg = replace(CFG, sentence_embedding=True)
    cache, _, _ = _extract(tiny_models["embeddinggemma"], corpus_file, tmp_path / "c", cfg)
    assert cache.n_shards == 2  # six sentences, four a shard: rows stay in corpus order across shards
    got = _sent_emb(cache)
    st = SentenceTransformer(str(tiny_models["embeddinggemma"]), device="cpu")
    want = st.encode([" ".join(words) for words in corpus_sentences])
    np.testing.assert_allclose(got, want, atol=2e-3)  # stored as float16
    assert not np.allclose(got, cache.shard(0, ["sent_ctx"])["sent_ctx"][:1].mean(0), atol=1e-2)


def test_a_head_that_pools_otherwise_is_refused_before_any_shard(tiny_models, corpus_file, tmp_path):
    folder = shutil.copytree(tiny_models["embeddinggemma"], tmp_path / "cls")
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    cfg = replace(CFG, sentence_embedding=True)
    with pytest.raises(OptionError, match="sentence.embedding: the teacher's sentence head cannot be read"):
        _extract(folder, corpus_file, tmp_path / "c", cfg)
    assert not any((tmp_path / "c").glob("shard_*"))


@pytest.mark.slow
def test_a_folder_without_a_head_embeds_by_the_last_layers_mean(
    tiny_models, corpus_file, corpus_sentences, tmp_path
):
    import torch

    from ctx2static.pipeline.teacher import Teacher

    cfg = replace(CFG, sentence_embedding=True)
    cache, _, _ = _extract(tiny_models["bert"], corpus_file, tmp_path / "c", cfg)
    teacher = Teacher.load(str(tiny_models["bert"]))
    text = " ".join(corpus_sentences[0])
    with torch.no_grad():
        last = teacher.model(
            **teacher.tokenizer(text, return_tensors="pt"), output_hidden_states=True
        ).hidden_states[-1]
    np.testing.assert_allclose(_sent_emb(cache)[0], last[0].mean(0).numpy(), atol=2e-3)


def test_off_writes_no_sentence_embedding(tiny_models, corpus_file, tmp_path):
    cache, _, _ = _extract(tiny_models["embeddinggemma"], corpus_file, tmp_path / "c")
    assert "sent_emb" not in cache.signals
