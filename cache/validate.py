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

from collections.abc import Mapping

import numpy as np
from numba import njit

from ctx2static.cache.layout import ATTN_COLUMNS, INDEX_ARRAYS, SIGNALS

_PER_SENTENCE = ("sent_ctx", "para_ctx")
_PER_OCCURRENCE = ("occ_vec", "topk_ids", "topk_scores")


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
    missing = [k for k in INDEX_ARRAYS if k not in arrays]
    if missing:
        return f"lacks the array {missing[0]}"
    para, off, ids, aligned = (arrays[k] for k in INDEX_ARRAYS)
    if any(a.ndim != 1 for a in (para, off, ids, aligned)):
        return "has an index array that is not one-dimensional"
    if off.dtype.kind not in "iu" or ids.dtype.kind not in "iu" or aligned.dtype != np.bool_:
        return "has index arrays of the wrong types"
    if len(off) != len(para) + 1 or len(aligned) != len(ids):
        return "has index arrays of disagreeing lengths"
    if len(off) and (off[0] != 0 or off[-1] != len(ids) or (np.diff(off) < 0).any()):
        return "has sentence offsets that do not run from 0 to the word count in order"
    if len(ids) and (ids.min() < -1 or ids.max() >= n_words):
        return f"has word ids outside -1..{n_words - 1} (the vocabulary has {n_words} words)"
    return None


def _signal_problem(
    arrays: Mapping[str, np.ndarray], n_sent: int, n_occ: int, n_tokens: int | None
) -> str | None:
    for key in (*_PER_SENTENCE, *_PER_OCCURRENCE):
        if key not in arrays:
            continue
        a = arrays[key]
        rows = n_sent if key in _PER_SENTENCE else n_occ
        if a.ndim != 2 or len(a) != rows:
            return f"has {key} of shape {a.shape}, expected {rows} rows (one per {key.split('_')[0]})"
    ids = arrays.get("topk_ids")
    if ids is not None and ids.size and (ids.min() < 0 or (n_tokens is not None and ids.max() >= n_tokens)):
        return f"has substitute token ids outside 0..{(n_tokens or 0) - 1}"
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
    problem = _signal_problem(arrays, n_sent, n_occ, n_tokens)
    if problem is None and attention is not None:
        problem = _attention_problem(attention, n_occ, n_words)
    if problem is None:
        weights = {} if attention is None else {"attention weight": attention["weight"]}
        where = nonfinite_array({**arrays, **weights})
        problem = None if where is None else f"holds NaN or infinity ({where})"
    return problem


def _names(value: object) -> bool:
    """Whether ``value`` is a {file name: sha256} table."""
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def manifest_problem(m: object) -> str | None:
    """What is wrong with the structure of a parsed manifest.json (None: nothing)."""
    if not isinstance(m, dict) or not isinstance(m.get("identity"), dict):
        return "is not a cache manifest"
    signals, shards = m.get("signals"), m.get("shards")
    if not isinstance(signals, list) or not all(isinstance(s, str) and s in SIGNALS for s in signals):
        return "lists unknown signals"
    records_ok = isinstance(shards, list) and all(
        isinstance(r, dict) and _names(r.get("files")) for r in shards
    )
    if not records_ok:
        return "has malformed shard records"
    if not all(_names(m.get(k, {})) for k in ("vocab_files", "aux_files")):
        return "has malformed file tables"
    sums = m.get("word_sums")
    if sums is not None and not (_names(sums) and {"file", "sha256"} <= set(sums)):
        return "has a malformed word_sums record"
    if not isinstance(m.get("totals", {}), dict):
        return "has malformed totals"
    return None
