"""cache info and the report's cache table: bytes per corpus token of the shards, of what is stored once."""

import json

import numpy as np

from ctx2static.cache import Cache
from ctx2static.cache.info import describe, once_bytes, signal_bytes
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

from .. import tiny_models as tm
from ..synthetic_cache import write_cache


def test_sizes_split_into_shard_signals_and_what_is_stored_once(tiny_models, tmp_path):
    corpus_file = tmp_path / "c.txt"
    corpus_file.write_text("\n".join(tm.SENTENCES) + "\n")
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    teacher = Teacher.load(str(tiny_models["bert"]))
    extract(corpus, vocab, teacher, tmp_path / "c", ExtractConfig(shard_size=4, vectors=True))
    cache = Cache.open(tmp_path / "c")
    shard, once = signal_bytes(cache), once_bytes(cache)
    d = cache.shard(0)["sent_ctx"].shape[1]
    n_words, n_sent = cache.totals("n_words"), cache.totals("n_sentences")
    assert shard["occ_vec"] == cache.totals("n_occurrences") * d * 2  # fp16 per occurrence
    assert shard["sent_ctx"] == n_sent * d * 2 and shard["word_ids"] == n_words * 4
    assert once["occ_sum"] == len(vocab) * d * 4 and once["occ_count"] == len(vocab) * 8
    assert once["teacher_token_emb"] == len(teacher.tokenizer) * d * 2
    assert {"vocab.tsv", "manifest.json", "teacher_tokens.parquet", "teacher_tokenizer.json"} <= set(once)
    assert not set(once) & set(shard) and not [k for k in once if k.startswith("shard_")]
    disk = sum(p.stat().st_size for p in cache.folder.iterdir())
    assert sum(shard.values()) + sum(once.values()) <= disk  # the rest: HDF5 headers
    text, valid = describe(cache.folder, verify=False)
    line = next(ln for ln in text.splitlines() if ln.startswith("occ_sum "))
    assert valid and f"{once['occ_sum'] / n_words:.1f}" in line
    assert text.index("-- per corpus token") < text.index("occ_vec") < text.index("-- once per cache")
    assert np.isclose(float(text.splitlines()[-1].split(", ")[1].split()[0]), disk / n_words, atol=0.05)


def test_info_names_the_device_the_teacher_ran_on_where_the_cache_records_it(tmp_path):
    folder = write_cache(tmp_path / "c", ["a", "b"], [[0, 1]], 4, np.zeros((1, 2)))
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    teacher = {"precision": "bfloat16", "backend": "torch"}
    for recorded, shown in [({"device": "cuda"}, "bfloat16 on torch (cuda)"), ({}, "(device not recorded)")]:
        manifest["identity"]["teacher"] = {**teacher, **recorded}
        path.write_text(json.dumps(manifest))
        assert shown in describe(folder, verify=False)[0]
