"""`Composer`: a vector for any string, from the teacher's subword tokens mapped into the vectors' space.

A word outside the table is split by the teacher's own tokenizer (``tokenizers`` JSON, lower-cased
first when the vectors are) and gets the mean of its tokens' rows, ``rows = E W + b``: the
teacher's input embeddings ``E`` (one per teacher token) through a ridge-regression map fitted on
the in-vocabulary words, whose subword-mean input embeddings (the cache's ``token`` table) are the
inputs and whose trained vectors are the targets (the linear "mimick" of Pinter et al. 2017, with
the teacher's pieces for characters). The map is linear, so the mean of mapped rows is the map of
the mean: the composer keeps only ``rows`` (teacher tokens x dim, fp16) and the tokenizer.
Needs numpy, plus the ``tokenizers`` library (the tokenizer is parsed when the vectors are opened).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ctx2static.errors import InputError, OutputError, spell
from ctx2static.fileio.atomic import Renames, atomic_write, write_npy

ROWS = "subwords.npy"
TOKENIZER = "tokenizer.json"
RIDGE_GRID = tuple(10.0 ** np.arange(-6, 1))
"""Penalties tried, as fractions of the largest squared singular value of the centred inputs."""


@dataclass
class Composer:
    """Teacher-token rows in the vectors' space and the tokenizer that splits a word into those tokens."""

    rows: np.ndarray  # [n_teacher_tokens, dim], float16
    tokenizer_json: str
    lowercase: bool
    info: dict[str, Any] = field(default_factory=dict)
    _tokenizer: Any = field(default=None, init=False, repr=False)

    @property
    def dim(self) -> int:
        """Vector size."""
        return int(self.rows.shape[1])

    def _parsed(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer = parse_tokenizer(self.tokenizer_json, "the composer's tokenizer", "fit it again")
        return self._tokenizer

    def token_ids(self, words: Sequence[str]) -> list[list[int]]:
        """The teacher token ids of each word (no special tokens), after the vectors' lower-casing."""
        texts = [w.lower() if self.lowercase else w for w in words]
        return [e.ids for e in self._parsed().encode_batch(texts, add_special_tokens=False)]

    def pieces(self) -> list[str]:
        """The spelling of each row's teacher token (a row no token names: a name of its own)."""
        by_id = {i: piece for piece, i in self._parsed().get_vocab(with_added_tokens=True).items()}
        return [by_id.get(i, f"\x00piece {i}") for i in range(len(self.rows))]

    def compose(self, words: Sequence[str]) -> np.ndarray:
        """float32 ``[len(words), dim]``: each word's mean token row (zeros for a word with no token)."""
        return mean_rows(self.rows, self.token_ids(words))

    def save(self, folder: Path, prefix: str = "", group: Renames | None = None) -> dict[str, Any]:
        """Write ``folder/<prefix>subwords.npy`` (fp16), ``<prefix>tokenizer.json``; return the settings.

        ``group``: renamed with the other files of an :func:`~ctx2static.fileio.atomic.atomic_files` block.
        """
        with np.errstate(over="ignore"):
            rows = self.rows.astype(np.float16)
        if not np.isfinite(rows).all():  # it would not load again
            raise OutputError(
                folder / (prefix + ROWS),
                f"{folder / (prefix + ROWS)}: not written: the composer's rows hold NaN or values beyond "
                "float16 (65504); fit it to vectors of smaller values, or go without "
                f"({spell('compose', False)})",
            )
        with atomic_write(folder / f"{prefix}{ROWS}", group=group) as fh:
            write_npy(fh, rows)
        with atomic_write(folder / f"{prefix}{TOKENIZER}", "w", encoding="utf-8", group=group) as fh:
            fh.write(self.tokenizer_json)
        return {"lowercase": self.lowercase, **self.info}

    @staticmethod
    def remove(folder: Path, prefix: str = "", group: Renames | None = None) -> None:
        """Delete the composer files saved in ``folder`` under ``prefix``, if any.

        ``group``: removed when the other files of an :func:`~ctx2static.fileio.atomic.atomic_files` block
        are renamed, not before, so an interrupted save leaves the old vectors with their composer.
        """
        for name in (ROWS, TOKENIZER):
            if group is not None:
                group.append((None, folder / f"{prefix}{name}"))
            else:
                (folder / f"{prefix}{name}").unlink(missing_ok=True)

    @classmethod
    def load(cls, folder: Path, prefix: str, settings: dict[str, Any] | None, dim: int) -> Composer | None:
        """The composer saved in ``folder`` (None if none) for a table of ``dim`` columns.

        ``settings`` as :meth:`save` returned them (their types already checked with the rest of the
        metadata). Everything is checked here, once, so that a damaged composer is one line when the
        vectors are opened, never a traceback at the first unknown word nor a copy in a retrofit's
        output: the rows are a 2-d float16 (as saved) or float32 array read without pickle, of
        values float16 holds (so their sums stay finite), ``dim`` wide and with a row for every
        token id of the tokenizer, which must parse. Parsing it here costs what the first composed
        word would (the longer the larger its vocabulary: Gemma's 262k tokens take longest), and the
        parsed tokenizer is kept for that word.
        """
        rows_path, tok_path = folder / f"{prefix}{ROWS}", folder / f"{prefix}{TOKENIZER}"
        if not rows_path.is_file():
            return None
        if not tok_path.is_file() or not settings or "lowercase" not in settings:
            raise InputError(
                rows_path, f"{rows_path}: its {tok_path.name} or meta's 'composer' entry is missing; re-save"
            )
        fix = (
            f"delete {rows_path.name} and {tok_path.name} (the table loads without them; "
            "`ctx2static compose` fits a new composer)"
        )
        try:
            rows = np.load(rows_path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise InputError(
                rows_path, f"{rows_path}: not a readable .npy array ({_first_line(exc)}); {fix}"
            ) from None
        if rows.ndim != 2 or rows.dtype not in (np.float16, np.float32) or rows.shape[1] != dim:
            raise InputError(
                rows_path,
                f"{rows_path}: holds a {rows.dtype} array of shape {rows.shape}, not float16 or float32 "
                f"rows of the table's {dim} dimensions; {fix}",
            )
        block, limit = 1 << 16, np.finfo(np.float16).max  # no whole-table mask; sums of such rows stay finite
        if not all((np.abs(rows[i : i + block]) <= limit).all() for i in range(0, len(rows), block)):
            raise InputError(
                rows_path,
                f"{rows_path}: holds NaN, infinity or values beyond float16 (65504), which composed vectors "
                f"would spread; {fix}",
            )
        try:
            text = tok_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(
                tok_path, f"{tok_path}: cannot be read as UTF-8 text ({_first_line(exc)}); {fix}"
            ) from None
        tokenizer = parse_tokenizer(text, f"{tok_path}", fix)
        size = tokenizer.get_vocab_size(with_added_tokens=True)
        if len(rows) < size:
            raise InputError(
                rows_path, f"{rows_path}: {len(rows)} rows for the {size} tokens of {tok_path.name}; {fix}"
            )
        info = {k: v for k, v in settings.items() if k != "lowercase"}
        composer = cls(rows, text, settings["lowercase"], info)
        composer._tokenizer = tokenizer
        return composer


def parse_tokenizer(text: str, where: str, fix: str) -> Any:
    """The ``tokenizers`` Tokenizer that ``text`` (a ``tokenizer.json``) describes; else a one-line error."""
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_str(text)
    except Exception as exc:  # the Rust parser raises a bare Exception for any malformed file
        raise InputError(where, f"{where}: not a tokenizers JSON file ({_first_line(exc)}); {fix}") from None
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def mean_rows(rows: np.ndarray, ids: Sequence[Sequence[int]]) -> np.ndarray:
    """float32 ``[len(ids), dim]``: the mean of ``rows[ids[i]]`` for each i (zeros where ids[i] is empty)."""
    lengths = np.fromiter((len(t) for t in ids), dtype=np.int64, count=len(ids))
    out = np.zeros((len(ids), rows.shape[1]), dtype=np.float32)
    if lengths.sum() == 0:
        return out
    flat = np.fromiter((i for t in ids for i in t), dtype=np.int64, count=int(lengths.sum()))
    has = lengths > 0
    starts = (np.cumsum(lengths) - lengths)[has]
    out[has] = np.add.reduceat(rows[flat].astype(np.float32), starts, axis=0) / lengths[has, None]
    return out


def map_rows(rows: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, block: int = 8192) -> np.ndarray:
    """float16 ``rows @ w + b``, each block of ``block`` rows through float64 in turn.

    A teacher's vocabulary at once would cost [tokens, d] float64 copies: 1.3 GB for Gemma 3's 262,144
    input embeddings of 640 dims; a block costs 42 MB.
    """
    out = np.empty((len(rows), w.shape[1]), dtype=np.float16)
    for i in range(0, len(rows), block):
        y = np.asarray(rows[i : i + block], dtype=np.float64) @ w
        out[i : i + block] = y if b is None else y + b
    return out


def fit_ridge(
    x: np.ndarray, y: np.ndarray, ridge: float | None = None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """Least squares ``y ~ x W + b`` with an L2 penalty on ``W``; returns ``W``, ``b`` and the fit's numbers.

    ``ridge`` is the penalty as a fraction of the largest squared singular value of the centred
    ``x``; None picks it from :data:`RIDGE_GRID` by the mean cosine of predicted and true rows on a
    held-out 10% (seeded), then refits on all rows. Solved through one SVD per fit:
    ``W = V diag(s / (s^2 + lambda)) U^T (y - mean y)``.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    info: dict[str, float] = {}
    if ridge is None:
        rng = np.random.default_rng(seed)
        held = rng.random(len(x)) < 0.1
        fits = _ridge_path(x[~held], y[~held], RIDGE_GRID)
        scores = [_mean_cosine(x[held] @ w + b, y[held]) for w, b in fits]
        best = int(np.nanargmax(scores))
        ridge = RIDGE_GRID[best]
        info["validation_cosine"] = round(float(scores[best]), 4)
    [(w, b)] = _ridge_path(x, y, (ridge,))
    info.update(ridge=float(ridge), train_cosine=round(_mean_cosine(x @ w + b, y), 4))
    return w, b, info


def _ridge_path(x: np.ndarray, y: np.ndarray, grid: Sequence[float]) -> list[tuple[np.ndarray, np.ndarray]]:
    mx, my = x.mean(0), y.mean(0)
    u, s, vt = np.linalg.svd(x - mx, full_matrices=False)
    uty = u.T @ (y - my)
    out = []
    for frac in grid:
        lam = frac * s[0] ** 2
        shrink = np.divide(s, s**2 + lam, out=np.zeros_like(s), where=s > 0)  # zero inputs: W = 0
        w = vt.T @ (shrink[:, None] * uty)
        out.append((w, my - mx @ w))
    return out


def _mean_cosine(a: np.ndarray, b: np.ndarray) -> float:
    norms = np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-24)
    return float(np.mean(np.einsum("ij,ij->i", a, b) / norms))


def build_composer(
    token_emb: np.ndarray,
    targets: np.ndarray,
    teacher_token_emb: np.ndarray,
    tokenizer_json: str,
    lowercase: bool,
    ridge: float | None = None,
) -> Composer:
    """Fit the map from words' subword-mean input embeddings to their vectors; map every teacher token.

    A token the tokenizer adds past the end of the embedding matrix (Gemma's tokenizer holds one more
    than its 262,144 rows) maps as a zero input: the composer has a row for every id it can emit.
    """
    # a broken tokenizer fails here, not at the first unknown word
    tokenizer = parse_tokenizer(tokenizer_json, "the cache's teacher tokenizer", "extract again")
    missing = tokenizer.get_vocab_size(with_added_tokens=True) - len(teacher_token_emb)
    if missing > 0:
        pad = np.zeros((missing, teacher_token_emb.shape[1]), teacher_token_emb.dtype)
        teacher_token_emb = np.concatenate([teacher_token_emb, pad])
    w, b, info = fit_ridge(token_emb, targets, ridge)
    rows = map_rows(teacher_token_emb, w, b)  # fp16, as saved
    composer = Composer(rows, tokenizer_json, lowercase, {"words": len(token_emb), **info})
    composer._tokenizer = tokenizer
    return composer
