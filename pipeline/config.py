"""The teacher stage's options: which model runs how (TeacherConfig) and what it caches (ExtractConfig).

Torch-free, so the CLI and studies read the options without loading a model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, fields
from enum import Enum

from ctx2static.errors import OptionError, spell
from ctx2static.options import Options, Rule, at_least, opt, positive, text_rule
from ctx2static.threads import threads_rule


class Precision(str, Enum):
    """The dtype the teacher's forward computes in (autocast unless float32)."""

    AUTO = "auto"  # bfloat16 on a GPU (float16 where bf16 is missing), float32 on a CPU
    FLOAT32 = "float32"
    BFLOAT16 = "bfloat16"
    FLOAT16 = "float16"
    INT8 = "int8"  # CPU: int8 dynamic quantization of the Linear layers (pipeline/int8.py)


class Backend(str, Enum):
    """Which engine computes the teacher's forward (pipeline/onnx.py says why it is not a precision)."""

    TORCH = "torch"
    ONNX = "onnx"  # ONNX Runtime on the CPU, float32 or int8 ('ctx2static[onnx]')


@dataclass(frozen=True)
class TeacherConfig(Options):
    """Where and how the teacher runs."""

    device: str = opt("cpu", "torch device, e.g. cpu, cuda, cuda:1.")
    threads: int = opt(0, "CPU threads for torch (0 = torch's default on a CPU, 1 beside a GPU).")
    layer: str = opt(
        "auto",
        "Hidden layers read and averaged: auto = the default of the teacher's family (encoders 1:, "
        "causal LMs the first half of their layers; the cache records the layers it resolves to), "
        "1: = every layer but the input embeddings (chosen on similarity and analogy together with MiniLM: "
        "measured: Results page, layers_by_family), -1 = the last, 0 = the "
        "embeddings, 2,3,4 or a slice such as -4: (Bommasani et al. 2020).",
    )
    precision: Precision = opt(
        Precision.AUTO,
        "Forward dtype: auto = bfloat16 on GPU, float32 on CPU; bfloat16 is faster on CPUs with "
        "fast bf16 products (AMX, AMD Zen 4); int8 (CPU only) quantizes the Linear layers' weights and "
        "inputs (embeddings, norms, attention and the LM head stay float32).",
    )
    backend: Backend = opt(
        Backend.TORCH,
        "What computes the forward: torch, or onnx = ONNX Runtime on the CPU (float32 or int8; the graph "
        "is exported once into the user cache; no --topk or --attention; 'ctx2static[onnx]').",
    )

    def rules(self) -> Iterable[Rule]:
        """Threads this machine runs, a layer spec that parses, a precision, backend and device that agree.

        int8 and ONNX Runtime run on a CPU, ONNX Runtime in float32 or int8: a combination that does
        not is refused here, before a model is read. The layer spec's range needs the model's config.
        """
        cpu = self.device.partition(":")[0] == "cpu"
        onnx = self.backend is Backend.ONNX
        return [
            threads_rule(self.threads, "torch's default"),
            layer_rule("layer", self.layer),
            (
                "precision",
                cpu or self.precision is not Precision.INT8,
                f"auto, float32, bfloat16 or float16 on device {self.device}: int8 runs on a CPU",
            ),
            ("backend", cpu or not onnx, f"torch on device {self.device}: onnx runs on a CPU"),
            (
                "precision",
                not onnx or self.precision in (Precision.AUTO, Precision.FLOAT32, Precision.INT8),
                "auto, float32 or int8 with backend onnx",
            ),
        ]


_LAYERS = re.compile(r"-?\d+(,-?\d+)*|-?\d*:-?\d*")
AUTO_LAYER = "auto"
"""The layer spec that stands for the default of the teacher's family (``models.LAYER_DEFAULTS``)."""


def layer_rule(name: str, spec: str) -> Rule:
    """A layer spec option parses: ``auto``, an index, a list or a slice (its range needs the model)."""
    ok = spec == AUTO_LAYER or _LAYERS.fullmatch(spec.replace(" ", "")) is not None
    return (name, ok, "auto, an index, a list or a slice")


def parse_layers(spec: str, n_hidden: int, option: str = "layer") -> tuple[int, ...]:
    """The hidden-state indices (0..n_hidden-1) a layer spec names: ``-1``, ``2,3,4`` or ``-4:``.

    ``n_hidden`` is the number of hidden states (layers + the embeddings); negative indices count
    from the last, as in Python. A spec naming no layer, or one out of range, is a one-line error
    naming ``option``.
    """
    spec = spec.replace(" ", "")
    every = list(range(n_hidden))
    try:
        if ":" in spec:
            start, stop = (int(x) if x else None for x in spec.split(":"))
            picked = every[start:stop]
        else:
            picked = [every[int(x)] for x in spec.split(",")]
    except (ValueError, IndexError):
        picked = []
    if not picked:
        raise OptionError(
            f"{spell(option, spec)}: names no hidden state of {n_hidden} (-{n_hidden}..{n_hidden - 1})",
            option,
        )
    return tuple(sorted(set(picked)))


AUTO_TEMPLATE = "auto"
"""The word template that stands for the default of the teacher's family (``models.WORD_DEFAULTS``)."""
WORD_SLOT = "{w}"
"""Where the word goes in a word template."""


EMBED_OFF = "off"
"""The embed template that writes no embed table."""


def holds_word_once(template: str) -> bool:
    """Whether ``template`` holds the word's place once, between spaces (so the word keeps its subwords)."""
    return template.count(WORD_SLOT) == 1 and WORD_SLOT in template.split()


@dataclass(frozen=True)
class ExtractConfig(Options):
    """What to cache and how to batch (the per-occurrence signals are off unless asked for)."""

    vectors: bool = opt(False, "Per-occurrence word vectors (ASE, BERT+Skip-gram, Context-to-Vec).")
    pca: int = opt(0, "Reduce --vectors to D dims by PCA fitted on the first shard (0 = off).")
    paragraph: bool = opt(False, "X2Static paragraph context (Eq. 4).")
    paragraph_max_length: int = opt(500, "Teacher tokens per paragraph input (X2Static reference code).")
    float32_means: bool = opt(
        False, "Store sentence/paragraph means in float32 (default float16: half the bytes)."
    )
    topk: int = opt(0, "SemGloVe md: top-k LM substitutes per occurrence (0 = off).")
    attention: int = opt(
        0,
        "SemGloVe sd: top S context words by attention in +-S (0 = off; 10, GloVe's reach, beat GloVe "
        "where the paper's 5 tied it; measured: Results page, semglove_brown).",
    )
    shard_size: int = opt(
        8192, "Sentences per shard, length-sorted within one (its padding; measured: Results page, extract)."
    )
    shard_words: int = opt(
        1 << 16,
        "Words per shard at most, so a shard's memory is bounded whatever the sentences' lengths "
        "(MiniLM: about 8 kB a word while a shard is made; 0 = no bound).",
    )
    max_length: int = opt(512, "Teacher tokens per sentence (capped at the model's maximum).")
    token_budget: int = opt(4096, "Padded teacher tokens per batch.")
    max_sentences: int = opt(0, "Stop after this many sentences (0 = the whole corpus).")
    max_words: int = opt(
        0,
        "Stop after this many words of the corpus, the last sentence cut there (0 = no bound): a budget "
        "that holds whatever the sentences' lengths, as --max-sentences does not.",
    )
    word_template: str = opt(
        AUTO_TEMPLATE,
        "The text each vocabulary word is encoded in for the word table, {w} standing for the word "
        "(only the word's own subwords are pooled): auto = the default of the teacher's family "
        '(sentence-embedding encoders "meaning: {w}", which beat the word alone on held-out similarity '
        'pairs for MiniLM and nomic (measured: Results page, prompted_words); other families "{w}"; '
        "the cache records what auto resolves to).",
    )
    embed_template: str = opt(
        AUTO_TEMPLATE,
        "The text each vocabulary word is encoded in for the embed table, {w} standing for the word, "
        "of which the teacher's own sentence embedding is kept (its pooling, dense layers and "
        "normalisation, as sentence-transformers applies them): auto = the teacher's STS prompt where "
        'its folder names one (EmbeddingGemma), else "meaning: {w}", for encoders whose head pools by '
        "the mean (chosen on dev halves: Results page, embed_table); off = no embed table.",
    )
    sentence_embedding: bool = opt(
        False,
        "Each sentence's embedding as the teacher's own head makes it (the last layer's mean over all "
        "tokens, its dense layers and normalisation, as sentence-transformers encodes): the target of "
        "the sentence-kd student; a folder without a head: the mean, as sentence-transformers reads it.",
    )
    prompt: str = opt(
        "",
        "Text the teacher reads before every corpus sentence and paragraph, as sentence-transformers "
        "puts a prompt before a text; it belongs to no word, and the sentence embedding's mean includes "
        "it: the name of one of the teacher's prompts (EmbeddingGemma's document = 'title: none | text:') "
        "or the text itself; empty = none.",
    )
    tables_only: bool = opt(
        False,
        "Only the vocabulary and the per-word tables (the token, word and embed students' input): no pass "
        "over the sentences, so the run takes the time of counting the words and encoding each once; "
        "every other student needs the pass.",
    )
    word_layer: str = opt(
        AUTO_LAYER,
        "Hidden layers read and averaged for the word table, a spec as for --layer: auto = the default "
        "of the teacher's family: the cache's own --layer (the last layer scores a little higher on "
        "similarity and much lower on analogy; measured: Results page, word_table).",
    )

    def pass_options(self) -> list[str]:
        """The options set that act in the pass over the sentences (a signal it writes, its prompt)."""
        from ctx2static.cache.layout import (
            SIGNALS,
        )  # here: the cache package loads numba, which --help must not

        options = {s.option for s in SIGNALS.values() if s.option and s.stored != "vocab"} | {"pca", "prompt"}
        return [f.name for f in fields(self) if f.name in options and getattr(self, f.name)]

    def rules(self) -> Iterable[Rule]:
        """Sizes are positive, the optional signals 0 (off) or more, the word template holds the word."""
        return [
            *at_least(self, 1, "shard_size"),
            ("shard_words", self.shard_words >= 0, "0 (no bound) or more"),
            *at_least(self, 2, "max_length", "paragraph_max_length"),
            *at_least(self, 1, "token_budget"),
            ("pca", self.pca >= 0, "0 (off) or more"),
            (
                "pca",
                self.pca == 0 or self.vectors,
                f"0 without {spell('vectors')}: it reduces the vectors it keeps",
            ),
            ("topk", self.topk >= 0, "0 (off) or more"),
            ("attention", self.attention >= 0, "0 (off) or more"),
            ("max_sentences", self.max_sentences >= 0, "0 (all) or more"),
            ("max_words", self.max_words >= 0, "0 (all) or more"),
            (
                "word_template",
                self.word_template == AUTO_TEMPLATE or holds_word_once(self.word_template),
                f"auto or text holding {WORD_SLOT} once, as a word of its own, e.g. 'meaning: {WORD_SLOT}'",
            ),
            (
                "word_template",  # each word takes a token at least, and the teacher adds two
                self.word_template == AUTO_TEMPLATE or len(self.word_template.split()) + 2 <= self.max_length,
                f"text of at most {self.max_length - 2} words ({WORD_SLOT} included) under --max-length "
                f"{self.max_length}, or the teacher never reads the word whole",
            ),
            (
                "embed_template",
                self.embed_template in (AUTO_TEMPLATE, EMBED_OFF) or holds_word_once(self.embed_template),
                f"auto, off or text holding {WORD_SLOT} once, as a word of its own",
            ),
            (
                "tables_only",
                not self.tables_only or not self.pass_options(),
                f"off with {', '.join(map(spell, self.pass_options()))}: "
                "what they ask for is read in the pass over the sentences that it skips",
            ),
            layer_rule("word_layer", self.word_layer),
            *(text_rule(name, getattr(self, name)) for name in ("word_template", "embed_template", "prompt")),
            (
                "prompt",  # each word a token at least: a bound before the teacher loads (then its tokens)
                len(self.prompt.split()) + 3 < self.max_length,
                f"text of fewer than {self.max_length - 3} words under "
                f"{spell('max_length', self.max_length)}, or no word of the corpus is read after it",
            ),
        ]


class Engine(str, Enum):
    """Where the teacher pass runs."""

    LOCAL = "local"  # this process
    RAY = "ray"  # Ray workers, one teacher each (pip install 'ctx2static[scale]')


@dataclass(frozen=True)
class EngineConfig(Options):
    """Which engine runs the teacher pass; the cache does not depend on it (same identity, same arrays)."""

    engine: Engine = opt(
        Engine.LOCAL, "local: this process; ray: shards spread over Ray workers ('ctx2static[scale]')."
    )
    address: str = opt(
        "", "Ray cluster: '' starts one on this machine, auto joins the running one, ray://HOST:PORT."
    )
    workers: int = opt(0, "Ray workers, one teacher each (0 = as many as the cluster's CPUs/GPUs hold).")
    feeders: int = opt(
        0,
        "Processes that tokenize and align the next shards while the teacher runs (local engine; "
        "0 = one per CPU core, at most 8; none on one core).",
    )
    gpus_per_worker: float = opt(0.0, "GPUs per Ray worker (with --device cuda; 0.5: two share one).")
    connect_timeout: float = opt(
        60.0, "Seconds to wait for the Ray cluster at --address to answer (Ray itself retries ~13 min)."
    )

    def rules(self) -> Iterable[Rule]:
        """Counts are counts, the wait positive; cluster settings need the Ray engine."""
        ray = self.engine is Engine.RAY
        return [
            ("workers", self.workers >= 0, "0 (fill the cluster) or more"),
            ("feeders", 0 <= self.feeders <= 64, "0 (one per core) to 64"),
            ("gpus_per_worker", self.gpus_per_worker >= 0, "0 (CPU workers) or more"),
            *positive(self, "connect_timeout"),
            ("address", ray or not self.address, "empty unless --engine ray"),
            ("workers", ray or not self.workers, "0 unless --engine ray"),
            ("gpus_per_worker", ray or not self.gpus_per_worker, "0 unless --engine ray"),
            ("feeders", not ray or not self.feeders, "0 with --engine ray (each worker feeds itself)"),
        ]
