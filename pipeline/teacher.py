"""Teachers behind one interface: encoders with an MLM head, encoders without one, causal LMs.

The kind comes from the model's config (its architectures / decoder flag), never from its name
(:mod:`ctx2static.pipeline.models`); a head the config names but the weights lack makes it an
encoder. A forward returns group means of the chosen layer (subword-pooled word vectors, or
per-sentence means) and the mean over all tokens incl. special ones (X2Static Eq. 3, reference
code); what a cache signal computes beyond them (top-k substitutes, attention context words) is
its own reduction, declared with its array in :mod:`ctx2static.pipeline.shard`, so a new signal
leaves this module as it is. The forward gives reductions the attention weights or the decoder's
input at each group's target position (causal teachers predict token t from position t-1) when
a request asks for them.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ctx2static.errors import InputError, OptionError, spell
from ctx2static.pipeline.align import Encoder, Encoding
from ctx2static.pipeline.batching import HostBatch, host_batch
from ctx2static.pipeline.config import Backend, Precision, TeacherConfig, parse_layers
from ctx2static.pipeline.head import SentenceHead
from ctx2static.pipeline.models import (
    TeacherKind,
    detect_kind,
    loading,
    n_hidden_states,
    read_config,
    resolve,
    resolve_layer,
)
from ctx2static.pipeline.scorer import Scorer

if TYPE_CHECKING:
    from ctx2static.pipeline.onnx import OnnxForward


Reduce = Callable[["Forward", int], dict[str, torch.Tensor]]
"""A signal's reduction of a batch's forward, given its option's value: arrays [n, G, ...], a row a group."""


@dataclass(frozen=True)
class Request:
    """What one forward pass returns (the mean of all tokens is always there).

    ``reductions`` are signals' own outputs (:data:`ctx2static.pipeline.shard.REDUCTIONS` makes
    them), each with its option's value; ``attentions`` and ``decoder_input`` say what they read
    beyond the hidden states, which the forward computes only when asked.
    """

    vectors: bool = False
    hidden_states: bool = False  # every hidden state's group and all-token means, not only the chosen layers'
    layers: tuple[int, ...] = ()  # hidden states averaged in place of the teacher's (the word table's)
    attentions: bool = False  # the attention weights (eager attention: the only one that returns them)
    decoder_input: bool = False  # the decoder's input at each wanted group's target position
    embedding: bool = False  # the last layer's all-token mean too: the sentence head's input
    reductions: tuple[tuple[Reduce, int], ...] = ()


_PER_GROUP = {"per_group": True}
"""Metadata of a field with one row per group (word) of the input: cut to the input's groups."""


@dataclass
class TeacherOutput:
    """Per-input results: all-token mean [d]; per group: vectors [G, d]; the request's reductions.

    ``hidden`` [G, n_hidden, d]: each hidden state's group means, and ``hidden_mean`` [n_hidden, d] its
    all-token means (layer probes: one pass, every layer). The forward fills each field from the
    batch's result of the same name; ``reduced`` holds each reduction's arrays by their names, one
    row a group.
    """

    mean: np.ndarray
    vectors: np.ndarray | None = field(default=None, metadata=_PER_GROUP)
    hidden: np.ndarray | None = field(default=None, metadata=_PER_GROUP)
    hidden_mean: np.ndarray | None = None
    reduced: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def split(
        cls, arrays: dict[str, np.ndarray], reduced: dict[str, np.ndarray], batch: Sequence[Encoding]
    ) -> list[TeacherOutput]:
        """Each input's rows of a batch's results (per-group ones cut to the input's groups)."""
        kept = [(f.name, bool(f.metadata.get("per_group"))) for f in fields(cls) if f.name in arrays]
        return [
            cls(
                **{k: arrays[k][i, : e.n_groups] if grouped else arrays[k][i] for k, grouped in kept},
                reduced={k: v[i, : e.n_groups] for k, v in reduced.items()},
            )
            for i, e in enumerate(batch)
        ]


@dataclass(frozen=True)
class Padded:
    """A batch padded to its longest input, on the device: what the forward and its reductions read."""

    ids: torch.Tensor  # [n, T] token ids, the pad token where an input is shorter
    mask: torch.Tensor  # [n, T] 1 on an input's tokens
    pool: torch.Tensor  # [n, G, T] the mean over each group's tokens
    first: torch.Tensor  # [n, G] each group's first token (-1: no such group)
    wanted: torch.Tensor  # [n, G] the groups whose signals are kept
    wanted_at: torch.Tensor  # [k] their places in the [n * G] groups, row-major (from the host: no sync)
    has_target: torch.Tensor  # [n, G] wanted groups with a position to predict them from
    gather: torch.Tensor  # [n, G] that position (causal: the token before the group), clamped to 0


PER_INPUT = ("mean", "embedding")
"""The forward's outputs with a row per input, not per group: ``picked`` carries all but the mean whole."""


@dataclass
class Landing:
    """A batch's results on their way to the host (:meth:`Teacher.launch_wanted`)."""

    mean: torch.Tensor  # [n, d] on the host once ``done``
    picked: dict[str, torch.Tensor]
    done: torch.cuda.Event | None  # recorded after the copies; None: already there (a CPU forward)

    @classmethod
    def of(cls, mean: torch.Tensor, picked: dict[str, torch.Tensor]) -> Landing:
        """Start copying ``mean`` and ``picked`` to the host (pinned memory, without waiting on a GPU)."""
        if mean.device.type != "cuda":
            return cls(mean, picked, None)
        host = {k: v.to("cpu", non_blocking=True) for k, v in picked.items()}
        done = torch.cuda.Event()
        landing = cls(mean.to("cpu", non_blocking=True), host, done)
        done.record()  # after the copies were queued: synchronizing on it waits for them
        return landing

    def get(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The mean and picked rows as arrays, once the device has finished them."""
        if self.done is not None:
            self.done.synchronize()
        return self.mean.numpy(), {k: v.numpy() for k, v in self.picked.items()}


@dataclass(frozen=True)
class Forward:
    """One batch's forward as a signal's reduction reads it (:data:`Reduce`), on the device."""

    teacher: Teacher
    padded: Padded
    hidden: torch.Tensor  # [n, T, d] the chosen layers averaged, float32
    attentions: Sequence[torch.Tensor] | None  # each layer's [n, heads, T, T], when the request asked
    decoder_input: torch.Tensor | None  # [targets, d] at ``padded.has_target``, when the request asked


@dataclass
class Teacher:
    """A loaded teacher: model, fast tokenizer, kind and where its substitutes come from."""

    name: str
    source: str
    model: Any
    tokenizer: Any
    kind: TeacherKind
    device: torch.device
    max_length: int
    bos_id: int | None
    attn_impl: str  # the model's own attention implementation, used by passes that need no weights
    layers: tuple[int, ...] = ()  # hidden states averaged for the vectors and means (() = the last)
    n_hidden: int = 0  # hidden states the model returns (layers + embeddings; 0 = not stated by its config)
    precision: Precision = Precision.FLOAT32  # what the forward computes in (autocast: bfloat16, float16)
    substitutes: np.ndarray | None = None  # token ids top-k substitutes come from (None: all)
    layer_spec: str = ""  # the --layer spec that ``layers`` were read from (auto resolved)
    onnx: OnnxForward | None = None  # --backend onnx: the forward runs here (the model keeps the tables)

    @classmethod
    def load(cls, name: str, config: TeacherConfig | None = None) -> Teacher:
        """Load by short name, folder or hub id (offline: a missing model is one clear line).

        ``layer`` picks the hidden layer read (as ``hidden_states[layer]``: -1 the last, 0 the input
        embeddings), or several averaged (``2,3,4``, ``-4:``; Bommasani et al. 2020 find early-middle
        layers best for static vectors); causal LMs' last layer is tuned to the next token, earlier
        ones hold more of the word (Ethayarajh 2019), so ``auto`` reads a default per family
        (:data:`~ctx2static.pipeline.models.LAYER_DEFAULTS`). ``precision``: ``auto`` is bfloat16 autocast on
        GPUs (float16 where bf16 is missing) and float32 on CPUs; ``bfloat16`` on a CPU with fast
        bf16 products (:func:`fast_bf16`: AMX, AMD Zen 4) runs the forward faster, its vectors close
        to float32's (measured: Results page, extract_bf16 and precision); on other CPUs it is slower than
        float32. ``int8`` (CPUs) runs the Linear layers as int8 dynamic quantization
        (:mod:`ctx2static.pipeline.int8`). ``backend`` onnx runs the forward on ONNX Runtime
        (:mod:`ctx2static.pipeline.onnx`), float32 or int8.
        """
        config = config or TeacherConfig()
        source = resolve(name)
        model_config, tok = _config_and_tokenizer(name, source)
        # what the options and the config decide is checked before the weights load: the family of
        # the architecture (not of the weights found) picks the default layers, so a study resolves
        # them from the config alone (models.teacher_layer)
        n_hidden = n_hidden_states(model_config)
        spec = resolve_layer(config.layer, detect_kind(model_config), n_hidden)
        layers = parse_layers(spec, n_hidden) if n_hidden else ()
        dev = _device(config.device)
        precision = _precision(config.precision, dev)
        _require_engine(config.backend, precision)
        model, kind = _model(name, source, model_config)
        try:
            model = model.eval().to(dev)
        except (RuntimeError, AssertionError) as exc:
            msg = str(exc).splitlines()[0]
            raise OptionError(
                f"{spell('device', config.device)}: not usable here ({msg}); try {spell('device', 'cpu')}",
                "device",
            ) from None
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token or tok.unk_token
        impl = model.config._attn_implementation
        onnx = None
        if config.backend is Backend.ONNX:
            from ctx2static.pipeline.onnx import OnnxForward

            onnx = OnnxForward.load(model, source, precision, int(tok.pad_token_id), config.threads)
        elif precision is Precision.INT8:
            from ctx2static.pipeline.int8 import quantize_linears

            model = quantize_linears(model, source)
        max_len, bos = _max_length(model_config, tok), _bos(tok, kind)
        return cls(
            name,
            source,
            model,
            tok,
            kind,
            dev,
            max_len,
            bos,
            impl,
            layers,
            n_hidden,
            precision,
            layer_spec=spec,
            onnx=onnx,
        )

    def _set_attention(self, weights: bool) -> None:
        """Eager attention (the only one that returns weights) when asked for them, else the model's own."""
        impl = "eager" if weights else self.attn_impl
        if self.model.config._attn_implementation != impl:
            self.model.set_attn_implementation(impl)

    def restrict_substitutes(self, token_ids: np.ndarray | None) -> None:
        """Draw top-k substitutes from these teacher tokens only (None: the whole vocabulary)."""
        self.substitutes = token_ids
        self.__dict__.pop("scorer", None)

    @cached_property
    def scorer(self) -> Scorer:
        """The substitutes' decoder: the LM head's output layer (encoders without one: input embeddings)."""
        ids = None if self.substitutes is None else torch.from_numpy(self.substitutes).long().to(self.device)
        if self.kind is TeacherKind.ENCODER:
            return Scorer.from_weights(self.model.get_input_embeddings().weight, token_ids=ids)
        head = self.model.get_output_embeddings()
        return Scorer.from_weights(head.weight, head.bias, token_ids=ids)

    @property
    def layer_name(self) -> str | int | list[int]:
        """The layers read, as the manifest records them: "last", one index, or the averaged list."""
        if not self.layers or self.layers == (self.n_hidden - 1,):
            return "last"
        return self.layers[0] if len(self.layers) == 1 else list(self.layers)

    @property
    def decoder(self) -> str:
        """Where the top-k substitutes come from (recorded in the manifest)."""
        return {
            TeacherKind.MLM: "mlm-head",
            TeacherKind.CAUSAL: "lm-head, logits at position t-1",
            TeacherKind.ENCODER: "tied input embeddings (no MLM head)",
        }[self.kind]

    def fingerprint(self) -> str:
        """The hub revision when known, else a sha256 over the local weight files."""
        rev = getattr(self.model.config, "_commit_hash", None)
        if rev:
            return str(rev)
        h = hashlib.sha256()
        for f in sorted(Path(self.source).glob("*")):
            if f.suffix in (".safetensors", ".bin", ".json") and f.is_file():
                h.update(f.name.encode())
                with open(f, "rb") as fh:
                    for block in iter(partial(fh.read, 1 << 20), b""):
                        h.update(block)
        return h.hexdigest()[:16]

    @cached_property
    def head(self) -> SentenceHead:
        """What the teacher's folder puts after the transformer (a hub id or no modules.json: the mean)."""
        folder = Path(self.source)
        return SentenceHead.read(folder) if folder.is_dir() else SentenceHead()

    @cached_property
    def encoder(self) -> Encoder:
        """The tokenizer as extract runs it; the processes that feed the forward hold copies of it."""
        return Encoder(self.tokenizer, self.bos_id)

    def encode(
        self, sentences: Sequence[Sequence[str]], max_length: int | None = None, prompt: Sequence[str] = ()
    ) -> list[Encoding]:
        """Tokenise and align word lists for this teacher (see :meth:`Encoder.encode`)."""
        return self.encoder.encode(sentences, min(max_length or self.max_length, self.max_length), prompt)

    def autocast(self) -> contextlib.AbstractContextManager:
        """The context the forward runs in: autocast to ``precision`` unless that is float32."""
        if self.precision in (Precision.FLOAT32, Precision.INT8):  # int8 Linear layers return float32
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=getattr(torch, self.precision.value))

    def forward(self, batch: list[Encoding], request: Request) -> list[TeacherOutput]:
        """One padded forward pass over a batch; every reduction runs on the device."""
        padded = self._padded(host_batch(batch, np.arange(len(batch)), int(self.tokenizer.pad_token_id)))
        out, head_in = self._run(padded, request)
        with torch.inference_mode():
            res, reduced = self._reduce(out, head_in, padded, request)
            arrays = {k: v.cpu().numpy() for k, v in res.items()}
            reduced_arrays = {k: v.cpu().numpy() for k, v in reduced.items()}
        return TeacherOutput.split(arrays, reduced_arrays, batch)

    def forward_wanted(
        self, batch: HostBatch, request: Request, add_vectors: Callable[[torch.Tensor], None] | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """A host-padded batch's forward: each input's all-token mean [n, d], and its wanted groups' rows.

        The request's vectors (``"vectors"``) and reductions come back for the wanted groups only,
        in row-major order [k, ...]: they are picked on the device, so only they cross to the host
        and no per-input object is made (the extract's shards; :meth:`forward` serves the rest).
        ``add_vectors`` takes the wanted vectors on the device instead (they do not come back):
        a shard's per-word sums made there (:class:`~ctx2static.pipeline.word_sums.DeviceSums`).
        """
        return self.launch_wanted(batch, request, add_vectors).get()

    def launch_wanted(
        self, batch: HostBatch, request: Request, add_vectors: Callable[[torch.Tensor], None] | None = None
    ) -> Landing:
        """:meth:`forward_wanted` without waiting for the results (:meth:`Landing.get` does).

        On a GPU they are still being computed and copied when this returns, so the host can launch
        the next batch and then finish this one while the device runs it.
        """
        padded = self._padded(batch)
        out, head_in = self._run(padded, request)
        with torch.inference_mode():
            res, reduced = self._reduce(out, head_in, padded, request)
            picked = {
                k: v.flatten(0, 1).index_select(0, padded.wanted_at)
                for k, v in {**res, **reduced}.items()
                if k not in PER_INPUT
            }
            picked.update((k, res[k]) for k in PER_INPUT[1:] if k in res)
            if add_vectors is not None:
                add_vectors(picked.pop("vectors"))
            return Landing.of(res["mean"], picked)

    def _padded(self, h: HostBatch) -> Padded:
        """A host-padded batch on the device, with the pooling matrix and the targets built there."""
        dev = self.device
        grp_d, first_d, wanted_d = to_device(h.grp, dev), to_device(h.first, dev), to_device(h.wanted, dev)
        onehot = (grp_d.unsqueeze(1) == torch.arange(h.first.shape[1], device=dev).view(1, -1, 1)).float()
        target = first_d - 1 if self.kind is TeacherKind.CAUSAL else first_d
        mask = np.arange(h.ids.shape[1]) < h.lens[:, None]
        return Padded(
            ids=to_device(h.ids, dev),
            mask=to_device(mask.astype(np.int64), dev),
            pool=onehot / onehot.sum(-1, keepdim=True).clamp(min=1),
            first=first_d,
            wanted=wanted_d,
            wanted_at=to_device(np.flatnonzero(h.wanted.reshape(-1)), dev),
            has_target=(target >= 0) & wanted_d,
            gather=target.clamp(min=0),
        )

    def _run(self, p: Padded, request: Request) -> tuple[Any, list[torch.Tensor]]:
        """The model's outputs, and the LM head's inputs at the target positions (an LM's decoder input)."""
        if self.onnx is not None:  # hidden states only: ShardMaker refuses the signals that need more
            layers = None if request.hidden_states else self._picked(request)
            if layers and request.embedding:
                layers = (*layers, len(self.onnx.names) - 1)
            return self.onnx.run(p.ids, p.mask, layers), []
        head_in: list[torch.Tensor] = []
        head_hook = None
        # without a reduction that decodes, the model runs without its LM head (an MLM head's
        # transform is a dense layer and a norm over every token, a seventh of a 1-layer teacher)
        model = self.model.base_model if self.kind is not TeacherKind.ENCODER else self.model
        if self.kind is not TeacherKind.ENCODER and request.decoder_input:
            # the LM head gets no input: its logits [tokens, vocabulary] would be 4 GB a batch for
            # Gemma's 262k pieces; a reduction takes the head's input at the target positions instead
            rows = torch.arange(len(p.ids), device=self.device).unsqueeze(1)

            def pre_hook(_mod: Any, args: tuple) -> tuple:
                x = args[0]
                head_in.append(x[rows, p.gather][p.has_target])
                return (x[:, :0],)

            head_hook = self.model.get_output_embeddings().register_forward_pre_hook(pre_hook)
            model = self.model
        self._set_attention(request.attentions)
        try:
            with torch.inference_mode(), self.autocast():
                out = model(
                    input_ids=p.ids,
                    attention_mask=p.mask,
                    output_hidden_states=True,
                    output_attentions=request.attentions,
                )
        finally:
            if head_hook is not None:
                head_hook.remove()
        return out, head_in

    def _picked(self, request: Request) -> tuple[int, ...]:
        """The hidden states a request's vectors and means average (empty: the last)."""
        return request.layers or self.layers

    def _reduce(
        self, out: Any, head_in: list[torch.Tensor], p: Padded, request: Request
    ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """The chosen layers' (averaged) means named as the output's fields, and the request's reductions."""
        picked = self._picked(request) or (len(out.hidden_states) - 1,)
        hid = out.hidden_states[picked[0]].float()
        for i in picked[1:]:
            hid = hid + out.hidden_states[i].float()
        if len(picked) > 1:
            hid = hid / len(picked)
        m = p.mask.unsqueeze(-1).float()
        res: dict[str, torch.Tensor] = {"mean": (hid * m).sum(1) / m.sum(1)}
        if request.embedding:  # sentence-transformers' mean pooling: every token the mask keeps
            res["embedding"] = (out.hidden_states[-1].float() * m).sum(1) / m.sum(1)
        if request.vectors:
            res["vectors"] = torch.bmm(p.pool, hid)
        if request.hidden_states:  # pooling is linear: a layer average's vectors average these
            res["hidden"] = torch.stack([torch.bmm(p.pool, h.float()) for h in out.hidden_states], 2)
            sums = torch.stack([(h.float() * m).sum(1) for h in out.hidden_states], 1)
            res["hidden_mean"] = sums / m.sum(1, keepdim=True)
        reduced: dict[str, torch.Tensor] = {}
        if request.reductions:
            x = None
            if request.decoder_input:  # encoders decode with tied input embeddings: their states go in
                rows = torch.arange(len(p.ids), device=self.device).unsqueeze(1)
                encoder = self.kind is TeacherKind.ENCODER
                x = hid[rows, p.gather][p.has_target] if encoder else head_in[0].float()
            forward = Forward(self, p, hid, out.attentions, x)
            for reduce, value in request.reductions:
                reduced.update(reduce(forward, value))
        return res, reduced


def to_device(a: np.ndarray, device: torch.device) -> torch.Tensor:
    """``a`` on ``device``; on a GPU through pinned memory, so the copy does not wait on the host."""
    t = torch.from_numpy(a)
    if device.type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[int]:
    """Run the block with ``threads`` torch CPU threads (0 = torch's current setting); yields the count."""
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def _config_and_tokenizer(name: str, source: str) -> tuple[Any, Any]:
    """The model's config and fast tokenizer, from local files only (a missing model: one clear line)."""
    from transformers import AutoTokenizer

    model_config = read_config(name, source)
    with loading(name, source, "tokenizer"):
        tok = AutoTokenizer.from_pretrained(source, local_files_only=True, trust_remote_code=False)
    if not getattr(tok, "is_fast", False):
        raise InputError(
            source, f"{source}: the teacher needs a fast tokenizer (tokenizer.json) for word offsets"
        )
    return model_config, tok


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Loading without transformers' per-weight progress bar and load report.

    The report lists a head the weights lack as "newly initialized" weights, which reads as a fault:
    :func:`_model` decides about such a head itself (it reads the bare encoder). Errors still show.
    """
    from transformers.utils import logging as hf_logging

    verbosity, bar = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bar:
            hf_logging.enable_progress_bar()


def _model(name: str, source: str, model_config: Any) -> tuple[Any, TeacherKind]:
    """The model with the head its config names, and its kind (an encoder when the head's weights lack).

    Weights that lack part of the encoder itself are refused: transformers would fill it with
    random values, and the teacher would be noise.
    """
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM

    kind = detect_kind(model_config)
    auto = {TeacherKind.MLM: AutoModelForMaskedLM, TeacherKind.CAUSAL: AutoModelForCausalLM}.get(
        kind, AutoModel
    )
    with _quiet_transformers(), loading(name, source, "weights"):
        model, report = auto.from_pretrained(
            source,
            local_files_only=True,
            output_loading_info=True,
            trust_remote_code=False,
            weights_only=True,
        )
    prefix = f"{model.base_model_prefix}."
    missing = sorted(report["missing_keys"])
    # the pooler makes only the pooled output, which no signal reads (some checkpoints leave it out)
    own = [k for k in missing if (k.startswith(prefix) or kind is TeacherKind.ENCODER) and "pooler." not in k]
    if own:
        raise InputError(
            source,
            f"{source}: not a loadable model folder: its weights lack {len(own)} of the model's tensors "
            f"({own[0]}, ...), which would be random; re-download or re-save the model folder",
        )
    if kind is not TeacherKind.ENCODER and missing:
        # a config naming a head its weights lack (all-mpnet-base-v2 says MPNetForMaskedLM): the head
        # would be random, so the teacher is the bare encoder with tied input embeddings
        return model.base_model, TeacherKind.ENCODER
    return model, kind


def _bos(tok: Any, kind: TeacherKind) -> int | None:
    """The token a causal teacher's inputs start with, when its tokenizer does not add it itself."""
    bos = tok.bos_token_id if kind is TeacherKind.CAUSAL and tok.bos_token_id is not None else None
    probe = tok("a", add_special_tokens=True)["input_ids"]
    return None if bos is not None and probe and probe[0] == bos else bos


def _max_length(model_config: Any, tok: Any) -> int:
    """Tokens per input the model takes: its positions (less the padding offset of RoBERTa's kin)."""
    max_pos = getattr(model_config, "max_position_embeddings", 0) or getattr(model_config, "n_positions", 512)
    if model_config.model_type in ("roberta", "xlm-roberta", "camembert", "mpnet"):
        max_pos -= 2  # positions start after the padding index
    return int(min(max_pos, tok.model_max_length if tok.model_max_length < 1e6 else max_pos))


def _device(spec: str) -> torch.device:
    """``--device`` as torch reads it; a CUDA device that is not there: one line, before the weights load."""
    try:
        dev = torch.device(spec)
    except RuntimeError as exc:
        msg = str(exc).splitlines()[0]
        raise OptionError(
            f"{spell('device', spec)}: not a torch device ({msg}); e.g. cpu, cuda, cuda:1", "device"
        ) from None
    found = torch.cuda.device_count() if dev.type == "cuda" else 0
    if dev.type == "cuda" and (dev.index or 0) >= found:
        raise OptionError(
            f"{spell('device', spec)}: not usable here ({found} CUDA devices); try {spell('device', 'cpu')}",
            "device",
        )
    return dev


def _require_engine(backend: Backend, precision: Precision) -> None:
    """ONNX Runtime for backend onnx, the quantized engine for int8: if missing, one line before a load."""
    if backend is Backend.ONNX:
        from ctx2static.pipeline.onnx import onnxruntime_module

        onnxruntime_module()
    elif precision is Precision.INT8:
        from ctx2static.pipeline.int8 import require_engine

        require_engine()


def _precision(precision: Precision, dev: torch.device) -> Precision:
    """``auto`` made concrete for the device: bfloat16 on GPUs that have it, else float16; float32 on CPUs.

    int8 on a GPU, and ONNX Runtime off the CPU or in another precision, are refused by the config.
    """
    if precision is Precision.AUTO:
        cuda = dev.type == "cuda"
        bf16 = cuda and torch.cuda.is_bf16_supported()
        return Precision.BFLOAT16 if bf16 else Precision.FLOAT16 if cuda else Precision.FLOAT32
    return precision
