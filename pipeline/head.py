"""A sentence embedder's own head: how its token states become the vector it is used by.

A sentence-transformers folder lists its modules in ``modules.json``: after the transformer, a
pooling (``1_Pooling``), optional dense layers (EmbeddingGemma: 768 -> 3072 -> 768, no bias, no
activation) and a normalisation. The ``embed`` word table (:func:`ctx2static.pipeline.shard.vocab_tables`)
encodes each word inside a prompt and keeps what this head makes of the last layer, as
``SentenceTransformer.encode`` does: the word as the model is meant to be used, where the ``word``
table reads only the mean of the word's own subword states. A folder without ``modules.json`` is
read as sentence-transformers reads a plain model: mean pooling, nothing after it.

Only mean pooling over every token, prompt included, is read (the forward's all-token mean);
a head that pools otherwise (CLS, last token, the prompt left out) has :attr:`SentenceHead.refused`
set, and the ``embed`` table is off for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ctx2static.errors import InputError, spell

ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "torch.nn.modules.linear.Identity": lambda x: x,
    "torch.nn.modules.activation.Tanh": np.tanh,
}
"""The dense layers' activations read (sentence-transformers names them by their torch class)."""


@dataclass(frozen=True)
class Dense:
    """One dense layer: ``activation(x @ weight.T + bias)``."""

    weight: np.ndarray  # float32 [out, in]
    bias: np.ndarray | None
    activation: str


@dataclass(frozen=True)
class SentenceHead:
    """The pooling, dense layers and normalisation after the transformer, and the folder's prompts."""

    dense: tuple[Dense, ...] = ()
    normalize: bool = False
    prompts: dict[str, str] = field(default_factory=dict)
    refused: str = ""  # why the forward's mean cannot be this head's pooling ("" : it can)

    @classmethod
    def read(cls, folder: Path) -> SentenceHead:
        """The head a model folder describes (a plain model's: mean pooling, no layers after it)."""
        modules = _json(folder / "modules.json", list)
        prompts = _json(folder / "config_sentence_transformers.json", dict).get("prompts") or {}
        dense, normalize, refused = [], False, ""
        for module in modules:
            kind = str(module.get("type", "")).rsplit(".", 1)[-1]
            where = _inside(folder, str(module.get("path", "")))
            if kind == "Pooling":
                refused = _pooling_refused(_json(where / "config.json", dict))
            elif kind == "Dense":
                dense.append(_dense(where))
            elif kind == "Normalize":
                normalize = True
            elif kind not in ("Transformer", ""):
                refused = f"its module {kind} is not read"
        return cls(tuple(dense), normalize, {str(k): str(v) for k, v in prompts.items()}, refused)

    def __call__(self, pooled: np.ndarray) -> np.ndarray:
        """The head's output for mean-pooled last-layer states ``pooled`` [n, d] (float32)."""
        x = pooled.astype(np.float32)
        for layer in self.dense:
            x = x @ layer.weight.T
            if layer.bias is not None:
                x = x + layer.bias
            x = ACTIVATIONS[layer.activation](x)
        if self.normalize:
            x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        return x.astype(np.float32)


def _inside(folder: Path, sub: str) -> Path:
    """A module's folder, named by ``modules.json``: one that leaves the model folder is refused."""
    parts = Path(sub).parts
    if Path(sub).is_absolute() or ".." in parts:
        raise InputError(
            folder / "modules.json",
            f"{folder / 'modules.json'}: names a module folder outside the model folder ({sub}); "
            "re-download the model folder",
        )
    return folder.joinpath(*parts)


def _json(path: Path, kind: type) -> Any:
    """A JSON file of the folder, a ``kind`` (list or dict; empty where there is no file), else one line.

    A list's items are dicts (``modules.json``'s modules).
    """
    if not path.is_file():
        return kind()
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError, RecursionError) as exc:
        raise InputError(
            path, f"{path}: not a readable JSON file ({exc}); re-download the model folder"
        ) from None
    if not isinstance(data, kind) or (isinstance(data, list) and not all(isinstance(m, dict) for m in data)):
        raise InputError(
            path,
            f"{path}: not the JSON {kind.__name__} sentence-transformers writes; re-download the folder",
        )
    return data


def _pooling_refused(cfg: dict) -> str:
    """Why a Pooling config is not the all-token mean ("": it is; a missing config is the mean)."""
    modes = [k.removeprefix("pooling_mode_") for k, v in cfg.items() if k.startswith("pooling_mode_") and v]
    if cfg.get("pooling_mode") not in (None, "mean") or modes not in ([], ["mean_tokens"]):
        return f"it pools by {cfg.get('pooling_mode') or ', '.join(modes)}, not the mean"
    if cfg.get("include_prompt", True) is False:
        return "its mean leaves the prompt out"
    return ""


def _dense(where: Path) -> Dense:
    """A Dense module's weights and activation, from its folder."""
    from safetensors.numpy import load_file

    cfg = _json(where / "config.json", dict)
    activation = str(cfg.get("activation_function", "torch.nn.modules.linear.Identity"))
    path = where / "model.safetensors"
    if activation not in ACTIVATIONS or not path.is_file():
        what = f"activation {activation}" if path.is_file() else "no model.safetensors"
        raise InputError(
            where,
            f"{where}: a dense layer with {what}, which is not read; use {spell('embed_template', 'off')}",
        )
    weights = load_file(str(path))
    if "linear.weight" not in weights:
        raise InputError(path, f"{path}: holds no linear.weight; re-download the model folder")
    bias = weights.get("linear.bias")
    return Dense(
        weights["linear.weight"].astype(np.float32),
        None if bias is None else bias.astype(np.float32),
        activation,
    )
