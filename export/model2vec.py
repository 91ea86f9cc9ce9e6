"""A Model2Vec folder: what ``model2vec.StaticModel.from_pretrained(DIR)`` reads (model2vec/persistence).

``model.safetensors`` (tensor ``embeddings``, one row per token id), ``config.json`` and
``tokenizer.json`` (the token table of :mod:`ctx2static.export.tokens`), plus the model card
``README.md``. Writing needs ``safetensors`` and ``tokenizers`` only, not model2vec itself.
"""

from __future__ import annotations

import json
from pathlib import Path

from ctx2static.export.card import Card
from ctx2static.export.tokens import token_table, write_token_bag
from ctx2static.vectors import Vectors


def save_model2vec(vectors: Vectors, out: Path, card: Card) -> Path:
    """Write the Model2Vec folder atomically."""
    table = token_table(vectors)
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": card.base_model(),
        "apply_pca": None,
        "normalize": False,
        "hidden_dim": vectors.dim,
        "seq_length": 1000000,
        "embedding_dtype": "float32",
        "ctx2static": {k: vectors.meta[k] for k in ("student", "teacher", "config") if k in vectors.meta},
    }
    files = {
        "config.json": json.dumps(config, indent=1),
        "README.md": card.render("model2vec", table, out.name),
    }
    return write_token_bag(out, table, "embeddings", files)
