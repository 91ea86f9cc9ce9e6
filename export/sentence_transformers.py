"""A sentence-transformers folder: ``SentenceTransformer(DIR)`` loads it as one ``StaticEmbedding`` module.

Files, as ``SentenceTransformer.save`` writes a StaticEmbedding model with the module at the root:
``modules.json`` (the module's type), ``config_sentence_transformers.json`` (cosine similarity),
``model.safetensors`` (tensor ``embedding.weight``, one row per token id) and ``tokenizer.json``
(the token table of :mod:`ctx2static.export.tokens`), plus the model card ``README.md``. The type
is written as ``sentence_transformers.models.StaticEmbedding``, the name versions 3 to 6 resolve.
Writing needs ``safetensors`` and ``tokenizers`` only, not sentence-transformers or torch.
"""

from __future__ import annotations

import json
from pathlib import Path

from ctx2static.export.card import Card
from ctx2static.export.tokens import token_table, write_token_bag
from ctx2static.vectors import Vectors

MODULES = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.StaticEmbedding"}]
CONFIG = {"prompts": {}, "default_prompt_name": None, "similarity_fn_name": "cosine"}


def save_sentence_transformers(vectors: Vectors, out: Path, card: Card) -> Path:
    """Write the sentence-transformers folder atomically."""
    table = token_table(vectors)
    files = {
        "modules.json": json.dumps(MODULES, indent=1),
        "config_sentence_transformers.json": json.dumps(CONFIG, indent=1),
        "README.md": card.render("sentence-transformers", table, out.name),
    }
    return write_token_bag(out, table, "embedding.weight", files)
