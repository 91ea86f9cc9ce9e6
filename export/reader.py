"""An exported Model2Vec or sentence-transformers folder read back, encoding texts as those libraries do.

What ``StaticModel.encode`` (model2vec 0.10) and ``SentenceTransformer.encode`` with a
``StaticEmbedding`` compute, with numpy and ``tokenizers`` only: the folder's tokenizer without
special tokens, the rows of the ids (int8 rows times their scales, the ``weights`` tensor),
averaged, unit length when the folder says so. Model2Vec drops its unknown token before the mean;
sentence-transformers averages its row in. So a folder's encoding can be checked, and scored, where
neither library is installed (the tests, the evaluation of a quantized export).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ctx2static.composer import mean_rows, parse_tokenizer
from ctx2static.errors import InputError


@dataclass
class TokenBag:
    """A folder's tokenizer, its rows as float32, the id left out of the mean (or None), and ``normalize``."""

    tokenizer: Any
    rows: np.ndarray
    dropped: int | None
    normalize: bool

    @classmethod
    def load(cls, folder: str | Path) -> TokenBag:
        """Read a Model2Vec folder (``embeddings``) or a sentence-transformers one (``embedding.weight``)."""
        from safetensors.numpy import load_file

        folder = Path(folder)
        for name in ("model.safetensors", "tokenizer.json"):
            if not (folder / name).is_file():
                raise InputError(
                    folder, f"{folder}: lacks {name}; it is not a Model2Vec or sentence-transformers folder"
                )
        tensors = load_file(folder / "model.safetensors")
        tokenizer = parse_tokenizer(
            (folder / "tokenizer.json").read_text(encoding="utf-8"), str(folder), "export it again"
        )
        if "embedding.weight" in tensors:
            modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
            normalize = any(m["type"].endswith(".Normalize") for m in modules)
            return cls(tokenizer, tensors["embedding.weight"].astype(np.float32), None, normalize)
        rows = tensors["embeddings"].astype(np.float32)
        if "weights" in tensors:
            rows *= tensors["weights"][:, None]
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        unknown = getattr(tokenizer.model, "unk_token", None)  # as model2vec finds it (WordPiece, WordLevel)
        return cls(tokenizer, rows, tokenizer.token_to_id(unknown) if unknown else None, config["normalize"])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 ``[len(texts), dim]``: the mean row of each text's token ids (zeros for none)."""
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]
        if self.dropped is not None:
            ids = [[i for i in row if i != self.dropped] for row in ids]
        out = mean_rows(self.rows, ids)
        if self.normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out
