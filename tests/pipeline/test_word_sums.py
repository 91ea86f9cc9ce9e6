"""Per-word sums made on the teacher's device: the host's sums, the same cache."""

import numpy as np
import pytest
import torch

from ctx2static.cache import Cache
from ctx2static.cache.writer import WordSums
from ctx2static.pipeline import shard, word_sums
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.pipeline.extract import run_extract
from ctx2static.pipeline.shard import ShardMaker
from ctx2static.pipeline.teacher import Teacher
from ctx2static.pipeline.word_sums import DeviceSums
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig


def _device_sums(slots: np.ndarray, rows: np.ndarray, batches: list[slice]) -> np.ndarray:
    n_words = int(slots.max()) + 1
    sums = DeviceSums(n_words, torch.device("cpu"))
    for b in batches:
        sums.add(slots[b], torch.from_numpy(rows[b]))
    return sums.result(rows.shape[1])


@pytest.mark.parametrize("chunk", [3, 2048])
def test_sums_by_slot_equal_the_host_sums(monkeypatch, chunk):
    """Integer-valued rows sum exactly in any order: the device's sums are the host's, bit for bit,
    across batches and chunks (a word in several chunks of a batch, and in several batches)."""
    monkeypatch.setattr(word_sums, "CHUNK", chunk)
    rng = np.random.default_rng(0)
    slots = rng.integers(0, 7, size=40)
    slots[:7] = np.arange(7)  # every word occurs
    rows = rng.integers(-50, 50, size=(40, 5)).astype(np.float32)
    got = _device_sums(slots, rows, [slice(0, 17), slice(17, 17), slice(17, 40)])
    want = WordSums.of(slots, rows)
    np.testing.assert_array_equal(want.ids, np.arange(7))
    np.testing.assert_array_equal(got, want.sums)


def test_sums_of_real_valued_rows_agree_to_float64_rounding(monkeypatch):
    monkeypatch.setattr(word_sums, "CHUNK", 5)
    rng = np.random.default_rng(1)
    slots = np.concatenate([np.arange(4), rng.integers(0, 4, size=60)])
    rows = rng.normal(size=(64, 6)).astype(np.float32)
    got = _device_sums(slots, rows, [slice(0, 30), slice(30, 64)])
    np.testing.assert_allclose(got, WordSums.of(slots, rows).sums, rtol=1e-12, atol=1e-12)


def test_no_rows_leave_zero_sums():
    assert not DeviceSums(3, torch.device("cpu")).result(4).any()


def _extract(model, corpus_file, out, cfg):
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    maker = ShardMaker(Teacher.load(str(model)), vocab, cfg, True)
    with maker.feed:
        return run_extract(corpus, vocab, maker, out, cfg)


def test_a_cache_with_sums_made_on_the_device_is_the_host_made_cache(
    monkeypatch, tiny_models, corpus_file, tmp_path
):
    """Forced on this CPU, the device path writes the same shards and the same ase table."""
    cfg = ExtractConfig(shard_size=2, topk=2)
    host = _extract(tiny_models["bert"], corpus_file, tmp_path / "host", cfg)
    made_there = []
    monkeypatch.setattr(shard, "sums_on_device", lambda teacher, c: made_there.append(1) or not c.vectors)
    device = _extract(tiny_models["bert"], corpus_file, tmp_path / "device", cfg)
    assert len(made_there) == len(host["shards"]) > 1
    assert [s["files"] for s in device["shards"]] == [s["files"] for s in host["shards"]]
    a, b = Cache.open(tmp_path / "host"), Cache.open(tmp_path / "device")
    sums_a, counts_a = a.word_sums()
    sums_b, counts_b = b.word_sums()
    np.testing.assert_array_equal(counts_a, counts_b)
    np.testing.assert_allclose(sums_b, sums_a, rtol=1e-6, atol=1e-7)
    assert counts_a.sum() > 0 and np.abs(sums_a).max() > 0


def test_the_device_path_is_chosen_on_a_gpu_without_vectors_only():
    gpu = type("T", (), {"device": torch.device("cuda")})()
    cpu = type("T", (), {"device": torch.device("cpu")})()
    assert shard.sums_on_device(gpu, ExtractConfig())
    assert not shard.sums_on_device(gpu, ExtractConfig(vectors=True))
    assert not shard.sums_on_device(cpu, ExtractConfig())
