"""Words to teacher tokens and back: subword alignment, one BOS for causal teachers, sorted batches."""

import pickle

import numpy as np
import pytest

from ctx2static.pipeline.align import Encoder
from ctx2static.pipeline.batching import run_sorted, sorted_batches
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.pipeline.extract import run_extract
from ctx2static.pipeline.shard import ShardMaker
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

from .. import tiny_models as tm

TOKENIZERS = {
    "wordpiece": tm.wordpiece_tokenizer,
    "bpe-roberta": lambda: tm.bpe_tokenizer(True),
    "bpe-gpt2": lambda: tm.bpe_tokenizer(False),
    "unigram": tm.unigram_tokenizer,
}
"""A tiny fast tokenizer of each kind, by name."""


@pytest.mark.parametrize("kind", list(TOKENIZERS))
def test_alignment_decodes_each_word_and_flags_truncated_words(kind):
    tok = TOKENIZERS[kind]()
    words = tm.SENTENCES[5].split()  # "unbelievably" splits into several subwords everywhere
    (full,) = Encoder(tok, None).encode([words], 64)
    assert full.complete.all()
    for g, w in enumerate(words):
        ids = full.ids[full.tok_group == g]
        assert tok.decode(ids.tolist()).strip() == w
    assert (np.diff(full.first_token()) > 0).all()
    # cut in the middle of the first word: it and everything after are reported, none misaligned
    n_first = int((full.tok_group == 0).sum())
    assert n_first >= 2
    n_special = tok.num_special_tokens_to_add()
    (cut,) = Encoder(tok, None).encode([words], n_first - 1 + n_special)
    assert not cut.complete.any()
    (cut2,) = Encoder(tok, None).encode([words], len(full.ids) - 1)
    assert cut2.complete[:-1].all() and not cut2.complete[-1]


@pytest.mark.parametrize("kind", ["wordpiece", "bpe-roberta", "unigram"])
@pytest.mark.parametrize("bos", [None, 7])
def test_a_sentence_aligns_the_same_alone_and_in_a_batch(kind, bos):
    """The batch is aligned in one pass over all its tokens: no sentence may take a neighbour's words,
    whatever the lengths, the cuts at max_length or a word that is only punctuation."""
    tok = TOKENIZERS[kind]()
    words = [w for s in tm.SENTENCES for w in s.split()] + ["...", "unbelievably" * 3, "x"]
    rng = np.random.default_rng(0)
    batch = [list(rng.choice(words, size=int(rng.integers(1, 20)))) for _ in range(12)]
    encoder = Encoder(tok, bos)
    for max_length in (6, 64):
        together = encoder.encode(batch, max_length)
        for sentence, got in zip(batch, together, strict=True):
            (alone,) = encoder.encode([sentence], max_length)
            assert np.array_equal(got.ids, alone.ids)
            assert np.array_equal(got.tok_group, alone.tok_group)
            assert np.array_equal(got.complete, alone.complete)
        if max_length == 6:  # the cut is exercised
            assert not all(e.complete.all() for e in together)


@pytest.mark.parametrize("kind", list(TOKENIZERS))
def test_the_encoder_tokenises_as_transformers_does_and_survives_pickling(kind):
    """The Rust core called directly must give transformers' own ids, offsets and special marks
    (same truncation, no padding): the cache's bytes depend on them. A pickled copy (what the
    feeding processes hold) must encode the same, a special token's text included."""
    tok = TOKENIZERS[kind]()
    special = tok.all_special_tokens[0]
    batch = [s.split() for s in tm.SENTENCES] + [["the", special, "cat"], ["unbelievably"] * 40]
    encoder = Encoder(tok, None)
    copy = pickle.loads(pickle.dumps(encoder))
    for max_length in (7, 512):
        ref = tok(
            [" ".join(s) for s in batch],
            truncation=True,
            max_length=max_length,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
        )
        for got in (encoder.encode(batch, max_length), copy.encode(batch, max_length)):
            assert [e.ids.tolist() for e in got] == ref["input_ids"]
            for e, mask in zip(got, ref["special_tokens_mask"], strict=True):
                assert ((e.tok_group >= 0) <= (np.asarray(mask) == 0)).all()
        assert any(len(i) == max_length for i in ref["input_ids"]) == (max_length == 7)


def test_bos_is_prepended_for_causal_inputs():
    tok = tm.bpe_tokenizer(False)
    (e,) = Encoder(tok, tok.bos_token_id).encode([["the", "cat"]], 16)
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
