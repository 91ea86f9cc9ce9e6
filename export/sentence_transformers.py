"""A sentence-transformers folder: ``SentenceTransformer(DIR)`` loads it as a ``StaticEmbedding`` module.

Files, as ``SentenceTransformer.save`` writes a StaticEmbedding model with the module at the root:
``modules.json`` (the module's type, then ``Normalize`` when the export normalises),
``config_sentence_transformers.json`` (cosine similarity), ``model.safetensors`` (tensor
``embedding.weight``, one row per token id, float32 or float16: the module is a torch
``EmbeddingBag``, which takes no int8) and ``tokenizer.json`` (the token table of
:mod:`ctx2static.export.tokens`), plus the model card ``README.md``. The types are written as
``sentence_transformers.models.*``, the names versions 3 to 6 resolve. Writing needs
``safetensors`` and ``tokenizers`` only, not sentence-transformers or torch.

The word weights are folded into the rows: the ``WordWeights`` module weighs token embeddings,
which a ``StaticEmbedding`` never outputs. Unlike Model2Vec, an unknown word of a word-level table
is averaged in as a zero row, so without ``normalize`` such a text's vector is shorter than
:meth:`Vectors.encode`'s (its direction is the same).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ctx2static.errors import OptionError, spell
from ctx2static.export.card import Card
from ctx2static.export.config import ExportConfig
from ctx2static.export.quantize import Quantize, quantized
from ctx2static.export.tokens import token_table, write_token_bag
from ctx2static.vectors import Vectors

MODULES = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.StaticEmbedding"}]
NORMALIZE = {"idx": 1, "name": "1", "path": "1_Normalize", "type": "sentence_transformers.models.Normalize"}
CONFIG: dict[str, Any] = {"prompts": {}, "default_prompt_name": None, "similarity_fn_name": "cosine"}


def save_sentence_transformers(vectors: Vectors, out: Path, card: Card, config: ExportConfig) -> Path:
    """Write the sentence-transformers folder atomically (``vectors``: rows with the weights folded in)."""
    if config.quantize is Quantize.INT8:
        raise OptionError(
            f"{spell('format', 'sentence-transformers', keyword='fmt')} holds float32 or float16 rows "
            f"(a torch EmbeddingBag); int8 is for {spell('format', 'model2vec', keyword='fmt')}",
            "format",
            "quantize",
        )
    table = token_table(vectors, config.tokens)
    rows, _ = quantized(table.matrix, config.quantize)
    modules = [*MODULES, NORMALIZE] if config.normalize else MODULES
    files = {
        "modules.json": json.dumps(modules, indent=1),
        "config_sentence_transformers.json": json.dumps(CONFIG, indent=1),
        "README.md": card.render("sentence-transformers", table, out.name),
    }
    return write_token_bag(out, table, {"embedding.weight": rows}, files)
