"""A Model2Vec folder: what ``model2vec.StaticModel.from_pretrained(DIR)`` reads (model2vec/persistence).

``model.safetensors`` (tensor ``embeddings``, one row per token id, float32, float16 or int8, and
for int8 the per-row scales as ``weights``), ``config.json`` and ``tokenizer.json`` (the token
table of :mod:`ctx2static.export.tokens`), plus the model card ``README.md``. Writing needs
``safetensors`` and ``tokenizers`` only, not model2vec itself.

``StaticModel.encode`` then gives :meth:`Vectors.encode`'s vectors (same weighting, same
``normalize``): it splits a text as the corpus was read, drops unknown tokens, averages the rows
(times ``weights``) and normalises when ``config.json`` says so; ``max_length`` is null, so long
texts are not cut at 512 tokens. Two differences: an unknown word split into k teacher pieces
counts k times in the mean (once in :meth:`Vectors.encode`), and a text is cut at
``max_length * median token length`` characters by model2vec before 0.10 ignores ``max_length``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctx2static.export.card import Card
from ctx2static.export.config import ExportConfig
from ctx2static.export.quantize import quantized
from ctx2static.export.tokens import token_table, write_token_bag
from ctx2static.vectors import Vectors
from ctx2static.vectors.encoding import Weighting


def save_model2vec(vectors: Vectors, out: Path, card: Card, config: ExportConfig) -> Path:
    """Write the Model2Vec folder atomically (``vectors``: the rows with the word weights folded in)."""
    table = token_table(vectors, config.tokens)
    rows, scales = quantized(table.matrix, config.quantize)
    tensors = {"embeddings": rows} if scales is None else {"embeddings": rows, "weights": scales}
    weighted = config.weighting is not Weighting.NONE
    meta: Mapping[str, Any] = vectors.meta  # read by key names taken from a tuple
    settings = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": card.base_model(),
        "apply_pca": (vectors.meta.get("pca") or {}).get("dims"),
        "sif_coefficient": config.sif_a if weighted else None,
        "normalize": config.normalize,
        "max_length": None,
        "hidden_dim": vectors.dim,
        "seq_length": 1000000,
        "embedding_dtype": config.quantize.value,
        "ctx2static": {
            **{k: meta[k] for k in ("student", "teacher", "config") if k in meta},
            "export": config.to_dict(),
        },
    }
    files = {
        "config.json": json.dumps(settings, indent=1),
        "README.md": card.render("model2vec", table, out.name),
    }
    return write_token_bag(out, table, tensors, files)
