"""bfloat16 and int8 teachers: close to the float32 pass, recorded in the cache, the head kept exact."""

import numpy as np
import pytest
import torch

from ctx2static.errors import UserError
from ctx2static.pipeline.config import ExtractConfig, TeacherConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.shard import sentence_request
from ctx2static.pipeline.teacher import Request, Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig


def test_precision_bfloat16_runs_the_forward_under_autocast(
    tiny_models, corpus_file, corpus_sentences, tmp_path
):
    words = corpus_sentences[:3]
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
    with pytest.raises(UserError, match="--precision half: choose one of"):
        Teacher.load(str(tiny_models["bert"]), TeacherConfig(precision="half"))


def test_precision_int8_quantizes_the_linear_layers_but_not_the_embeddings_or_the_head(
    tiny_models, corpus_file, corpus_sentences, tmp_path
):
    words = corpus_sentences[:3]
    exact = Teacher.load(str(tiny_models["bert"]))
    fast = Teacher.load(str(tiny_models["bert"]), TeacherConfig(precision="int8"))
    head = fast.model.get_output_embeddings()
    linears = [m for m in fast.model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears == [head]  # the exact top-k reads the head as a float32 matrix
    assert sum(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in fast.model.modules()) == 13
    emb, emb0 = fast.model.get_input_embeddings().weight, exact.model.get_input_embeddings().weight
    assert emb.dtype == torch.float32 and torch.equal(emb, emb0)  # the token table and composer read these
    encs = exact.encode(words)
    a = exact.forward(encs, Request(vectors=True))
    b = fast.forward(encs, sentence_request(ExtractConfig(topk=2)))
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
