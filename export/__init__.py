"""Export vectors for other tools: word2vec text/binary (gensim), Model2Vec or sentence-transformers folders.

The two folder formats are token bags (a tokenizer and a row per token, averaged), built by
:mod:`ctx2static.export.tokens` (words outside the table: composed where the teacher's pieces
allow it); each folder carries a model card (:mod:`ctx2static.export.card`).
"""

from __future__ import annotations

import enum
import os
from pathlib import Path

from ctx2static.errors import UserError
from ctx2static.export.card import Card
from ctx2static.vectors import Vectors

__all__ = ["Card", "Format", "export_vectors"]


class Format(str, enum.Enum):
    """Export formats."""

    WORD2VEC = "word2vec"  # text with header
    WORD2VEC_BIN = "word2vec-bin"  # binary with header
    MODEL2VEC = "model2vec"  # folder for model2vec.StaticModel.from_pretrained
    SENTENCE_TRANSFORMERS = "sentence-transformers"  # folder for SentenceTransformer(path)

    @property
    def folder(self) -> bool:
        """Whether the format is a folder (with a model card)."""
        return self in (Format.MODEL2VEC, Format.SENTENCE_TRANSFORMERS)


def export_vectors(vectors: Vectors, fmt: Format, out: str | os.PathLike, card: Card | None = None) -> Path:
    """Write ``vectors`` to ``out`` in ``fmt``; folders get ``card`` (default: one without evaluation)."""
    out = Path(out)
    fmt = Format(fmt)
    card = card or Card.of(vectors)
    if fmt is Format.MODEL2VEC:
        from ctx2static.export.model2vec import save_model2vec

        return save_model2vec(vectors, out, card)
    if fmt is Format.SENTENCE_TRANSFORMERS:
        from ctx2static.export.sentence_transformers import save_sentence_transformers

        return save_sentence_transformers(vectors, out, card)
    binary = fmt is Format.WORD2VEC_BIN
    if out.is_dir() or out.suffix == "" or (out.suffix == ".bin") != binary:
        want = "a .bin file" if binary else "a file not ending in .bin (e.g. .txt or .vec)"
        raise UserError(f"{out}: --format {fmt.value} writes {want}; change --out")
    return vectors.save(out)
