"""Property-based fuzzing of native vectors folders: opening one gives sound vectors or one UserError line.

A folder is made of fuzzed parts: ``meta.json`` (JSON of any shape whose keys are mostly the known
ones, or raw bytes), ``vocab.tsv`` lines (repeated and empty words, stray tabs, bad counts) and the
composer's ``subwords.npy`` (random bytes, arrays of any dtype and shape, pickled objects, cut
short) and ``tokenizer.json``. Whatever the mix, :meth:`Vectors.load` returns vectors that every
later stage can use (one row per word, metadata the model card reads, a composer that composes)
or raises :class:`UserError` with a one-line message, never another exception.
"""

import io
import json

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

from ctx2static.errors import UserError
from ctx2static.export.card import Card
from ctx2static.vectors import Vectors
from ctx2static.vectors.meta import META_SCHEMA

from .test_faults_vector_files import TOKENS, tokenizer_json

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

NESTED_KEYS = ["lowercase", "teacher", "words", "ridge", "hash", "seconds", "method", "lexicons", "edges"]
KEYS = [*META_SCHEMA, *NESTED_KEYS, "other"]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 10**20), st.floats(), st.text(max_size=6), st.just("no")
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
    max_leaves=8,
)


def mostly(sound: st.SearchStrategy, *others: st.SearchStrategy) -> st.SearchStrategy:
    """``sound`` three times in four, else one of ``others``: enough sound parts meet in one folder."""
    return st.integers(0, 3).flatmap(lambda k: sound if k < 3 else st.one_of(*others))


sound_meta = st.fixed_dictionaries(
    {},
    optional={
        "student": st.just("sgns"),
        "teacher": st.sampled_from([None, "minilm", "org/model"]),
        "corpus": st.lists(st.text(max_size=4), max_size=2),
        "corpus_config": st.fixed_dictionaries({"lowercase": st.booleans()}),
        "train_seconds": st.floats(0, 10),
        "retrofit": st.just([{"method": "faruqui", "lexicons": ["wordnet"]}]),
    },
)
any_meta = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=5)
raw_meta = st.one_of(st.binary(max_size=60), st.sampled_from([b"[]", b"7", b"{", b"[" * 5000 + b"]" * 5000]))
meta_json = mostly(sound_meta, st.none(), any_meta, raw_meta)
sound_settings = st.fixed_dictionaries({"lowercase": st.booleans()})
composer_settings = mostly(sound_settings, st.none(), json_values)

sound_line = st.tuples(st.sampled_from(["a", "b", "c", "d", "é", "日本", "x y", ""]), st.integers(0, 99)).map(
    lambda t: f"{t[0]}\t{t[1]}"
)
odd_line = st.tuples(
    st.sampled_from(["a", "", " ", "\x1f", "a\tb"]),
    st.sampled_from(["-1", "x", "", "1.5", "9" * 25, "٣"]),
    st.sampled_from(["", "\t", "\t1"]),
).map("\t".join)
vocab_lines = st.lists(mostly(sound_line, odd_line), max_size=6)


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


arrays = st.builds(
    lambda dtype, shape: np.ones(shape, dtype=dtype),
    st.sampled_from([np.float16, np.float32, np.float64, np.int32, np.uint8, np.bool_]),
    st.sampled_from(
        [(len(TOKENS), 3), (len(TOKENS) + 2, 3), (len(TOKENS) - 1, 3), (len(TOKENS), 2), (21,), ()]
    ),
)
sound_rows = npst.arrays(
    st.sampled_from([np.float16, np.float32, np.float64]),
    st.tuples(st.integers(len(TOKENS), len(TOKENS) + 3), st.just(3)),
).map(_npy)
rows_bytes = mostly(
    sound_rows,
    st.none(),
    arrays.map(_npy),
    arrays.map(_npy).flatmap(lambda b: st.integers(0, len(b)).map(lambda n: b[:n])),
    st.just(_npy(np.array([{"rows": 1}, None], dtype=object))),
    st.binary(max_size=80).map(lambda b: b"\x93NUMPY" + b),
)
tokenizer_bytes = mostly(
    st.just(tokenizer_json().encode()),
    st.none(),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=40),
)


def _folder(tmp_path, n_rows: int):
    """An empty folder ``v`` holding only a ``vectors.npy`` of ``n_rows`` x 3 (examples reuse tmp_path)."""
    folder = tmp_path / "v"
    folder.mkdir(exist_ok=True)
    for stale in folder.iterdir():
        stale.unlink()
    np.save(folder / "vectors.npy", np.arange(n_rows * 3, dtype=np.float32).reshape(-1, 3))
    return folder


def _opens_soundly_or_is_one_line(folder) -> None:
    try:
        v = Vectors.load(folder)
    except UserError as exc:
        assert "\n" not in str(exc), str(exc)
        event("one-line error")
        return
    event("loaded with a composer" if v.composer is not None else "loaded")
    assert len(set(v.words)) == len(v.words) == len(v.matrix) == len(v.counts)
    assert v.index == {w: i for i, w in enumerate(v.words)} and (v.counts >= 0).all()
    Card.of(v).provenance()  # the metadata's readers take it as it is
    Card.of(v).header("model2vec")
    if v.composer is not None:
        assert isinstance(v.composer.lowercase, bool) and v.composer.dim == v.dim
        composed = v.query(["zzz-unknown", "womans", "Kings"])
        assert composed.shape == (3, v.dim) and np.isfinite(composed).all()


@FUZZ
@given(meta=meta_json, lines=vocab_lines, extra_rows=st.sampled_from([0, 0, 0, 1]))
def test_fuzzed_metadata_and_vocabulary(tmp_path, meta, lines, extra_rows):
    folder = _folder(tmp_path, len(lines) + extra_rows)
    (folder / "vocab.tsv").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    if meta is not None:
        (folder / "meta.json").write_bytes(json.dumps(meta).encode() if isinstance(meta, dict) else meta)
    _opens_soundly_or_is_one_line(folder)


@FUZZ
@given(settings_=composer_settings, rows=rows_bytes, tokenizer=tokenizer_bytes)
def test_fuzzed_composer_files(tmp_path, settings_, rows, tokenizer):
    folder = _folder(tmp_path, 2)
    (folder / "vocab.tsv").write_text("king\t2\nqueen\t1\n", encoding="utf-8")
    (folder / "meta.json").write_text(json.dumps({} if settings_ is None else {"composer": settings_}))
    if rows is not None:
        (folder / "subwords.npy").write_bytes(rows)
    if tokenizer is not None:
        (folder / "tokenizer.json").write_bytes(tokenizer)
    _opens_soundly_or_is_one_line(folder)
