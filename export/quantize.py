"""The stored rows of a token-bag folder: float32, float16, or int8 with a float32 scale per row.

int8 follows Model2Vec's ``quantize_to="int8"`` (values rounded to -127..127, symmetric), with one
scale per row instead of one for the whole table: the folded word weights make rows of very
different lengths (SIF weights between "the" and a rare word), and a single scale set by the
longest row leaves a frequent word's row a few levels: on Brown the worst sentence's cosine to the
float32 encoding fell far lower with one scale than with a scale per row
(measured: Results page, export_quantize). The scales go to Model2Vec's
``weights`` tensor, by which ``StaticModel`` (0.7 and later) multiplies each token's row before
the mean; they cost 4 bytes a row.
"""

from __future__ import annotations

import enum

import numpy as np

from ctx2static.errors import UserError


class Quantize(str, enum.Enum):
    """The type of a folder's stored rows."""

    FLOAT32 = "float32"
    FLOAT16 = "float16"
    INT8 = "int8"  # with a float32 scale per row


def quantized(matrix: np.ndarray, quantize: Quantize) -> tuple[np.ndarray, np.ndarray | None]:
    """The rows as stored and, for int8, each row's scale (``row = stored * scale``); else None.

    int8: ``scale_i = max_j |x_ij| / 127`` (1 for a zero row), ``stored = rint(x / scale)``.
    """
    matrix = np.asarray(matrix, dtype=np.float32)
    if quantize is Quantize.FLOAT32:
        return matrix, None
    if quantize is Quantize.FLOAT16:
        if np.abs(matrix).max(initial=0.0) > np.finfo(np.float16).max:
            raise UserError("the rows hold values beyond float16 (65504); export them as float32 or int8")
        return matrix.astype(np.float16), None
    peak = np.abs(matrix).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    rows = np.clip(np.rint(matrix / scales[:, None]), -127, 127).astype(np.int8)
    return rows, scales
