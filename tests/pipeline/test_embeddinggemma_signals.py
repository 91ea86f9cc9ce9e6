"""EmbeddingGemma's architecture (Gemma 3 with bidirectional attention, a tied head, no MLM head)
extracts every signal in float32, bfloat16 and int8, the two fast passes close to float32's."""

import numpy as np
import pytest

from ctx2static.cache import Cache
from ctx2static.pipeline.config import ExtractConfig, TeacherConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

EVERY_SIGNAL = ExtractConfig(
    vectors=True, topk=3, attention=2, paragraph=True, sentence_embedding=True, shard_size=8, max_sentences=24
)


def _row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    keep = (np.linalg.norm(a, axis=1) > 0) & (np.linalg.norm(b, axis=1) > 0)
    a, b = a[keep], b[keep]
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def passes(tiny_models, corpus_file, tmp_path_factory):
    """One extract of every signal per precision, on the same sentences and vocabulary."""
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=2))
    out = {}
    for precision in ("float32", "bfloat16", "int8"):
        teacher = Teacher.load(str(tiny_models["embeddinggemma"]), TeacherConfig(precision=precision))
        folder = tmp_path_factory.mktemp(precision)
        extract(corpus, vocab, teacher, folder / "c", EVERY_SIGNAL)
        out[precision] = (teacher, Cache.open(folder / "c"))
    return out


def test_every_signal_is_in_the_cache_at_every_precision(passes):
    for precision, (teacher, cache) in passes.items():
        assert teacher.precision == cache.manifest["identity"]["teacher"]["precision"] == precision
        assert teacher.decoder == "tied input embeddings (no MLM head)"  # what --topk reads, said
        shard = cache.shard(0)
        for key in ("occ_vec", "para_ctx", "sent_emb", "topk_ids", "topk_scores"):
            assert np.isfinite(np.asarray(shard[key], dtype=np.float64)).all(), (precision, key)
        assert "attention" in cache.signals and shard.attention is not None
        assert all(len(a) and np.isfinite(a.astype(np.float64)).all() for a in shard.attention.values())


@pytest.mark.parametrize("precision", ["bfloat16", "int8"])
def test_the_fast_passes_stay_close_to_float32(passes, precision):
    exact, fast = passes["float32"][1], passes[precision][1]
    for key in ("occ_vec", "sent_emb"):
        a, b = np.asarray(exact.shard(0)[key]), np.asarray(fast.shard(0)[key])
        assert a.shape == b.shape and not np.array_equal(a, b)
        assert _row_cosines(a, b).mean() > 0.98, key
    sums, counts = exact.word_sums()
    fast_sums, fast_counts = fast.word_sums()
    assert np.array_equal(counts, fast_counts)
    assert _row_cosines(sums, fast_sums).mean() > 0.98
