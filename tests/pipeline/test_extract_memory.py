"""Extract's memory that grows with the vocabulary: estimated and refused before the teacher runs."""

import numpy as np

import ctx2static.memory
from ctx2static.pipeline import shard
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.pipeline.extract import VOCAB_BYTES_PER_DIM, vocab_memory
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig


def test_the_estimate_counts_the_sums_their_copy_and_both_tables():
    assert VOCAB_BYTES_PER_DIM == 8 + 4 + 4 + 4
    assert (
        vocab_memory(3_000_000, 384) == 3_000_000 * 384 * 20
    )  # 21.5 GiB: the 8.58 GiB sums and more


def test_a_vocabulary_the_machine_cannot_hold_is_refused_before_the_teacher_runs(
    tiny_models, corpus_file, tmp_path, cli_main, monkeypatch
):
    vocab = Vocab.build(Corpus([corpus_file]), VocabConfig(min_count=1))
    need = vocab_memory(len(vocab), 16)  # the tiny BERT is 16 wide
    monkeypatch.setattr(ctx2static.memory, "available_bytes", lambda: need - 1)
    fmt = ctx2static.memory.format_bytes

    def forward(*_args, **_kwargs):
        raise AssertionError("the teacher ran before the vocabulary's memory was checked")

    monkeypatch.setattr(Teacher, "forward", forward)
    out = tmp_path / "cache"
    args = ["extract", "--teacher", tiny_models["bert"], "--corpus", corpus_file, "--min-count", "1"]
    code, _, err = cli_main("-q", *args, "--out", out)
    # the last line: what precedes it (the corpus line) depends on logger levels other tests leave
    assert code == 2 and err.splitlines()[-1:] == [
        f"error: the vocabulary of {len(vocab)} words x 16 teacher dimensions needs about {fmt(need)} of "
        f"memory, more than the {fmt(need - 1)} available: keep fewer words: raise --min-count, "
        "cap them with --max-vocab, or pass a shorter --vocab list"
    ]
    assert not out.exists()


def test_the_tables_made_in_chunks_are_the_tables_made_at_once(tiny_models, corpus_file, monkeypatch):
    teacher = Teacher.load(str(tiny_models["bert"]))
    vocab = Vocab.build(Corpus([corpus_file]), VocabConfig(min_count=1))
    words = shard.token_words(teacher, vocab, True)
    feed = shard.feed_for(teacher, vocab, ExtractConfig())
    whole, _ = shard.vocab_tables(teacher, vocab, ExtractConfig(), words, feed)
    monkeypatch.setattr(shard, "TABLE_CHUNK", 3)
    chunked, _ = shard.vocab_tables(teacher, vocab, ExtractConfig(), words, feed)
    assert whole.keys() == chunked.keys() and len(whole["word_emb"]) == len(vocab) > 3
    for key in whole:
        # other batches, other kernels' sums: float32 rounding at most
        np.testing.assert_allclose(chunked[key], whole[key], rtol=1e-5, atol=1e-6, err_msg=key)
    assert np.array_equal(chunked["token_emb"], whole["token_emb"])
