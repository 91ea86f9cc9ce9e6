"""The cache writer: shards recorded out of order commit in order; a killed commit resumes cleanly."""

import numpy as np
import pytest

from ctx2static.cache import Cache
from ctx2static.cache.writer import CacheWriter, WordSums, write_shard_files
from ctx2static.errors import UserError
from ctx2static.text.vocab import Vocab

WORDS = ["a", "b", "c", "d"]
IDENTITY = {"teacher": {"name": "synthetic"}, "options": {"vectors": False}}


def _shard(i: int) -> tuple[dict, dict, WordSums]:
    rng = np.random.default_rng(i)
    ids = rng.integers(-1, len(WORDS), size=12).astype(np.int32)
    arrays = {
        "sent_para": np.arange(3, dtype=np.int32),
        "sent_offsets": np.array([0, 4, 8, 12], dtype=np.int64),
        "word_ids": ids,
        "word_aligned": np.ones(12, dtype=bool),
        "sent_ctx": rng.normal(size=(3, 5)).astype(np.float16),
    }
    occ = ids[ids >= 0]
    stats = {"n_sentences": 3, "n_words": 12, "n_occurrences": len(occ)}
    return arrays, stats, WordSums.of(occ, rng.normal(size=(len(occ), 5)))


def _add(writer: CacheWriter, i: int) -> None:
    arrays, stats, sums = _shard(i)
    writer.add_shard(arrays, None, stats, sums)


def _finish(writer: CacheWriter) -> dict:
    tables = {"token_emb": np.zeros((4, 5), np.float32), "word_emb": np.ones((4, 5), np.float32)}
    tokens = {
        "id": np.arange(2, dtype=np.int32),
        "token": np.array(["x", "y"], dtype=object),
        "word": [0, -1],
    }
    return writer.finish(tables, tokens)


def _files(folder) -> dict[str, bytes]:
    """The cache's files (not the lock file, which names its last holder)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != ".lock"}


def _vocab() -> Vocab:
    return Vocab(WORDS, np.array([9, 7, 5, 3]))


def test_out_of_order_records_commit_in_order_and_equal_a_sequential_write(tmp_path):
    seq = CacheWriter.open(tmp_path / "seq", IDENTITY, _vocab())
    for i in range(4):
        _add(seq, i)
    _finish(seq)
    ooo = CacheWriter.open(tmp_path / "ooo", IDENTITY, _vocab())
    for i in (2, 0, 3, 1):  # as workers of a distributed engine might finish
        arrays, stats, sums = _shard(i)
        ooo.record_shard(i, write_shard_files(ooo.folder, i, arrays, None), stats, sums)
        assert [s["index"] for s in ooo.manifest["shards"]] == list(range(ooo.n_shards))
    _finish(ooo)
    assert _files(tmp_path / "seq") == _files(tmp_path / "ooo")
    sums, counts = Cache.open(tmp_path / "ooo").word_sums()
    want = np.zeros((4, 5))
    for i in range(4):
        s = _shard(i)[2]
        want[s.ids] += s.sums
    np.testing.assert_allclose(sums, want, rtol=1e-6)  # float32 on disk
    assert counts.sum() == sum(_shard(i)[1]["n_occurrences"] for i in range(4))


def test_a_commit_killed_between_its_sums_and_its_manifest_resumes_to_the_same_cache(tmp_path, monkeypatch):
    whole = CacheWriter.open(tmp_path / "whole", IDENTITY, _vocab())
    for i in range(3):
        _add(whole, i)
    _finish(whole)

    killed = CacheWriter.open(tmp_path / "killed", IDENTITY, _vocab())
    _add(killed, 0)

    def die() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(killed, "save_manifest", die)
    with pytest.raises(KeyboardInterrupt):  # shard 1's files and sums are written, its manifest is not
        _add(killed, 1)
    assert len(list((tmp_path / "killed").glob("word_sums.*.h5"))) == 2
    partial = Cache.open(tmp_path / "killed")
    assert partial.n_shards == 1 and not partial.complete
    np.testing.assert_array_equal(
        partial.word_sums()[1], np.bincount(_shard(0)[2].ids, _shard(0)[2].counts, 4)
    )

    resumed = CacheWriter.open(tmp_path / "killed", IDENTITY, _vocab())
    assert resumed.n_shards == 1 and len(list((tmp_path / "killed").glob("word_sums.*.h5"))) == 1
    for i in (1, 2):
        _add(resumed, i)
    _finish(resumed)
    assert _files(tmp_path / "whole") == _files(tmp_path / "killed")


def test_a_gap_is_an_error_at_finish_and_a_shard_is_recorded_once(tmp_path):
    writer = CacheWriter.open(tmp_path / "c", IDENTITY, _vocab())
    arrays, stats, sums = _shard(1)
    writer.record_shard(1, write_shard_files(writer.folder, 1, arrays, None), stats, sums)
    assert writer.n_shards == 0  # waits for shard 0
    with pytest.raises(ValueError, match="recorded twice"):
        writer.record_shard(1, {}, stats, sums)
    with pytest.raises(ValueError, match=r"shards \[1\] wait"):
        _finish(writer)


def test_a_manifest_whose_word_sums_are_null_is_continued_as_one_without_sums(tmp_path):
    """Validation reads ``"word_sums": null`` as no sums yet; the writer reopening it must too."""
    writer = CacheWriter.open(tmp_path / "c", IDENTITY, _vocab())
    writer.manifest["word_sums"] = None
    writer.save_manifest()
    writer.close()
    resumed = CacheWriter.open(tmp_path / "c", IDENTITY, _vocab())
    for i in range(2):
        _add(resumed, i)
    _finish(resumed)
    assert Cache.open(tmp_path / "c").complete


@pytest.mark.parametrize("old", [1, 2])
def test_a_cache_of_a_previous_format_is_refused_in_one_line_by_reader_and_writer(tmp_path, old):
    writer = CacheWriter.open(tmp_path / "c", IDENTITY, _vocab())
    writer.manifest["identity"]["format"] = old
    writer.save_manifest()
    writer.close()
    line = rf"^\S+c: cache format {old} \(this ctx2static reads format 3\); re-run extract into a new folder$"
    with pytest.raises(UserError, match=line):
        Cache.open(tmp_path / "c")
    with pytest.raises(UserError, match=line):  # not continued as a cache "from a different run"
        CacheWriter.open(tmp_path / "c", IDENTITY, _vocab())


def test_large_running_sums_are_checkpointed_at_most_once_per_ten_checkpoint_durations(tmp_path, monkeypatch):
    import ctx2static.cache.writer as writer_module

    whole = CacheWriter.open(tmp_path / "whole", IDENTITY, _vocab())
    for i in range(4):
        _add(whole, i)
    _finish(whole)

    monkeypatch.setattr(writer_module, "SMALL_SUMS", 0)  # as if the sums were large
    monkeypatch.setattr(writer_module, "CHECKPOINT_RATIO", 1e9)  # and a checkpoint slow: no second one
    killed = CacheWriter.open(tmp_path / "killed", IDENTITY, _vocab())
    for i in range(3):
        _add(killed, i)
    assert killed.n_shards == 3
    on_disk = Cache.open(tmp_path / "killed")  # what a killed run leaves: the first checkpoint
    assert on_disk.n_shards == 1 and on_disk.manifest["word_sums"]["file"] == "word_sums.00001.h5"
    first = _shard(0)[2]
    np.testing.assert_array_equal(on_disk.word_sums()[1], np.bincount(first.ids, first.counts, 4))

    monkeypatch.setattr(writer_module, "CHECKPOINT_RATIO", 0)  # checkpoints cost nothing: every commit
    resumed = CacheWriter.open(tmp_path / "killed", IDENTITY, _vocab())
    assert resumed.n_shards == 1
    for i in (1, 2):
        _add(resumed, i)
        assert Cache.open(tmp_path / "killed").n_shards == i + 1
    _add(resumed, 3)
    _finish(resumed)
    assert _files(tmp_path / "whole") == _files(tmp_path / "killed")


def test_a_derived_cache_rewrites_what_it_is_told_links_the_rest_and_verifies(tmp_path):
    from ctx2static.cache.derive import derive_cache

    from ..synthetic_cache import write_cache

    rng = np.random.default_rng(0)
    sents = [list(rng.integers(0, 6, size=rng.integers(2, 6))) for _ in range(9)]
    n_occ = sum(len(s) for s in sents)
    attention = {
        "occ": np.arange(n_occ, dtype=np.int32),
        "ctx": rng.integers(0, 6, n_occ).astype(np.int32),
        "offset": np.ones(n_occ, np.int16),
        "weight": rng.random(n_occ).astype(np.float32),
    }
    src = write_cache(
        tmp_path / "src", [f"w{i}" for i in range(6)], sents, 4, rng.normal(size=(9, 3)),
        occ_vec=rng.normal(size=(n_occ, 3)), attention=attention,
    )  # fmt: skip
    before = Cache.open(src)
    out = tmp_path / "out"
    derive_cache(
        src, out, lambda a: a | {"sent_ctx": 2 * a["sent_ctx"]},
        vocab=lambda v: v | {"word_emb": v["word_emb"] + 1}, drop=("occ_vec", "attention"),
        aux=lambda: {"pca.h5": {"x": np.arange(3)}}, identity=lambda i: i["options"].update(vectors=False),
    )  # fmt: skip
    after = Cache.open(out)
    assert after.verify() == [] and before.verify() == []
    assert after.n_shards == before.n_shards == 3 and "attention" not in after.manifest["signals"]
    for i in range(3):
        np.testing.assert_array_equal(after.shard(i)["sent_ctx"], 2 * before.shard(i)["sent_ctx"])
        assert "occ_vec" not in after.shard(i).arrays and not list(out.glob("*.attn.parquet"))
    np.testing.assert_array_equal(after.vocab_arrays()["word_emb"], before.vocab_arrays()["word_emb"] + 1)
    np.testing.assert_array_equal(after.word_sums()[0], before.word_sums()[0])  # the arrays not mapped stay
    assert (out / "vocab.tsv").stat().st_ino == (src / "vocab.tsv").stat().st_ino
    assert not after.manifest["identity"]["options"]["vectors"] and "pca.h5" in after.manifest["aux_files"]


def test_word_sums_are_one_float64_sum_in_occurrence_order_bit_for_bit():
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 6, size=40)
    vectors = (rng.normal(size=(40, 5)) * 10.0 ** rng.integers(-4, 4, size=(40, 1))).astype(np.float32)
    _, inverse = np.unique(ids, return_inverse=True)
    want = np.zeros((len(np.unique(ids)), 5))
    np.add.at(want, inverse, vectors.astype(np.float64))  # every row in float64, in occurrence order
    got = WordSums.of(ids, vectors)
    assert np.array_equal(got.sums, want)
    assert got.counts.tolist() == np.bincount(ids).tolist()
