"""Export vectors for other tools: word2vec text or binary (gensim), or a Model2Vec folder.

A Model2Vec folder holds what ``model2vec.StaticModel.from_pretrained(DIR)`` reads
(model2vec/persistence): ``model.safetensors`` (tensor ``embeddings``, one row per tokenizer id),
``config.json`` and ``tokenizer.json``, a ``tokenizers`` WordLevel model over the vocabulary with
``[PAD]`` (id 0) and ``[UNK]`` (id 1) as zero rows, splitting text into words exactly as the corpus
reader does (pipeline/corpus.py: punctuation split off, inner hyphens and apostrophes kept) and
lower-casing when the vectors hold no upper-case word. Writing needs ``safetensors`` and
``tokenizers`` only, not model2vec itself.
"""

from __future__ import annotations

import enum
import json
import os
from pathlib import Path

import numpy as np

from ctx2static.errors import UserError
from ctx2static.fileio import atomic_dir
from ctx2static.vectors import Vectors

PAD, UNK = "[PAD]", "[UNK]"


class Format(str, enum.Enum):
    """Export formats."""

    WORD2VEC = "word2vec"  # text with header
    WORD2VEC_BIN = "word2vec-bin"  # binary with header
    MODEL2VEC = "model2vec"  # folder for model2vec.StaticModel.from_pretrained


def export_vectors(vectors: Vectors, fmt: Format, out: str | os.PathLike) -> Path:
    """Write ``vectors`` to ``out`` in ``fmt``; return the path written."""
    out = Path(out)
    fmt = Format(fmt)
    if fmt is Format.MODEL2VEC:
        return save_model2vec(vectors, out)
    binary = fmt is Format.WORD2VEC_BIN
    if out.is_dir() or out.suffix == "" or (out.suffix == ".bin") != binary:
        want = "a .bin file" if binary else "a file not ending in .bin (e.g. .txt or .vec)"
        raise UserError(f"{out}: --format {fmt.value} writes {want}; change --out")
    return vectors.save(out)


def model2vec_tokenizer(words: list[str], lowercase: bool) -> object:
    """A WordLevel ``tokenizers.Tokenizer``: [PAD]=0, [UNK]=1, then ``words`` in order."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    from ctx2static.text.corpus import TOKEN

    vocab = {PAD: 0, UNK: 1}
    for w in words:
        vocab.setdefault(w, len(vocab))
    if len(vocab) != len(words) + 2:
        raise UserError(f"the vocabulary holds {PAD!r}, {UNK!r} or a word twice; it cannot be exported")
    tok = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    words_and_punctuation = pre_tokenizers.Split(Regex(TOKEN.pattern), behavior="isolated")
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), words_and_punctuation])
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    return tok


def save_model2vec(vectors: Vectors, out: Path) -> Path:
    """Write the Model2Vec folder layout (module docstring) atomically."""
    from safetensors.numpy import save

    lowercase = all(w == w.lower() for w in vectors.words)
    tok = model2vec_tokenizer(list(vectors.words), lowercase)
    matrix = np.zeros((len(vectors) + 2, vectors.dim), dtype=np.float32)
    matrix[2:] = vectors.matrix
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": None,
        "apply_pca": None,
        "normalize": False,
        "hidden_dim": vectors.dim,
        "seq_length": 1000000,
        "embedding_dtype": "float32",
        "ctx2static": {k: vectors.meta[k] for k in ("student", "teacher", "config") if k in vectors.meta},
    }
    with atomic_dir(out) as tmp:
        # bytes written by Python, so a full disk is an OSError (one line), not a Rust library's error
        (tmp / "model.safetensors").write_bytes(save({"embeddings": matrix}))
        (tmp / "tokenizer.json").write_text(tok.to_str(pretty=True), encoding="utf-8")  # type: ignore[attr-defined]
        (tmp / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return out
