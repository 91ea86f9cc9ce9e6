"""What a reader checks in a cache's arrays before any student indexes with them.

The students' Numba kernels index the static table with ``word_ids`` and walk ``sent_offsets``
without bounds checks (a bad id there is a segmentation fault, not an exception), and a NaN in a
context vector spreads through every row it touches. So every array read from a cache is checked
first: shapes agree with each other and with the shard's manifest record, ids are in range,
offsets are monotone and end at the word count, floats are finite. The checksums
(:func:`ctx2static.cache.reader.verify_file`) catch damage to the files; these checks catch
arrays that were wrong when written (a teacher whose output overflowed) and keep the kernels safe
whatever the checksums say.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np
from numba import njit

from ctx2static.cache.layout import (
    ATTN_COLUMNS,
    AUX_FILES,
    INDEX_ARRAYS,
    SIGNALS,
    VOCAB_FILES,
    Ids,
    Rows,
    running_sums_name,
    shard_files,
    shard_name,
)

# IEEE exponent fields: all ones means infinity or NaN.
_EXPONENT = {2: (np.uint16, 0x7C00), 4: (np.uint32, 0x7F800000), 8: (np.uint64, 0x7FF0000000000000)}


@njit(cache=True, nogil=True)
def _first_all_ones(bits: np.ndarray, mask: np.uint64) -> int:
    """First row of ``bits`` (2-d, unsigned) where some ``x & mask == mask``; -1 when none."""
    m = bits.dtype.type(mask)
    for r in range(bits.shape[0]):
        bad = False
        for c in range(bits.shape[1]):
            bad |= (bits[r, c] & m) == m
        if bad:
            return r
    return -1


def first_nonfinite(a: np.ndarray) -> int | None:
    """Row (first axis) of the first NaN or infinity in a float array; None when all are finite.

    Integer and boolean arrays are finite by construction. One pass over the bits, without the GIL
    (a cache is read while the students' workers run).
    """
    a = np.asarray(a)
    if a.dtype.kind not in "fc" or a.size == 0:
        return None
    real = np.ascontiguousarray(a).reshape(len(a), -1)
    if a.dtype.kind == "c":
        real = real.view(real.real.dtype)
    if real.dtype.itemsize not in _EXPONENT:  # (long double): numpy's own test
        bad = ~np.isfinite(real).all(axis=1)
        return int(np.argmax(bad)) if bad.any() else None
    uint, mask = _EXPONENT[real.dtype.itemsize]
    row = _first_all_ones(real.view(uint), np.uint64(mask))
    return None if row < 0 else int(row)


def nonfinite_array(arrays: Mapping[str, np.ndarray]) -> str | None:
    """``"KEY row R"`` of the first array holding a NaN or infinity; None when all are finite."""
    for key, a in arrays.items():
        row = first_nonfinite(a)
        if row is not None:
            return f"{key} row {row}"
    return None


def _index_problem(arrays: Mapping[str, np.ndarray], n_words: int) -> str | None:
    """What is wrong with the arrays that locate sentences, words and occurrences (beyond their shapes)."""
    missing = [k for k in INDEX_ARRAYS if k not in arrays]
    if missing:
        return f"lacks the array {missing[0]}"
    para, off, ids, aligned = (arrays[k] for k in INDEX_ARRAYS)
    if any(arrays[k].ndim != SIGNALS[k].ndim for k in INDEX_ARRAYS):
        return "has an index array that is not one-dimensional"
    if any(arrays[k].dtype.kind not in SIGNALS[k].kinds for k in INDEX_ARRAYS):
        return "has index arrays of the wrong types"
    if len(off) != len(para) + 1 or len(aligned) != len(ids):
        return "has index arrays of disagreeing lengths"
    if len(off) and (off[0] != 0 or off[-1] != len(ids) or (np.diff(off) < 0).any()):
        return "has sentence offsets that do not run from 0 to the word count in order"
    if len(ids) and (ids.min() < -1 or ids.max() >= n_words):
        return f"has word ids outside -1..{n_words - 1} (the vocabulary has {n_words} words)"
    return None


def _signal_problem(
    arrays: Mapping[str, np.ndarray], rows: Mapping[Rows, int], bounds: Mapping[Ids, int | None]
) -> str | None:
    """What is wrong with the other shard arrays, each against its row of the signal table.

    ``rows`` counts each kind of row the shard holds; ``bounds`` is each id table's size (None:
    unknown, only the lowest id is checked).
    """
    for key, signal in SIGNALS.items():
        if key not in arrays or key in INDEX_ARRAYS or signal.stored != "shard":
            continue
        a, n = arrays[key], rows[signal.rows]
        if a.ndim != signal.ndim or len(a) != n:
            return f"has {key} of shape {a.shape}, expected {n} rows (one per {signal.rows.value})"
        if a.dtype.kind not in signal.kinds:
            want = {"f": "a float", "iu": "an integer", "b": "a boolean"}.get(signal.kinds, signal.kinds)
            return f"has {key} of type {a.dtype}, not {want} type"
        if signal.ids is None or not a.size:
            continue
        low, size = signal.ids.lowest, bounds[signal.ids]
        if a.min() < low or (size is not None and a.max() >= size):
            return f"has {signal.ids.noun} outside {low}..{'' if size is None else size - 1} ({key})"
    return None


def _attention_problem(attention: Mapping[str, np.ndarray], n_occ: int, n_words: int) -> str | None:
    if any(k not in attention for k in ATTN_COLUMNS):
        return "attention file lacks a column"
    occ, ctx, _, weight = (np.asarray(attention[k]) for k in ATTN_COLUMNS)
    if not len(occ) == len(ctx) == len(weight):
        return "attention file has columns of disagreeing lengths"
    if len(occ) and (occ.min() < 0 or occ.max() >= n_occ):
        return f"attention file has occurrence rows outside 0..{n_occ - 1}"
    if len(ctx) and (ctx.min() < -1 or ctx.max() >= n_words):
        return f"attention file has context word ids outside -1..{n_words - 1}"
    return None


def shard_problem(
    arrays: Mapping[str, np.ndarray],
    attention: Mapping[str, np.ndarray] | None,
    record: Mapping[str, object],
    n_words: int,
    n_tokens: int | None = None,
) -> str | None:
    """What is wrong with one shard's arrays (None: nothing), checked against its manifest record.

    ``n_words`` is the vocabulary size, ``n_tokens`` the teacher's token count (bounds the
    substitute ids; None: only their sign is checked).
    """
    problem = _index_problem(arrays, n_words)
    if problem:
        return problem
    n_sent = len(arrays["sent_para"])
    n_occ = int(((arrays["word_ids"] >= 0) & arrays["word_aligned"]).sum())
    counted = {"n_sentences": n_sent, "n_words": len(arrays["word_ids"]), "n_occurrences": n_occ}
    for key, value in counted.items():
        if key in record and record[key] != value:
            return f"holds {value} for {key}, the manifest {record[key]}"
    rows = {
        Rows.SENTENCE: n_sent,
        Rows.BOUNDARY: n_sent + 1,
        Rows.WORD: len(arrays["word_ids"]),
        Rows.OCCURRENCE: n_occ,
    }
    problem = _signal_problem(arrays, rows, {Ids.WORD: n_words, Ids.TOKEN: n_tokens})
    if problem is None and attention is not None:
        problem = _attention_problem(attention, n_occ, n_words)
    if problem is None:
        weights = {} if attention is None else {"attention weight": attention["weight"]}
        where = nonfinite_array({**arrays, **weights})
        problem = None if where is None else f"holds NaN or infinity ({where})"
    return problem


COUNTED = ("n_sentences", "n_words", "n_occurrences")
"""The counts every shard record holds (extract adds others, all named ``n_*``)."""


def _count(value: object) -> bool:
    """Whether ``value`` is a count: an int (not a bool) that fits an int64."""
    return type(value) is int and 0 <= value < 2**63


def _quoted(name: object) -> str:
    """A value read from the manifest, safe to print on one line (escaped, cut short)."""
    text = ascii(name)
    return text if len(text) <= 60 else text[:56] + "...'"


def _files_problem(files: object, allowed: Collection[str], what: str) -> str | None:
    """What is wrong with a {file name: sha256} table whose names must be among ``allowed``."""
    if not (isinstance(files, dict) and all(isinstance(v, str) for v in files.values())):
        return f"has a malformed table of {what}"
    stray = next((name for name in files if name not in allowed), None)
    if stray is not None:
        return f"names {_quoted(stray)} among {what}, not a file name of this cache"
    return None


def _identity_problem(m: dict) -> str | None:
    """What is wrong with the parts of the identity that readers look into."""
    identity = m["identity"]
    parts = ("teacher", "options", "vocab", "corpus_config")
    if not all(isinstance(identity.get(k, {}), dict) for k in parts):
        return "has a malformed identity"
    corpus = identity.get("corpus", [])
    if not isinstance(corpus, list) or not all(
        isinstance(c, dict) and all(isinstance(c.get(k), str) for k in ("path", "sha256")) for c in corpus
    ):
        return "has a malformed corpus record"
    return None


def _signals_problem(m: dict) -> str | None:
    signals = m.get("signals")
    if not isinstance(signals, list) or not all(isinstance(s, str) and s in SIGNALS for s in signals):
        return "lists unknown signals"
    return None


def _record_problem(i: int, record: object, counted: Collection[str]) -> str | None:
    """What is wrong with the record of shard ``i`` (``counted``: the counts every record holds)."""
    if not isinstance(record, dict) or type(record.get("index")) is not int or record["index"] != i:
        return f"has a malformed record for shard {i}"
    if record.get("name", shard_name(i)) != shard_name(i):
        return f"names shard {i} {_quoted(record['name'])}, not {shard_name(i)}"
    counts = {k: v for k, v in record.items() if k.startswith("n_")}
    if set(counts) != set(counted) or not all(map(_count, counts.values())):
        return f"has malformed counts in the record of shard {i}"
    return _files_problem(record.get("files"), shard_files(i), f"shard {i}'s files")


def _shards_problem(m: dict) -> str | None:
    shards = m.get("shards")
    if not isinstance(shards, list):
        return "has malformed shard records"
    first = shards[0] if shards and isinstance(shards[0], dict) else {}
    counted: Collection[str] = [k for k in first if k.startswith("n_")]  # as the first record counts
    counted = counted if set(COUNTED) <= set(counted) else COUNTED
    return next(filter(None, (_record_problem(i, r, counted) for i, r in enumerate(shards))), None)


def _tables_problem(m: dict) -> str | None:
    tables = (("vocab_files", VOCAB_FILES), ("aux_files", AUX_FILES))
    problem = next(filter(None, (_files_problem(m.get(k, {}), names, k) for k, names in tables)), None)
    sums = m.get("word_sums")
    if problem is None and sums is not None:
        if not (isinstance(sums, dict) and all(isinstance(sums.get(k), str) for k in ("file", "sha256"))):
            return "has a malformed word_sums record"
        named = running_sums_name(len(m["shards"]))  # the writer names it after the shards it sums
        if sums["file"] != named:
            return f"names {_quoted(sums['file'])} as the per-word sums, not {named}"
    return problem


def _scalars_problem(m: dict) -> str | None:
    totals = m.get("totals", {})
    if not (isinstance(totals, dict) and all(map(_count, totals.values()))):
        return "has malformed totals"
    if not isinstance(m.get("complete", False), bool) or not isinstance(m.get("vocab_digest", ""), str):
        return "has a malformed 'complete' flag or vocab_digest"
    return None


def manifest_problem(m: object) -> str | None:
    """What is wrong with a parsed manifest.json (None: nothing).

    Its structure, and every file name in it: only the names :mod:`ctx2static.cache.layout` gives,
    each in its own place (shard ``i`` names only shard ``i``'s files), so a crafted or damaged
    manifest can never make a reader or the writer open or delete a path outside the folder.
    """
    if not isinstance(m, dict) or not isinstance(m.get("identity"), dict):
        return "is not a cache manifest"
    checks = (_identity_problem, _signals_problem, _shards_problem, _tables_problem, _scalars_problem)
    return next(filter(None, (check(m) for check in checks)), None)  # in order: each relies on the last
