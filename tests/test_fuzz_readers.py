"""Property-based fuzzing of every reader of user files: any bytes in, a result or one UserError out.

Each reader gets arbitrary bytes and near-valid text (the format's own characters: digits, tabs,
"nan", quotes, non-ASCII words, broken compression); whatever it is fed, it must return or raise
:class:`UserError` with a one-line message, never another exception.
"""

import bz2
import gzip
import json
import lzma
import string

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctx2static.cache import Cache
from ctx2static.errors import UserError
from ctx2static.eval.benchmarks import read_analogy, read_categorization, read_similarity
from ctx2static.retrofit.lexicon import build_graph, read_lexicon
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab
from ctx2static.vectors import Vectors

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

PIECES = [" ", "  ", "\t", "\n", "\r\n", ",", '"', ":", "-", ".", "e", "nan", "inf", "-inf", "1e39", "0x1"]
PIECES += [
    "1",
    "2",
    "3",
    "10",
    "-1",
    "0.5",
    "ü",
    "日本",
    "\x00",
    "\x1f",
    "\u2028",
    "²",
    "١",
    "word",
    "a",
    "b",
]
near_text = st.lists(st.sampled_from(PIECES), max_size=80).map("".join)
payload = st.one_of(st.binary(max_size=300), near_text.map(lambda t: t.encode("utf-8")))


def _one_line_or_result(read, *args):
    try:
        return read(*args)
    except UserError as exc:
        assert "\n" not in str(exc), str(exc)
        return None


COMPRESS = {"": lambda b: b, ".gz": gzip.compress, ".xz": lzma.compress, ".bz2": bz2.compress}


@FUZZ
@given(data=payload, suffix=st.sampled_from(list(COMPRESS)), compressed=st.booleans())
def test_corpus_reader(tmp_path, data, suffix, compressed):
    path = tmp_path / f"c.txt{suffix}"
    path.write_bytes(COMPRESS[suffix](data) if compressed else data)
    sentences = _one_line_or_result(lambda: list(Corpus([path]).sentences()))
    if sentences is not None:
        assert all(isinstance(w, str) and w.strip() == w and w for _, toks in sentences for w in toks)


@FUZZ
@given(body=payload, head=st.sampled_from(["", "2 3\n", "1 2\n", "0 4\n", "3 1\n", "-1 2\n", "2 3 4\n"]))
def test_word2vec_text_and_binary_readers(tmp_path, body, head):
    for suffix in (".txt", ".bin"):
        path = tmp_path / f"v{suffix}"
        path.write_bytes(head.encode() + body)
        vectors = _one_line_or_result(Vectors.load, path)
        if vectors is not None:
            assert vectors.matrix.shape == (len(vectors.words), vectors.dim)
            assert np.isfinite(vectors.matrix).all()


@FUZZ
@given(side=payload)
def test_word2vec_sidecar_reader(tmp_path, side):
    Vectors(["a", "b"], np.ones((2, 3), np.float32)).save(tmp_path / "v.txt")
    (tmp_path / "v.txt.meta.json").write_bytes(side)
    vectors = _one_line_or_result(Vectors.load, tmp_path / "v.txt")
    if vectors is not None:
        assert isinstance(vectors.meta, dict) and (vectors.counts is None or len(vectors.counts) == 2)


@FUZZ
@given(vocab=payload, npy=st.one_of(st.none(), st.binary(max_size=200)), meta=st.one_of(st.none(), payload))
def test_native_vectors_folder_reader(tmp_path, vocab, npy, meta):
    folder = tmp_path / "v"
    Vectors(["a", "b"], np.ones((2, 3), np.float32)).save(folder)
    (folder / "vocab.tsv").write_bytes(vocab)
    if npy is not None:
        (folder / "vectors.npy").write_bytes(b"\x93NUMPY" + npy)
    if meta is not None:
        (folder / "meta.json").write_bytes(meta)
    vectors = _one_line_or_result(Vectors.load, folder)
    if vectors is not None:
        assert vectors.matrix.shape[0] == len(vectors.words) and isinstance(vectors.meta, dict)


@FUZZ
@given(data=payload)
def test_vocabulary_reader(tmp_path, data):
    (tmp_path / "vocab.tsv").write_bytes(data)
    vocab = _one_line_or_result(Vocab.load, tmp_path / "vocab.tsv")
    if vocab is not None:
        assert len(vocab.counts) == len(vocab.words) and (vocab.counts >= 0).all()


@FUZZ
@given(data=payload, suffix=st.sampled_from(list(COMPRESS)), compressed=st.booleans())
def test_lexicon_reader(tmp_path, data, suffix, compressed):
    path = tmp_path / f"lex.txt{suffix}"
    path.write_bytes(COMPRESS[suffix](data) if compressed else data)
    graph = _one_line_or_result(build_graph, ["a", "b", "word", "日本"], [path])
    if graph is not None:
        assert graph.adjacency.shape == (4, 4) and (graph.adjacency.diagonal() == 0).all()
        assert len(list(read_lexicon(path))) >= graph.stats()["words_with_neighbours"]


@FUZZ
@given(data=payload, csv_head=st.sampled_from(["", ",category,word\n", ",type,word1,word2,word3,target\n"]))
def test_benchmark_readers(tmp_path, data, csv_head):
    for name, read in [
        ("sim.txt", read_similarity),
        ("ana.txt", read_analogy),
        ("ana.csv", read_analogy),
        ("cat.csv", read_categorization),
    ]:
        path = tmp_path / name
        path.write_bytes((csv_head if name.endswith(".csv") else "").encode() + data)
        bench = _one_line_or_result(read, path)
        if name == "sim.txt" and bench is not None:
            assert len(bench.pairs) == len(bench.gold) and np.isfinite(bench.gold).all()


KEYS = ["identity", "format", "shards", "files", "signals", "complete", "vocab", "sha256_16", "index"]
MANIFEST_2 = {"identity": {"format": 2}, "shards": [], "signals": []}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(string.ascii_letters, max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    max_leaves=12,
)


@FUZZ
@given(
    manifest=st.one_of(
        json_values,
        st.dictionaries(st.sampled_from(KEYS), json_values, max_size=5),
        st.dictionaries(st.sampled_from(KEYS), json_values, max_size=3).map(lambda d: {**MANIFEST_2, **d}),
        st.fixed_dictionaries({"files": st.dictionaries(st.text(max_size=3), json_values, max_size=2)}).map(
            lambda shard: {**MANIFEST_2, "shards": [shard]}
        ),
    )
)
def test_cache_manifest_reader(tmp_path, manifest):
    folder = tmp_path / "cache"
    folder.mkdir(exist_ok=True)
    (folder / "vocab.tsv").write_text("a\t3\nb\t1\n")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    cache = _one_line_or_result(Cache.open, folder)
    if cache is not None:
        _one_line_or_result(lambda: [cache.shard(i) for i in range(cache.n_shards)])
