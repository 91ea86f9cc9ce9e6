"""Several vectors tables made one: unit rows concatenated, or averaged once aligned (issue 41).

Static tables distilled from different teachers, or read from one teacher in different ways, err
differently, so their combination beats each: on Brown's held-out pairs, nomic's and MPNet's
``ase`` and prompted word vectors concatenated scored above the best of them
(measured: Results page, words_brown_split, which scores both methods below).

- ``concat``: each input's rows scaled to unit length and weighted, side by side. With weights
  ``w_i`` scaled so that ``sum w_i^2 = 1``, every row has unit length and the cosine of two words
  is ``sum_i w_i^2 cos_i``: with equal weights, the mean of the inputs' cosines.
- ``mean``: each input after the first is rotated onto the first by the orthogonal Procrustes map
  fitted on the unit rows of the shared words (Schönemann 1966: ``W = U V^T`` from the SVD
  ``X_i^T X_1 = U S V^T`` minimises ``||X_i W - X_1||_F`` over orthogonal ``W``), then the unit
  rows are averaged (weighted) and scaled to unit length. It needs inputs of one dimension.

The table holds the words every input holds, in the first input's order. Inputs read with
different casing (one lower-cased, one not, as :attr:`Vectors.lowercase` says) are matched on
lower-cased words: a cased table gives each lower-cased form the row of its first spelling (tables
are written most frequent first). ``dim`` projects the result on its principal axes
(:meth:`Vectors.reduced`). The combined space has no composer: the inputs' composers are left out.
"""

from __future__ import annotations

import enum
import logging
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ctx2static.errors import InputError, OptionError, UserError, spell
from ctx2static.options import Options, Rule, opt, said
from ctx2static.vectors import Vectors, VectorsMeta
from ctx2static.vectors.outputs import made_by
from ctx2static.vectors.table import NonFinite

log = logging.getLogger(__name__)


class CombineMethod(str, enum.Enum):
    """How the inputs' rows become one row."""

    CONCAT = "concat"  # unit rows side by side, dims add up
    MEAN = "mean"  # unit rows rotated onto the first input's (Procrustes), then averaged


@dataclass(frozen=True)
class CombineConfig(Options):
    """How several tables become one; ``weights`` are relative (only their ratios matter)."""

    method: CombineMethod = opt(
        CombineMethod.CONCAT,
        "concat: each input's unit rows side by side (dims add up); mean: each input rotated onto the "
        "first (orthogonal Procrustes on the shared words), unit rows averaged (inputs of one dim).",
    )
    dim: int = opt(0, "Project the result on its first D principal axes (PCA fitted on it); 0 keeps all.")
    weights: tuple[float, ...] = opt(
        (),
        "One weight per input, in their order, comma-separated (concat: each block's scale; mean: its "
        "share of the average); none: all equal.",
    )

    def rules(self) -> Iterable[Rule]:
        """The dims 0 (keep) or more (at most the result's: checked on combining); weights above 0."""
        return [
            ("dim", self.dim >= 0, "0 (keep all) or more"),
            (
                "weights",
                all(0 < w < math.inf for w in self.weights),
                "positive finite numbers, one per input",
            ),
        ]


def maker(method: CombineMethod | str) -> str:
    """What :func:`~ctx2static.vectors.outputs.made_by` says of a table this step makes."""
    return made_by({"combine": {"method": CombineMethod(method).value}})


def check_count(names: Sequence[str], config: CombineConfig) -> None:
    """Two inputs or more, and one weight per input when weights are given."""
    if len(names) < 2:
        given = f" ({names[0]})" if names else ""
        raise UserError(
            f"combine needs at least two vectors inputs, got {len(names)}{given}; give two or more"
        )
    if config.weights and len(config.weights) != len(names):
        n = len(config.weights)
        raise OptionError(
            f"{said('weights', tuple(f'{w:g}' for w in config.weights))} gives {n} weight{'s' * (n > 1)} "
            f"for {len(names)} inputs; give one per input, in their order",
            "weights",
        )


def check_inputs(paths: Sequence[str | os.PathLike], config: CombineConfig) -> None:
    """Refuse fewer than two inputs, a missing one, one given twice, or a weight too few or too many.

    Before any input is read or anything written.
    """
    check_count([os.fspath(p) for p in paths], config)
    seen: set[Path] = set()
    for path in paths:
        if not os.path.exists(path):
            raise InputError(os.fspath(path), f"{os.fspath(path)}: no such vectors file or folder")
        if Path(path).resolve() in seen:
            raise InputError(os.fspath(path), f"{os.fspath(path)}: given twice; combine different tables")
        seen.add(Path(path).resolve())


def load_inputs(
    paths: Sequence[str | os.PathLike], config: CombineConfig, nonfinite: NonFinite | str = NonFinite.ERROR
) -> list[tuple[str, Vectors]]:
    """The tables at ``paths``, each named by its path, once :func:`check_inputs` accepts them."""
    check_inputs(paths, config)
    return [(os.fspath(p), Vectors.load(p, mmap=True, nonfinite=nonfinite)) for p in paths]


def combine_vectors(inputs: Sequence[tuple[str, Vectors]], config: CombineConfig) -> Vectors:
    """One table from the named ``inputs`` (see the module docstring); the console gets the words lost.

    Its meta records the method, the weights and, per input, its name, student, teacher, words and
    dims (``meta["combine"]``), as a retrofit records its passes.
    """
    names = [name for name, _ in inputs]
    tables = [v for _, v in inputs]
    check_count(names, config)
    weights = np.asarray(config.weights or [1.0] * len(inputs), dtype=np.float64)
    ratios = weights / weights.max()  # only ratios matter; 1e300's square would overflow, 1e-200's vanish
    dims = [v.dim for v in tables]
    if config.method is CombineMethod.MEAN and len(set(dims)) > 1:
        sizes = ", ".join(f"{d} ({n})" for n, d in zip(names, dims, strict=True))
        raise OptionError(
            f"{spell('method', 'mean')} averages aligned rows, so it needs inputs of one dimension, not "
            f"{sizes}: use {spell('method', 'concat')} (and {spell('dim', 'D')} to bring the result down to "
            "D dimensions)",
            "method",
            "dim",
        )
    width = sum(dims) if config.method is CombineMethod.CONCAT else dims[0]
    if config.dim > width:
        raise OptionError(
            f"{spell('dim', config.dim)}: the combined table has {width} dimensions; use "
            f"{spell('dim', width)} or less",
            "dim",
        )
    lower = [v.lowercase for v in tables]
    fold = any(lower) and not all(lower)  # matched on lower-cased words
    keyed = [_rows_by_key(v, fold) for v in tables]
    words = [k for k in keyed[0] if all(k in other for other in keyed[1:])]
    if not words:
        held = ", ".join(f"{n} {len(v):,}" for n, v in inputs)
        raise UserError(f"no word is in every input (words: {held}); combine tables made over one vocabulary")
    lost = [len(k) - len(words) for k in keyed]
    said = ", ".join(f"{n} {m:,} of {len(k):,}" for n, m, k in zip(names, lost, keyed, strict=True))
    log.info(
        "combine: %s in every input%s; %s",
        f"{len(words):,} word" + "s" * (len(words) != 1),
        " (matched lower-cased: the inputs differ in case)" * fold,
        f"left out: {said}" if any(lost) else "none left out",
    )  # fmt: skip
    if any(v.composer is not None for v in tables):
        # without one, a sentence loses its words outside the table (a quarter of Debian's package
        # descriptions' words against Brown's vocabulary; measured: Results page, sentences_topics)
        log.warning(
            "combine: the inputs' composers are left out (the combined space has none), so words "
            "outside it get no vector; to give it one: ctx2static compose OUT --cache CACHE --out NEW"
        )
    units = [v.unit()[[k[w] for w in words]] for v, k in zip(tables, keyed, strict=True)]
    if config.method is CombineMethod.CONCAT:
        scale = ratios / np.sqrt((ratios**2).sum())
        matrix = np.hstack([x * np.float32(s) for x, s in zip(units, scale, strict=True)])
        fits: list[float | None] = [None] * len(units)
    else:
        matrix, fits = _aligned_mean(units, ratios / ratios.sum())
        log.info(
            "combine: rotated onto %s, mean cosine with its rows: %s",
            names[0], ", ".join(f"{n} {f:.3f}" for n, f in zip(names[1:], fits[1:], strict=True)),
        )  # fmt: skip
    meta: VectorsMeta = {
        "combine": {
            "method": config.method.value,
            "weights": weights.tolist(),
            "words": len(words),
            "lower_cased": fold,
            "inputs": [_described(n, v, f) for n, v, f in zip(names, tables, fits, strict=True)],
        },
        "corpus_config": {"lowercase": any(lower)},
    }
    corpora = [v.meta.get("corpus") for v in tables]
    if corpora[0] and all(c == corpora[0] for c in corpora):  # one corpus: the model card names it
        meta["corpus"] = corpora[0]
    combined = Vectors(words, matrix.astype(np.float32), _counts(tables[0], words, fold), meta)
    return combined.reduced(config.dim) if config.dim else combined


def _rows_by_key(vectors: Vectors, fold: bool) -> dict[str, int]:
    """Each word's row, or with ``fold`` each lower-cased form's first row (the most frequent spelling)."""
    if not fold:
        return vectors.index
    rows: dict[str, int] = {}
    for i, w in enumerate(vectors.words):
        rows.setdefault(w.lower(), i)
    return rows


def _counts(first: Vectors, words: list[str], fold: bool) -> np.ndarray | None:
    """The first input's counts of ``words``; folded, each lower-cased form sums its spellings'."""
    if first.counts is None:
        return None
    if not fold:
        return first.counts[[first.index[w] for w in words]]
    at = {w: k for k, w in enumerate(words)}
    counts = np.zeros(len(words), dtype=np.int64)
    for w, c in zip(first.words, first.counts.tolist(), strict=True):
        k = at.get(w.lower())
        if k is not None:
            counts[k] += c
    return counts


def procrustes(x: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The orthogonal ``W`` minimising ``||x W - target||_F``: ``U V^T`` from the SVD of ``x^T target``.

    Schönemann (1966), "A generalized solution of the orthogonal Procrustes problem".
    """
    u, _, vt = np.linalg.svd(x.T.astype(np.float64) @ target.astype(np.float64))
    return u @ vt


def _aligned_mean(units: list[np.ndarray], shares: np.ndarray) -> tuple[np.ndarray, list[float | None]]:
    """The weighted mean of the unit rows, each input rotated onto the first, scaled to unit rows.

    Also each input's fit: the mean cosine of its rotated rows with the first input's.
    """
    base = units[0]
    total = base * np.float32(shares[0])
    fits: list[float | None] = [None]
    for x, share in zip(units[1:], shares[1:], strict=True):
        rotated = x @ procrustes(x, base).astype(np.float32)
        total += rotated * np.float32(share)
        fits.append(round(float(np.einsum("ij,ij->i", rotated, base).mean()), 4))
    return total / np.maximum(np.linalg.norm(total, axis=1, keepdims=True), 1e-12), fits


def _described(name: str, vectors: Vectors, fit: float | None) -> dict[str, Any]:
    """What the combined table records of one input: where it was, what made it, its size."""
    entry: dict[str, Any] = {
        "path": name,
        "student": vectors.meta.get("student"),
        "teacher": vectors.meta.get("teacher"),
        "words": len(vectors),
        "dim": vectors.dim,
    }
    steps = [s.get("method") for s in vectors.meta.get("retrofit") or [] if isinstance(s, dict)]
    if steps:
        entry["retrofit"] = steps
    if fit is not None:
        entry["fit_cosine"] = fit
    return entry
