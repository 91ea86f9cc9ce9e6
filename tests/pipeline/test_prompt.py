"""``--prompt``: a text the teacher reads before every corpus sentence, in no word.

The expectation for the sentence embedding is sentence-transformers' own ``encode`` with the same
prompt (its mean over every token, prompt included), not the product's forward.
"""

from dataclasses import replace

import numpy as np
import pytest

from ctx2static.errors import OptionError
from ctx2static.pipeline.shard import corpus_prompt, word_options
from ctx2static.pipeline.teacher import Teacher

from .test_word_table import CFG, _extract

SENTENCES = [["the", "cat", "sat"], ["a", "dog", "ran", "far", "away"]]


def test_the_prompts_tokens_belong_to_no_word_and_the_words_keep_theirs(tiny_models):
    teacher = Teacher.load(str(tiny_models["bert"]))
    prompt = ("search", "document:")
    plain = teacher.encode(SENTENCES)
    prompted = teacher.encode(SENTENCES, prompt=prompt)
    whole = teacher.encode([[*prompt, *s] for s in SENTENCES])
    n = len(prompt)
    for p, w, s in zip(prompted, whole, plain, strict=True):
        np.testing.assert_array_equal(p.ids, w.ids)  # the prompt is read before the sentence
        np.testing.assert_array_equal(p.tok_group, np.where(w.tok_group >= n, w.tok_group - n, -1))
        assert len(p.complete) == len(s.complete) and p.complete.all()
        # each word's own tokens are the ones it has without the prompt (WordPiece reads words alone)
        for g in range(s.n_groups):
            np.testing.assert_array_equal(p.ids[p.tok_group == g], s.ids[s.tok_group == g])
        assert (p.tok_group == -1).sum() > (s.tok_group == -1).sum()


def test_a_prompt_is_named_from_the_teachers_folder_or_given_as_text(tiny_models):
    teacher = Teacher.load(str(tiny_models["embeddinggemma"]))
    assert corpus_prompt(replace(CFG, prompt="document"), teacher) == "title: none | text:"
    assert corpus_prompt(replace(CFG, prompt="passage:"), teacher) == "passage:"
    assert corpus_prompt(CFG, teacher) == ""
    with pytest.raises(
        OptionError,
        match=r"--prompt documnet: .*\(document, STS\) \(did you mean 'document'\?\).*--prompt 'title",
    ):
        corpus_prompt(replace(CFG, prompt="documnet"), teacher)
    plain = Teacher.load(str(tiny_models["bert"]))  # a folder that names no prompt
    with pytest.raises(OptionError, match=r"not one of the teacher's prompts \(none\)"):
        corpus_prompt(replace(CFG, prompt="document"), plain)


@pytest.mark.slow
def test_each_sentence_is_embedded_as_sentence_transformers_does_with_the_prompt(
    tiny_models, corpus_file, corpus_sentences, tmp_path
):
    from sentence_transformers import SentenceTransformer

    cfg = replace(CFG, sentence_embedding=True, prompt="document")
    cache, _, m = _extract(tiny_models["embeddinggemma"], corpus_file, tmp_path / "c", cfg)
    assert m["identity"]["options"]["prompt"] == "title: none | text:"  # what the name resolved to
    got = np.concatenate([cache.shard(i, ["sent_emb"])["sent_emb"] for i in range(cache.n_shards)])
    st = SentenceTransformer(str(tiny_models["embeddinggemma"]), device="cpu")
    texts = [" ".join(words) for words in corpus_sentences]
    np.testing.assert_allclose(got, st.encode(texts, prompt_name="document"), atol=2e-3)  # float16
    assert not np.allclose(got, st.encode(texts), atol=1e-2)  # the prompt counts
    _, _, plain = _extract(tiny_models["embeddinggemma"], corpus_file, tmp_path / "p", CFG)
    assert "prompt" not in plain["identity"]["options"]  # no prompt, the identity caches had before


def test_a_prompt_that_leaves_the_corpus_no_room_is_one_line(tiny_models):
    """Before the teacher loads, a prompt of more words than an input holds; then its tokens."""
    with pytest.raises(
        OptionError, match=r"--prompt .* must be text of fewer than 61 words under --max-length 64"
    ):
        replace(CFG, max_length=64, prompt="word " * 100)
    teacher = Teacher.load(str(tiny_models["bert"]))
    cfg = replace(CFG, max_length=64, prompt="unbelievably " * 40)  # 40 words, more tokens each
    with pytest.raises(OptionError, match=r"^--prompt: its text takes \d+ teacher tokens, leaving no room"):
        word_options(cfg, teacher)
    word_options(replace(cfg, prompt="passage:"), teacher)  # a short one passes


@pytest.mark.parametrize("name", ["prompt", "word_template", "embed_template"])
def test_text_a_model_reads_must_be_utf8(name):
    """A command line hands undecodable bytes on as lone surrogates: one line, not a TypeError."""
    value = "bad \udcff {w}"
    with pytest.raises(OptionError, match=rf"--{name.replace('_', '-')} .* must be UTF-8 text"):
        replace(CFG, **{name: value})
