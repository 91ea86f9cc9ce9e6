"""int8 dynamic quantization of a teacher's Linear layers, for the teacher pass on a CPU.

Dynamic quantization (Jacob et al. 2018; torch's ``quantize_dynamic``) stores each Linear's weight
in int8 per output channel and quantizes the activations per batch, so the matrix products run on
the CPU's int8 kernels (fbgemm on x86, qnnpack on ARM) and the results come back in float32.
Embeddings, norms and attention softmaxes stay float32, and so does the LM head, which the exact
top-k scorer reads as a float32 matrix; the input embeddings that the ``token`` table and the
composer copy are therefore the float ones.
"""

from __future__ import annotations

import platform
import warnings
from functools import cache
from typing import Any

import torch

from ctx2static.errors import OptionError, spell


def quantized_engine() -> str:
    """The quantized CPU engine for this machine: qnnpack on ARM, fbgemm on x86."""
    arm = platform.machine().lower() in ("arm64", "aarch64")
    return "qnnpack" if arm else "fbgemm"


@cache
def full_range_activations() -> bool:
    """Whether activations may use all 8 bits: on qnnpack, and where int8 products add into int32.

    That is x86 CPUs with AVX512-VNNI, AVX-VNNI or AMX. fbgemm's older kernels add pairs of u8 x s8
    products into int16, which saturates unless the activations use 7 bits (torch's default,
    ``reduce_range``); the eighth bit halves the rounding error: all-mpnet-base-v2's sentence means
    keep cosine 0.966 to float32 with 8 bits, 0.912 with 7 (40 Brown sentences).
    """
    if quantized_engine() == "qnnpack":
        return True
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            flags = next((ln.split(":", 1)[1].split() for ln in fh if ln.startswith("flags")), [])
    except OSError:
        return False
    return bool({"avx512_vnni", "avx_vnni", "amx_int8"} & set(flags))


class Int8Linear(torch.ao.nn.quantized.dynamic.Linear):
    """torch's int8 dynamic Linear, with 8-bit activations where :func:`full_range_activations` allows."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """As torch's, less the 7-bit activation range where it is not needed."""
        if not full_range_activations():
            return super().forward(x)
        packed = self._packed_params._packed_params
        return torch.ops.quantized.linear_dynamic(x, packed, reduce_range=False).to(x.dtype)


def require_engine() -> str:
    """The quantized engine for this machine, or one line where the torch build lacks it."""
    engine = quantized_engine()
    if engine not in torch.backends.quantized.supported_engines:
        raise OptionError(
            f"{spell('precision', 'int8')}: this torch build lacks the {engine} engine; use float32",
            "precision",
        )
    return engine


def quantize_linears(model: Any, source: str) -> Any:
    """Replace every ``torch.nn.Linear`` of ``model`` but its output embeddings by an int8 dynamic one.

    In place (a copy of a 268M-parameter teacher would double its memory). A model with no Linear
    to quantize (GPT-2's projections are ``Conv1D``) is one clear line, not a silent float32 pass.
    """
    engine = require_engine()
    head = model.get_output_embeddings()
    qconfig = torch.ao.quantization.per_channel_dynamic_qconfig
    spec = {
        name: qconfig
        for name, mod in model.named_modules()
        if type(mod) is torch.nn.Linear and mod is not head
    }
    if not spec:
        raise OptionError(
            f"{spell('precision', 'int8')}: {source} has no Linear layers to quantize; use float32",
            "precision",
        )
    torch.backends.quantized.engine = engine
    with warnings.catch_warnings():
        # torch 2.13 warns on every call that torch.ao's eager quantization moves to torchao (not a
        # dependency here); the quantized modules still run on fbgemm/qnnpack as before
        warnings.filterwarnings("ignore", message=r".*torch\.ao\.quantization is deprecated")
        warnings.filterwarnings("ignore", message=r".*quantize_per_(tensor|channel).*deprecated")
        return torch.ao.quantization.quantize_dynamic(
            model, spec, dtype=torch.qint8, mapping={torch.nn.Linear: Int8Linear}, inplace=True
        )
