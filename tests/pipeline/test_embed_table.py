"""The embed table: each vocabulary word inside --embed-template, the teacher's own sentence embedding.

The expectation is sentence-transformers' own ``encode`` of the prompted word from the same folder
(its pooling, dense layers and normalisation), not the product's forward.
"""

import json
import shutil
from dataclasses import replace

import numpy as np
import pytest
import torch

from ctx2static.errors import InputError, MissingSignalError, OptionError
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.pipeline.head import SentenceHead
from ctx2static.pipeline.models import TeacherKind
from ctx2static.pipeline.shard import embed_template
from ctx2static.pipeline.teacher import Teacher
from ctx2static.students.registry import fit_cache_student

from ..tiny_models import STS_PROMPT
from .test_word_table import CFG, _extract


@pytest.mark.slow
def test_auto_is_the_sentence_transformers_embedding_of_the_word_in_the_sts_prompt(
    tiny_models, corpus_file, tmp_path
):
    from sentence_transformers import SentenceTransformer

    cache, teacher, m = _extract(tiny_models["embeddinggemma"], corpus_file, tmp_path / "c")
    assert teacher.kind is TeacherKind.ENCODER
    assert (
        m["identity"]["options"]["embed_template"] == STS_PROMPT + "{w}"
    )  # the cache records what auto resolved to
    words = list(cache.vocab.words)
    table = cache.vocab_arrays()["embed_emb"]
    st = SentenceTransformer(str(tiny_models["embeddinggemma"]), device="cpu")
    want = st.encode(words, prompt=STS_PROMPT, batch_size=7)
    np.testing.assert_allclose(table, want, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(table, axis=1), 1, rtol=1e-5)  # the head normalises
    assert not np.allclose(table, st.encode(words), atol=1e-3)  # the prompt counts
    vectors = fit_cache_student("embed", tmp_path / "c")
    np.testing.assert_array_equal(vectors.matrix, table)


@pytest.mark.slow
def test_a_template_of_ones_own_and_off(tiny_models, corpus_file, tmp_path):
    from sentence_transformers import SentenceTransformer

    cfg = replace(CFG, embed_template="meaning of {w} here")
    cache, _, _ = _extract(tiny_models["embeddinggemma"], corpus_file, tmp_path / "own", cfg)
    st = SentenceTransformer(str(tiny_models["embeddinggemma"]), device="cpu")
    words = list(cache.vocab.words)
    want = st.encode([f"meaning of {w} here" for w in words])
    np.testing.assert_allclose(cache.vocab_arrays()["embed_emb"], want, rtol=1e-4, atol=2e-5)
    cache, _, _ = _extract(
        tiny_models["embeddinggemma"], corpus_file, tmp_path / "off", replace(CFG, embed_template="off")
    )
    assert "embed_emb" not in cache.vocab_arrays()


def test_bidirectional_attention_makes_gemma_an_encoder_that_reads_ahead(tiny_models):
    """A word's state depends on the words after it (a causal Gemma's would not)."""
    teacher = Teacher.load(str(tiny_models["embeddinggemma"]))
    assert teacher.kind is TeacherKind.ENCODER and teacher.bos_id is None  # its tokenizer adds <bos>
    a, b = (teacher.tokenizer(t, return_tensors="pt")["input_ids"] for t in ("the cat sat", "the cat ran"))
    with torch.no_grad():
        ha, hb = (teacher.model(input_ids=x).last_hidden_state[0, 1] for x in (a, b))
    assert not torch.allclose(ha, hb, atol=1e-4)


def test_no_embed_table_for_teachers_without_a_sentence_head_and_the_student_says_so(
    tiny_models, corpus_file, tmp_path
):
    cache, _, m = _extract(tiny_models["gpt2"], corpus_file, tmp_path / "c")
    assert m["identity"]["options"]["embed_template"] == "off"
    assert "embed_emb" not in cache.vocab_arrays()
    with pytest.raises(
        MissingSignalError, match=r"student 'embed' needs the cache signal 'embed_emb'.*--embed-template"
    ):
        fit_cache_student("embed", tmp_path / "c")
    with pytest.raises(OptionError, match="--embed-template 'no slot' must be auto, off or text holding"):
        ExtractConfig(embed_template="no slot")


def test_a_head_that_pools_otherwise_is_refused_and_auto_is_off(tiny_models, tmp_path):
    folder = shutil.copytree(tiny_models["embeddinggemma"], tmp_path / "cls")
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    head = SentenceHead.read(folder)
    assert "cls_token" in head.refused
    assert not SentenceHead.read(tiny_models["bert"]).refused  # a plain folder: the mean, as ST reads it
    plain = Teacher.load(str(tiny_models["encoder"]))  # an encoder whose folder names no prompt
    assert embed_template(CFG, plain) == "meaning: {w}"
    teacher = Teacher.load(str(folder))
    assert embed_template(CFG, teacher) == "off"
    with pytest.raises(
        OptionError,
        match=r"^--embed-template x \{w\}: the teacher's sentence head cannot be read \(it pools by cls",
    ):
        embed_template(replace(CFG, embed_template="x {w}"), teacher)


def test_a_module_folder_outside_the_model_folder_is_refused(tiny_models, tmp_path):
    folder = shutil.copytree(tiny_models["embeddinggemma"], tmp_path / "out")
    modules = json.loads((folder / "modules.json").read_text())
    modules[2]["path"] = "../elsewhere"
    (folder / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(InputError, match=r"modules.json: names a module folder outside the model folder"):
        SentenceHead.read(folder)


def test_the_tables_after_extracts_bar_show_their_own_progress(tiny_models, corpus_file, tmp_path, capsys):
    """A forward a word for the word table and one for the embed table: a bar with that total."""
    cache, _, _ = _extract(tiny_models["embeddinggemma"], corpus_file, tmp_path / "c")
    total = 2 * len(cache.vocab.words)
    err = capsys.readouterr().err
    assert f"word tables: 100%|██████████| {total:.1f}/{total:.1f} " in err  # unit_scale writes 78.0
