"""Property-based fuzzing of every reader of user files: any bytes in, a result or one UserError out.

Each reader gets arbitrary bytes and near-valid text (the format's own characters: digits, tabs,
"nan", quotes, non-ASCII words, broken compression); whatever it is fed, it must return or raise
:class:`UserError` with a one-line message, never another exception.
"""

import bz2
import copy
import gzip
import json
import lzma
import os
import shutil
import string
import sys
from functools import reduce
from operator import getitem

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctx2static.cache import Cache
from ctx2static.cache.info import describe
from ctx2static.cache.layout import FORMAT_VERSION
from ctx2static.cache.writer import CacheWriter
from ctx2static.errors import UserError
from ctx2static.eval.benchmarks import read_analogy, read_categorization, read_similarity
from ctx2static.eval.sentences import PairSet, read_sentence_file
from ctx2static.retrofit.lexicon import build_graph, read_lexicon
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab
from ctx2static.vectors import Vectors

from ..synthetic_cache import write_cache

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
@example(data=b"\x01\r\x01", csv_head="")  # a lone carriage return: csv's own error escaped once
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


@FUZZ
@given(data=payload, head=st.sampled_from(["", "0.5\ta b\tc\n", "x\tword\n" * 5 + "y\tword\n" * 5]))
def test_sentence_file_reader(tmp_path, data, head):
    path = tmp_path / "mine.tsv"
    path.write_bytes(head.encode() + data)
    bench = _one_line_or_result(read_sentence_file, path)
    if isinstance(bench, PairSet):
        assert len(bench.first) == len(bench.second) == len(bench.scores) and np.isfinite(bench.scores).all()
    elif bench is not None:
        counts = {label: bench.labels.count(label) for label in bench.labels}
        assert len(counts) >= 2 and min(counts.values()) >= 5 and all(t.strip() for t in bench.texts)


KEYS = ["identity", "format", "shards", "files", "signals", "complete", "vocab", "sha256_16", "index"]
CURRENT = {"identity": {"format": FORMAT_VERSION}, "shards": [], "signals": []}
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
        st.dictionaries(st.sampled_from(KEYS), json_values, max_size=3).map(lambda d: {**CURRENT, **d}),
        st.fixed_dictionaries({"files": st.dictionaries(st.text(max_size=3), json_values, max_size=2)}).map(
            lambda shard: {**CURRENT, "shards": [shard]}
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


# ---------------------------------------------------------------- a valid manifest, mutated

WATCHED: list[tuple[str, list[str]]] = []  # (a folder no run may touch, what touched it) while armed


def _audit(event: str, args: tuple) -> None:
    """Record every open, delete or rename of a path in a watched folder (Python's audit events)."""
    if not WATCHED or event not in ("open", "os.remove", "os.rename", "shutil.rmtree"):
        return
    for arg in args[:2] if event == "os.rename" else args[:1]:
        if isinstance(arg, str | bytes | os.PathLike):
            path = os.path.realpath(os.fsdecode(arg))
            for folder, touched in WATCHED:
                if path == folder or path.startswith(folder + os.sep):
                    touched.append(f"{event} {path}")


sys.addaudithook(_audit)  # once per process; it does nothing unless a test arms it


class _WatchedH5(h5py.File):
    """h5py.File recording the paths it opens (HDF5 opens files in C, out of the audit's sight)."""

    def __init__(self, name, *args, **kwargs):
        if isinstance(name, str | os.PathLike):
            _audit("open", (name,))
        super().__init__(name, *args, **kwargs)


V = 8
NAMES = ["../outside/{f}", "{o}/{f}", "sub/{f}", "{f}/..", "{f}\n", "", ".", "..", "manifest.json"]
NAMES += ["vocab.tsv", ".lock", "shard_00001.h5", "shard_00000.attn.parquet", "word_sums.00001.h5", "pca.h5"]
VALUES = [None, True, False, 0, 1, -1, 2**63, 10**40, -(10**40), 1e308, 0.5, "", "x", [], {}, [1], {"a": 1}]


@pytest.fixture(scope="module")
def valid_caches(tmp_path_factory):
    rng = np.random.default_rng(0)
    sents = [list(rng.integers(-1, V, size=4)) for _ in range(6)]
    root = tmp_path_factory.mktemp("fuzzed")
    made = {}
    for finish in (True, False):
        folder = root / ("complete" if finish else "partial")
        write_cache(folder, [f"w{i}" for i in range(V)], sents, 3, rng.normal(size=(6, 3)), finish=finish)
        made[finish] = (folder, Cache.open(folder))
    return made


def _nodes(node, path=()):
    """Every path (a tuple of keys and indices) into a JSON value, the root first."""
    yield path
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield from _nodes(child, (*path, key))


def _mutate(m, path, op, value):
    """``m`` with the node at ``path`` set to ``value``, deleted, or (a dict key) renamed to ``value``."""
    if not path:
        return value if op == "set" else m
    parent, key = reduce(getitem, path[:-1], m), path[-1]
    if op == "set":
        parent[key] = value
    elif op == "delete":
        del parent[key]
    elif isinstance(parent, dict) and isinstance(value, str):
        parent[value] = parent.pop(key)
    return m


def _exercise(folder, cache, complete):
    """Everything that reads a cache's manifest: the readers, cache info, extract's resume (and finish)."""
    opened = _one_line_or_result(Cache.open, folder)
    if opened is not None:
        _one_line_or_result(opened.verify_for, opened.signals)
        _one_line_or_result(lambda: [opened.shard(i) for i in range(opened.n_shards)])
        _one_line_or_result(opened.word_sums)
        _one_line_or_result(lambda: opened.teacher_tokens() and opened.vocab_arrays())
        _one_line_or_result(describe, folder)
    identity = {k: v for k, v in cache.manifest["identity"].items() if k != "format"}
    writer = _one_line_or_result(CacheWriter.open, folder, identity, cache.vocab)
    if writer is not None:
        zeros = np.zeros((V, 3), np.float32)
        tokens = {"id": np.zeros(0, np.int32), "token": np.zeros(0, object), "word": np.zeros(0, np.int32)}
        if not writer.complete:  # a resumed extract finishes: it deletes the running sums it named
            writer.finish({"token_emb": zeros, "word_emb": zeros}, tokens)
        writer.close()


@settings(FUZZ, max_examples=80)
@given(complete=st.booleans(), data=st.data())
def test_cache_manifest_mutations(valid_caches, tmp_path, monkeypatch, complete, data):
    """Mutations of a valid manifest (types, names, paths, missing keys, huge numbers): one line or a
    correct load, and nothing outside the cache is opened, changed or deleted."""
    pristine, cache = valid_caches[complete]
    folder, outside = tmp_path / "cache", tmp_path / "outside"
    if not outside.exists():  # the same bytes as the cache's files: their checksums match
        shutil.copytree(pristine, outside)
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(pristine, folder)
    m = json.loads((folder / "manifest.json").read_text())
    files = sorted(p.name for p in pristine.iterdir())
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(list(_nodes(m))))
        own = [path[-1]] if path and path[-1] in files else []  # a file key keeps its name (and checksum)
        name = data.draw(st.sampled_from(NAMES)).format(f=data.draw(st.sampled_from(own or files)), o=outside)
        op = data.draw(st.sampled_from(["set", "delete", "rename"]))
        value = copy.deepcopy(data.draw(st.sampled_from([name, *VALUES])))  # VALUES' lists stay as written
        m = _mutate(m, path, op, value)
    (folder / "manifest.json").write_text(json.dumps(m))
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in outside.iterdir()}
    touched: list[str] = []
    monkeypatch.setattr(h5py, "File", _WatchedH5)
    WATCHED.append((os.path.realpath(outside), touched))
    try:
        _exercise(folder, cache, complete)
    finally:
        WATCHED.clear()
        monkeypatch.undo()
    assert touched == []
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in outside.iterdir()} == before
