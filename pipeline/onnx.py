"""The teacher's forward on ONNX Runtime (``--backend onnx``): the same hidden states, a faster CPU pass.

A separate option, not a value of ``--precision``: the backend (which engine computes) and the
precision (which arithmetic) are two axes. ``--precision float32`` and ``int8`` mean the same on
both, and the cache identity records each on its own line (``teacher.backend`` beside
``teacher.precision``), so a cache begun with torch is refused when continued with onnx.
``auto`` stays torch: an ORT int8 graph computes other numbers than torch's int8 on the same CPU, and
a default that changes with what happens to be installed would make two machines' caches differ.

Export: ``torch.onnx.export`` with the TorchScript exporter (``dynamo=False``), of the bare model
(no head), every hidden state a graph output. The TorchScript exporter needs nothing beyond torch
(the dynamo one needs onnxscript) and traces every family the project loads; optimum also installs
from PyPI, but its export writes the last hidden state only unless each family's ONNX config is
subclassed, and it pins transformers' versions. The graph is exported once per teacher and
precision into the user cache (``~/.cache/ctx2static/onnx/<key>/<precision>/model.onnx``), keyed by
the model folder's resolved path, its config and weight files' sizes and times, and the versions of
the code that traces, fuses and quantizes it (ctx2static, torch, transformers, onnxruntime).
BERT's kin get ORT's transformer fusions (one Attention op per layer: :func:`_fuse`). int8 is ORT's
dynamic quantization of that graph's MatMuls and attentions (weights int8 per channel, activations
uint8 per batch; 7-bit weights where the CPU's int8 products add into int16, as
:mod:`~ctx2static.pipeline.int8` explains for torch).

The forward returns the hidden states the torch model returns, so pooling, sentence means and the
per-word sums run unchanged (:meth:`~ctx2static.pipeline.teacher.Teacher.forward`). Signals that
need the LM head's input or attention weights (``--topk``, ``--attention``) are refused: the graph
holds neither.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ctx2static.errors import InputError, OptionError, spell
from ctx2static.fileio.atomic import atomic_dir
from ctx2static.fileio.digests import check_sealed, seal_folder
from ctx2static.fileio.oserrors import user_errors_for
from ctx2static.pipeline.config import Precision
from ctx2static.pipeline.models import _user_cache, make_user_cache, rebuild_fix

log = logging.getLogger(__name__)

OPSET = 17
"""The ONNX opset exported (LayerNormalization is an op from 17 on, which ORT fuses)."""

MODEL = "model.onnx"


TELEMETRY_OFF = {"ORT_DISABLE_TELEMETRY": "1"}
"""Set before onnxruntime is first imported: its import writes a device id and an SQLite events store
under ``~/.cache/Microsoft/`` otherwise (1.32 on Linux; ``disable_telemetry_events()`` comes too late)."""


def onnxruntime_module() -> Any:
    """The onnxruntime module with its telemetry off, or one line saying how to install it."""
    os.environ.update(TELEMETRY_OFF)
    try:
        import onnxruntime
    except ImportError:
        raise OptionError(
            f"{spell('backend', 'onnx')} needs onnxruntime: pip install 'ctx2static[onnx]'", "backend"
        ) from None
    return onnxruntime


def teacher_key(source: str) -> str:
    """What identifies the weights and the code that exports, fuses and quantizes: any change exports anew."""
    folder = Path(source).resolve()
    files = sorted(
        f for f in folder.glob("*") if f.suffix in (".json", ".safetensors", ".bin") and f.is_file()
    )
    stats = [[f.name, f.stat().st_size, f.stat().st_mtime_ns] for f in files]
    key = {
        "source": str(folder),
        "files": stats,
        "opset": OPSET,
        **{package: version(package) for package in ("ctx2static", "torch", "transformers", "onnxruntime")},
    }
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]


def recipe(precision: Precision) -> str:
    """The folder name of a precision's graph: the quantization recipe where it depends on the CPU."""
    if precision is Precision.FLOAT32:
        return "float32"
    from ctx2static.pipeline.int8 import full_range_activations

    return "int8" if full_range_activations() else "int8-7bit"


class _HiddenStates(torch.nn.Module):
    """The bare model as a function of (ids, mask) to its hidden states, for the exporter to trace."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Every hidden state (embeddings first), as the torch teacher reads them."""
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
        return tuple(out.hidden_states)


def _export(model: Any, path: Path, pad_id: int) -> None:
    """Trace ``model`` (its base model: no head) into ``path`` with dynamic batch and length."""
    base = model.base_model
    impl = base.config._attn_implementation
    base.set_attn_implementation("eager")  # a plain graph of MatMul/Softmax that ORT fuses
    try:
        ids = torch.tensor([[5, 6, 7, 8], [5, 6, pad_id, pad_id]], dtype=torch.long)
        mask = (torch.arange(4) < torch.tensor([[4], [2]])).long()
        with torch.no_grad():
            n = len(base(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states)
        names = [f"hidden_{i}" for i in range(n)]
        axes = {k: {0: "batch", 1: "tokens"} for k in ["input_ids", "attention_mask", *names]}
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # the tracer's warnings about Python values it fixes
            torch.onnx.export(
                _HiddenStates(base),
                (ids, mask),
                str(path),
                input_names=["input_ids", "attention_mask"],
                output_names=names,
                dynamic_axes=axes,
                opset_version=OPSET,
                dynamo=False,
            )
    except Exception as exc:  # the tracer fails in many ways, all meaning this family cannot be exported
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise OptionError(
            f"{spell('backend', 'onnx')}: {model.config.model_type} does not export to ONNX here ({msg}); "
            f"use {spell('backend', 'torch')}",
            "backend",
        ) from None
    finally:
        base.set_attn_implementation(impl)


FUSED = {"bert": "bert", "roberta": "bert", "xlm-roberta": "bert", "mpnet": "bert"}
"""Families whose attention and layer norms ORT's transformer optimizer fuses (model_type -> its name)."""


def _fuse(src: Path, dst: Path, config: Any) -> None:
    """ORT's transformer fusions (one Attention op per layer, skip layer norms) where the family has them.

    Offline and at ORT's level 0, so the graph holds no CPU-specific kernels. MiniLM's float32 pass ran
    faster than the unfused graph (measured: Results page, onnx_teacher), its hidden states within 1e-5.
    """
    from onnxruntime.transformers.optimizer import optimize_model

    kind = FUSED.get(config.model_type)
    if kind is None:
        src.rename(dst)
        return
    logging.disable(logging.WARNING)  # the optimizer's notes on each pattern it does not find
    try:
        fused = optimize_model(
            str(src),
            model_type=kind,
            num_heads=config.num_attention_heads,
            hidden_size=config.hidden_size,
            opt_level=0,
        )
    finally:
        logging.disable(logging.NOTSET)
    fused.save_model_to_file(str(dst))
    src.unlink()


def _quantize(src: Path, dst: Path) -> None:
    """ORT's dynamic int8 quantization of the MatMuls and fused attentions (7-bit weights: int16 sums)."""
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quant_pre_process, quantize_dynamic

    from ctx2static.pipeline.int8 import full_range_activations

    # ONNX's shapes inferred and constants folded first, as ORT advises (its symbolic shapes fail on BERT)
    prepared = dst.with_name("prepared.onnx")
    quant_pre_process(src, prepared, skip_symbolic_shape=True)
    quantize_dynamic(
        prepared,
        dst,
        weight_type=QuantType.QInt8,
        per_channel=True,
        reduce_range=not full_range_activations(),
        op_types_to_quantize=["MatMul", "Attention"],
        # the fused ops' outputs have no type that ONNX's shape inference knows: they are float32
        extra_options={"DefaultTensorType": TensorProto.FLOAT},
    )
    prepared.unlink()


@contextlib.contextmanager
def _waiting_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``folder`` that waits: Ray workers starting together export once, in turn."""
    with user_errors_for(folder):
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        with contextlib.suppress(OSError):  # a filesystem without locks: go on unlocked
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def exported(model: Any, source: str, precision: Precision, pad_id: int, root: Path | None = None) -> Path:
    """The graph of ``model`` at ``precision``: exported (and quantized) once, then read from the cache.

    Each graph's folder is sealed when written (its SHA256SUMS) and checked at every load, before ORT
    reads it: a damaged graph is one line naming the folder to delete, not NaN blamed on float16.
    """
    folder = (root or _user_cache("onnx")) / teacher_key(source)
    path, fp32 = folder / recipe(precision) / MODEL, folder / "float32" / MODEL
    if not path.parent.exists():
        make_user_cache(folder)
        with _waiting_lock(folder):
            if not fp32.parent.exists():  # int8 is quantized from the float32 graph
                log.info("exporting %s to ONNX (once): %s", source, fp32)
                with atomic_dir(fp32.parent) as tmp:
                    _export(model, tmp / "traced.onnx", pad_id)
                    _fuse(tmp / "traced.onnx", tmp / MODEL, model.config)
                    seal_folder(tmp)
            if not path.parent.exists():
                check_sealed(fp32.parent, rebuild_fix(fp32.parent, "the teacher"))
                log.info("quantizing %s to int8 (once)", fp32)
                with atomic_dir(path.parent) as tmp:
                    _quantize(fp32, tmp / MODEL)
                    seal_folder(tmp)
    check_sealed(path.parent, rebuild_fix(path.parent, "the teacher"))
    return path


@dataclass
class Hidden:
    """What :meth:`OnnxForward.run` returns in place of a transformers output: only hidden states."""

    hidden_states: list[torch.Tensor | None]
    attentions: None = None


class OnnxForward:
    """An ORT session over a teacher's exported graph: (ids, mask) in, the hidden states asked for out."""

    def __init__(self, session: Any, path: Path) -> None:
        self.session = session
        self.path = path
        self.names = [o.name for o in session.get_outputs()]

    @classmethod
    def load(cls, model: Any, source: str, precision: Precision, pad_id: int, threads: int) -> OnnxForward:
        """The session for ``model`` at ``precision`` (float32 or int8) on ``threads`` (0: as torch)."""
        ort = onnxruntime_module()
        path = exported(model, source, precision, pad_id)
        opts = ort.SessionOptions()
        # 0: as many as torch runs (a Ray worker sets 1 per worker), so the two backends compare alike
        opts.intra_op_num_threads = threads or torch.get_num_threads()
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3  # ORT's warnings about the graph's unused initialisers
        try:
            session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a damaged or foreign file in the cache: ORT's first line says which
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(
                path,
                f"{path}: ONNX Runtime cannot load it ({first}); delete {path.parent} to export it again",
            ) from None
        return cls(session, path)

    def run(self, ids: torch.Tensor, mask: torch.Tensor, layers: Sequence[int] | None) -> Hidden:
        """The hidden states ``layers`` names (None: all; empty: the last); the others are None."""
        n = len(self.names)
        wanted = range(n) if layers is None else (layers or (n - 1,))
        feed = {"input_ids": ids.cpu().numpy(), "attention_mask": mask.cpu().numpy()}
        arrays = self.session.run([self.names[i] for i in wanted], feed)
        states: list[torch.Tensor | None] = [None] * n
        for i, a in zip(wanted, arrays, strict=True):
            states[i] = torch.from_numpy(np.asarray(a))
        return Hidden(states)
