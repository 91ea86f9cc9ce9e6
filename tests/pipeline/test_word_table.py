"""The word table: each vocabulary word inside --word-template, its own subwords at --word-layer.

The expectations come from a plain forward pass of the teacher over the templated text, with the
word's tokens found from the tokenizer's offsets (not from the product's alignment).
"""

import shlex
from dataclasses import replace

import numpy as np
import pytest
import torch

from ctx2static.cache import Cache
from ctx2static.cache.info import describe
from ctx2static.errors import UserError
from ctx2static.pipeline.config import WORD_SLOT, ExtractConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

CFG = ExtractConfig(shard_size=4)


def _extract(path, corpus_file, out, cfg=CFG):
    corpus = Corpus([corpus_file])
    teacher = Teacher.load(str(path))
    m = extract(corpus, Vocab.build(corpus, VocabConfig(min_count=1)), teacher, out, cfg)
    return Cache.open(out), teacher, m


def _direct(teacher, text: str, word: str, layers: list[int]) -> np.ndarray:
    """The mean over ``word``'s own tokens in ``text`` (its last occurrence) of the ``layers`` averaged."""
    start = text.rindex(word)
    enc = teacher.tokenizer(text, return_offsets_mapping=True)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    if teacher.bos_id is not None:  # a causal teacher whose tokenizer adds none reads one first
        ids, offsets = [teacher.bos_id, *ids], [(0, 0), *offsets]
    pos = [i for i, (a, b) in enumerate(offsets) if b > a and start <= a and b <= start + len(word)]
    assert pos, f"{word!r} has no tokens in {text!r}"
    with torch.no_grad():
        hidden = teacher.model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
    return np.mean([hidden[i][0, pos].numpy() for i in layers], 0).mean(0)


def test_the_word_table_is_the_words_own_subwords_inside_the_template_at_the_word_layer(
    tiny_models, corpus_file, tmp_path
):
    cfg = replace(CFG, word_template="x {w}", word_layer="1")
    cache, teacher, m = _extract(tiny_models["bert"], corpus_file, tmp_path / "c", cfg)
    assert teacher.layers == (1, 2)  # the cache's own layers are not the word layer
    arrays, index = cache.vocab_arrays(), cache.vocab.index
    emb = teacher.model.get_input_embeddings().weight.detach().numpy()
    for word in ("unbelievably", "cat"):  # three WordPiece pieces, and one
        got = arrays["word_emb"][index[word]]
        np.testing.assert_allclose(got, _direct(teacher, f"x {word}", word, [1]), rtol=1e-4, atol=1e-5)
        assert not np.allclose(got, _direct(teacher, word, word, [1]), atol=1e-3)  # the template counts
        assert not np.allclose(
            got, _direct(teacher, f"x {word}", word, [1, 2]), atol=1e-3
        )  # so does the layer
        (alone,) = teacher.encode([[word]])
        np.testing.assert_allclose(  # the token table stays the word alone's input embeddings
            arrays["token_emb"][index[word]], emb[alone.ids[alone.tok_group == 0]].mean(0), rtol=1e-5
        )
    assert arrays["word_complete"].all()
    assert {k: m["identity"]["options"][k] for k in ("word_template", "word_layer")} == {
        "word_template": "x {w}",
        "word_layer": "1",
    }


def test_words_given_with_vocab_get_the_same_table_from_the_command_line(
    cli_main, tiny_models, corpus_file, tmp_path
):
    (tmp_path / "vocab.tsv").write_text("cat\t3\ncats\t1\n")  # cats: two pieces, never in the corpus
    code, _, err = cli_main(
        "extract", "--corpus", corpus_file, "--teacher", tiny_models["bert"], "--out", tmp_path / "c",
        "--vocab", tmp_path / "vocab.tsv", "--word-template", "x {w}", "--word-layer", "1",
    )  # fmt: skip
    assert code == 0, err
    cache, teacher = Cache.open(tmp_path / "c"), Teacher.load(str(tiny_models["bert"]))
    assert cache.vocab.words == ["cat", "cats"]
    for word in cache.vocab.words:
        got = cache.vocab_arrays()["word_emb"][cache.vocab.index[word]]
        np.testing.assert_allclose(got, _direct(teacher, f"x {word}", word, [1]), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "name,template,layer",
    [
        ("encoder", "meaning: {w}", "1:"),  # a bare encoder: a sentence embedder's family
        ("mpnet", "meaning: {w}", "1:"),  # its config names an MLM head its weights lack: an encoder
        ("bert", "{w}", "1:"),  # a masked LM: the word alone at the cache's layers
        ("gpt2", "{w}", "1"),  # a causal LM: the cache's layers, the first half of 2
    ],
)
def test_auto_resolves_to_the_teacher_familys_word_settings_and_the_cache_records_them(
    tiny_models, corpus_file, tmp_path, name, template, layer
):
    cache, teacher, m = _extract(tiny_models[name], corpus_file, tmp_path / "c")
    options = m["identity"]["options"]
    assert (options["word_template"], options["word_layer"]) == (template, layer)
    info = describe(tmp_path / "c", verify=False)[0]
    assert f"'word_layer': '{layer}'" in info and f"'word_template': '{template}'" in info
    row = cache.vocab_arrays()["word_emb"][cache.vocab.index["cat"]]
    if template == "{w}":
        want = _direct(teacher, "cat", "cat", list(teacher.layers))
    else:
        want = _direct(teacher, "meaning: cat", "cat", list(teacher.layers))
    np.testing.assert_allclose(row, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("template", ["meaning", "{w} and {w}", "x{w}", "{w}s", ""])
def test_a_word_template_without_the_word_once_as_a_word_is_one_line(template):
    with pytest.raises(UserError) as exc:
        ExtractConfig(word_template=template)
    assert str(exc.value) == (
        f"--word-template {shlex.quote(template)} must be auto or text holding {{w}} once, "
        "as a word of its own, "
        "e.g. 'meaning: {w}'"
    )


def test_the_command_line_refuses_a_bad_template_before_anything_runs(cli_main, corpus_file, tmp_path):
    code, out, err = cli_main(
        "extract", "--corpus", corpus_file, "--teacher", "minilm", "--out", tmp_path / "c",
        "--word-template", "meaning",
    )  # fmt: skip
    assert code == 2 and not out
    assert err.strip().splitlines()[-1] == (
        "error: --word-template meaning must be auto or text holding {w} once, as a word of its own, "
        "e.g. 'meaning: {w}'"
    )
    assert not (tmp_path / "c").exists()


def test_a_word_layer_the_teacher_lacks_is_refused_before_any_shard(tiny_models, corpus_file, tmp_path):
    with pytest.raises(UserError, match=r"^--word-layer 5: names no hidden state of 3 \(-3\.\.2\)$"):
        _extract(tiny_models["bert"], corpus_file, tmp_path / "c", replace(CFG, word_layer="5"))
    assert not (tmp_path / "c").exists()


def test_a_cache_is_continued_only_with_the_word_settings_it_resolved_to(tiny_models, corpus_file, tmp_path):
    out = tmp_path / "c"
    _extract(tiny_models["bert"], corpus_file, out)
    with pytest.raises(
        UserError, match=r"holds a cache from a different run \(differs in options\.word_template\)"
    ):
        _extract(tiny_models["bert"], corpus_file, out, replace(CFG, word_template="x {w}"))
    with pytest.raises(UserError, match=r"\(differs in options\.word_layer\)"):
        _extract(tiny_models["bert"], corpus_file, out, replace(CFG, word_layer="-1"))
    # what auto resolved to, spelled out, is the same cache
    _, _, m = _extract(
        tiny_models["bert"], corpus_file, out, replace(CFG, word_template="{w}", word_layer="1:")
    )
    assert m["complete"]


def test_a_template_that_leaves_the_word_no_room_is_refused_before_the_teacher_loads():
    template = "x " * 50_000 + WORD_SLOT  # 100 kB: every word-table row was zeros, word_complete 0 of 25
    with pytest.raises(UserError) as err:
        ExtractConfig(word_template=template)
    line = str(err.value)
    assert "\n" not in line and len(line) < 300, line
    assert "(100,003 characters) must be text of at most 510 words ({w} included) under --max-length" in line
    ExtractConfig(word_template="x " * 200 + WORD_SLOT, max_length=512)  # room left: accepted


def test_a_template_that_leaves_the_word_no_room_is_refused_before_any_shard(
    tiny_models, corpus_file, tmp_path
):
    """Few words, many tokens: the options' own rule (words + 2 <= max length) passes, the tokens do not."""
    template = "unbelievably-unbelievably {w}"
    cfg = replace(CFG, word_template=template, max_length=8)
    with pytest.raises(UserError, match=r"^--word-template: its text takes more than --max-length 8 teacher"):
        _extract(tiny_models["bert"], corpus_file, tmp_path / "c", cfg)
    assert not (tmp_path / "c").exists()


def test_a_pca_wider_than_the_teacher_is_refused_before_any_shard(tiny_models, corpus_file, tmp_path):
    width = Teacher.load(str(tiny_models["bert"])).model.config.hidden_size
    with pytest.raises(
        UserError, match=rf"^--pca {width + 1}: the teacher's vectors have {width} dimensions"
    ):
        _extract(tiny_models["bert"], corpus_file, tmp_path / "c", replace(CFG, vectors=True, pca=width + 1))
    assert not (tmp_path / "c").exists()
