import bz2
import gzip
import lzma

import numpy as np
import pytest

from ctx2static.errors import UserError
from ctx2static.text.corpus import Corpus, CorpusConfig, tokenize
from ctx2static.text.encoded import encode_corpus
from ctx2static.text.vocab import Vocab, VocabConfig

TEXT = "The cat sat on the mat.\nThe dog's half-brother barked!\n\nA new paragraph, short.\n"


def test_tokenize_splits_punctuation_keeps_inner_hyphen_apostrophe():
    assert tokenize("The dog's half-brother barked!") == ["the", "dog's", "half-brother", "barked", "!"]
    assert tokenize("U.S. Army", lowercase=False) == ["U", ".", "S", ".", "Army"]


@pytest.mark.parametrize(
    "suffix,opener", [(".txt", open), (".gz", gzip.open), (".xz", lzma.open), (".bz2", bz2.open)]
)
def test_reads_plain_and_compressed_with_paragraphs(tmp_path, suffix, opener):
    p = tmp_path / f"c{suffix}"
    with opener(p, "wt", encoding="utf-8") as fh:
        fh.write(TEXT)
    sents = list(Corpus([p]).sentences())
    assert [pid for pid, _ in sents] == [0, 0, 1]
    assert sents[0][1] == ["the", "cat", "sat", "on", "the", "mat", "."]


def test_sentence_length_filter(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text(TEXT)  # sentence lengths 7, 5, 6

    def lengths(lo, hi):
        return [len(s) for s in Corpus([p], CorpusConfig(min_sentence_len=lo, max_sentence_len=hi))]

    assert lengths(0, 0) == [7, 5, 6]
    assert lengths(6, 0) == [7, 6]
    assert lengths(0, 6) == [5, 6]
    assert lengths(6, 6) == [6]


def test_vocab_counts_order_min_count_and_roundtrip(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text(TEXT)
    v = Vocab.build(Corpus([p]), VocabConfig(min_count=2))
    assert v.words == ["the", "."] and v.counts.tolist() == [3, 2]
    v.save(tmp_path / "v.tsv")
    w = Vocab.load(tmp_path / "v.tsv")
    assert w.words == v.words and w.digest() == v.digest()
    enc = encode_corpus(Corpus([p]), v, tmp_path / "enc")
    assert enc.n_sentences == 3
    assert enc.sentence(0).tolist() == [0, 0, 1]
    assert enc.para_ids.tolist() == [0, 0, 1]
    assert np.asarray(enc.ids).tolist() == [0, 0, 1, 0, 1]


def test_bad_inputs_are_one_line_user_errors(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        Corpus([tmp_path / "missing.txt"])
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(UserError, match="no tokens"):
        Vocab.build(Corpus([empty]))
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"hello\n\x00\x01\x02\n")
    with pytest.raises(UserError, match="line 2 .*binary"):
        list(Corpus([binary]))
    latin = tmp_path / "latin.txt"
    latin.write_bytes("ok line\ncaf\xe9\n".encode("latin1"))
    with pytest.raises(UserError, match="line 2 is not valid UTF-8"):
        list(Corpus([latin]))
