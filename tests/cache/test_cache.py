import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ctx2static
from ctx2static.cache import Cache
from ctx2static.cache.writer import write_h5
from ctx2static.errors import UserError

from .. import tiny_models as tm


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory, tiny_models):
    from ctx2static.pipeline.config import ExtractConfig
    from ctx2static.pipeline.extract import extract
    from ctx2static.pipeline.teacher import Teacher
    from ctx2static.text.corpus import Corpus
    from ctx2static.text.vocab import Vocab, VocabConfig

    root = tmp_path_factory.mktemp("cache")
    corpus_file = root / "c.txt"
    corpus_file.write_text("\n".join(tm.SENTENCES) + "\n")
    corpus = Corpus([corpus_file])
    teacher = Teacher.load(str(tiny_models["bert"]))
    cfg = ExtractConfig(shard_size=4, max_length=10, vectors=True, topk=2, attention=2)
    extract(corpus, Vocab.build(corpus, VocabConfig(min_count=2)), teacher, root / "cache", cfg)
    return root / "cache"


def test_shard_arrays_are_consistent_with_the_manifest(cache_dir):
    cache = Cache.open(cache_dir)
    totals = cache.manifest["totals"]
    n_occ = n_cut = 0
    for shard in cache.shards():
        occ = shard.occurrences()
        assert len(shard["occ_vec"]) == len(shard["topk_ids"]) == len(occ)
        assert shard["sent_offsets"][-1] == len(shard["word_ids"])
        assert shard.attention["occ"].max() < len(occ)
        off = shard["sent_offsets"]
        sent = np.searchsorted(off, occ, side="right") - 1
        for r in range(0, len(occ), 7):
            assert off[sent[r]] <= occ[r] < off[sent[r] + 1]
        n_occ += len(occ)
        n_cut += int((~shard["word_aligned"]).sum())
    assert (n_occ, n_cut) == (totals["n_occurrences"], totals["n_truncated_words"])
    assert n_cut > 0  # max_length 10 cuts the longer sentences; those words are flagged, not used
    only = cache.shard(0, keys=["sent_ctx"])
    assert set(only.arrays) == {"sent_ctx", "sent_para", "sent_offsets", "word_ids", "word_aligned"}
    assert only.attention is None


def test_word_sums_are_the_sums_of_the_occurrence_vectors(cache_dir):
    cache = Cache.open(cache_dir)
    sums, counts = cache.word_sums()
    want = np.zeros_like(sums)
    seen = np.zeros_like(counts)
    for shard in cache.shards(["occ_vec"]):
        ids = shard["word_ids"][shard.occurrences()]
        np.add.at(want, ids, shard["occ_vec"].astype(np.float64))
        np.add.at(seen, ids, 1)
    np.testing.assert_array_equal(counts, seen)
    np.testing.assert_allclose(sums, want, rtol=2e-3, atol=2e-3)  # occ_vec is stored in fp16
    assert counts.sum() == cache.totals("n_occurrences") and counts[0] > 1


def test_the_teacher_tokenizer_and_token_table_travel_with_the_cache(cache_dir, tiny_models):
    from tokenizers import Tokenizer
    from transformers import AutoModel, AutoTokenizer

    cache = Cache.open(cache_dir)
    tok = Tokenizer.from_str(cache.teacher_tokenizer())
    ref = AutoTokenizer.from_pretrained(tiny_models["bert"])
    assert tok.encode("unbelievably the cat").ids == ref("unbelievably the cat")["input_ids"]
    table = cache.vocab_arrays()["teacher_token_emb"]
    emb = AutoModel.from_pretrained(tiny_models["bert"]).get_input_embeddings().weight.detach().numpy()
    assert table.dtype == np.float16 and table.shape == emb.shape
    np.testing.assert_allclose(table, emb, rtol=1e-3, atol=1e-3)


def test_reader_needs_no_torch(cache_dir):
    code = (
        "import sys; from ctx2static.cache import Cache; c = Cache.open(sys.argv[1]); "
        "n = sum(len(s.occurrences()) for s in c.shards()); c.vocab_arrays(); c.teacher_tokens(); "
        "assert not c.verify(); assert 'torch' not in sys.modules and 'transformers' not in sys.modules; "
        "print(n)"
    )
    env = {"PYTHONPATH": str(Path(ctx2static.__file__).parent.parent), "PATH": "/usr/bin:/bin"}
    cmd = [sys.executable, "-c", code, str(cache_dir)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert int(res.stdout) == Cache.open(cache_dir).manifest["totals"]["n_occurrences"]


def test_verify_and_cache_info_catch_corruption(cache_dir, tmp_path, cli_main):
    bad = tmp_path / "bad"
    shutil.copytree(cache_dir, bad)
    code, out, _ = cli_main("cache", "info", bad)
    assert code == 0, out
    assert "complete" in out and "all valid" in out
    assert "occ_vec" in out and "attention" in out and "topk_scores" in out
    data = bytearray((bad / "shard_00001.h5").read_bytes())
    data[-100] ^= 0xFF
    (bad / "shard_00001.h5").write_bytes(bytes(data))
    (bad / "shard_00000.attn.parquet").unlink()
    assert sorted(Cache.open(bad).verify()) == [
        "shard_00000.attn.parquet: missing",
        "shard_00001.h5: checksum mismatch",
    ]
    code, out, _ = cli_main("cache", "info", "--no-verify", bad)
    assert code == 0 and "INVALID" not in out
    code, out, _ = cli_main("cache", "info", bad)
    assert code == 1 and "INVALID" in out


def test_hdf5_shards_are_byte_reproducible(tmp_path):
    arrays = {"a": np.arange(10, dtype=np.int32), "b": np.ones((3, 4), dtype=np.float16)}
    assert write_h5(tmp_path / "x.h5", arrays) == write_h5(tmp_path / "y.h5", arrays)
    other = {**arrays, "a": np.where(arrays["a"] == 3, 0, arrays["a"]).astype(np.int32)}
    assert write_h5(tmp_path / "z.h5", other) != write_h5(tmp_path / "x.h5", arrays)


def test_open_without_manifest_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no manifest.json"):
        Cache.open(tmp_path)


def test_unfinished_cache_names_the_missing_final_file(tmp_path):
    from ..synthetic_cache import write_cache

    cache = Cache.open(write_cache(tmp_path / "c", ["a", "b"], [[0, 1]], 4, np.zeros((1, 2)), finish=False))
    with pytest.raises(UserError, match="no vocab.h5 yet.*re-run the same extract"):
        cache.vocab_arrays()
    with pytest.raises(UserError, match="no teacher_tokens.parquet yet"):
        cache.teacher_tokens()
