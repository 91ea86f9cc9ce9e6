"""The keyword options of the Python API (:mod:`ctx2static.api`), typed for editors and type checkers.

Each option is a field of a config dataclass, which holds its default, its help and its checks;
these ``TypedDict`` s only name the fields and their types, so that ``extract(..., max_sentence=10)``
or ``epochs="2"`` is flagged before it runs (a test keeps their keys equal to the configs' fields).
An enum option takes the enum or its value (``engine="ray"``). A student's options are those of
every student together: which of them a given student takes is checked when it is called, with a
one-line error naming its options.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from ctx2static.export.quantize import Quantize
    from ctx2static.pipeline.config import Backend, Engine, Precision
    from ctx2static.retrofit.config import Method
    from ctx2static.students.cache_input import Init
    from ctx2static.students.postprocess import Standardize
    from ctx2static.students.semglove import Cooc, PairWeighting
    from ctx2static.students.teacher_tables import Table
    from ctx2static.students.x2static import Context
    from ctx2static.text.sources import CorpusFormat
    from ctx2static.text.split import Split
    from ctx2static.vectors import Weighting


class CorpusOptions(TypedDict, total=False):
    """:class:`~ctx2static.text.corpus.CorpusConfig`: how raw text becomes sentences of words."""

    lowercase: bool
    min_sentence_len: int
    max_sentence_len: int
    split: Split | str
    text_field: str
    corpus_format: CorpusFormat | str


class VocabOptions(TypedDict, total=False):
    """:class:`~ctx2static.text.vocab.VocabConfig`: which words get a vector."""

    min_count: int
    max_vocab: int | None


class ExtractOptions(CorpusOptions, VocabOptions, total=False):
    """:func:`~ctx2static.api.extract`'s: corpus and vocabulary, then the teacher, extract and engine configs.

    :class:`~ctx2static.pipeline.config.TeacherConfig`, :class:`~ctx2static.pipeline.config.ExtractConfig`
    and :class:`~ctx2static.pipeline.config.EngineConfig`, in that order.
    """

    device: str
    threads: int
    layer: str | int
    precision: Precision | str
    backend: Backend | str
    vectors: bool
    pca: int
    paragraph: bool
    paragraph_max_length: int
    float32_means: bool
    topk: int
    attention: int
    shard_size: int
    shard_words: int
    max_length: int
    token_budget: int
    max_sentences: int
    engine: Engine | str
    address: str
    workers: int
    gpus_per_worker: float
    connect_timeout: float


class CacheStudentOptions(TypedDict, total=False):
    """The options of the students trained from a cache, all together (but ``threads``: the teacher's too).

    Each student's ``Config`` (``ctx2static.students.<module>.Config``) says which are its own.
    """

    dim: int
    window: int
    negative: int
    ns_exponent: float
    sample: float
    epochs: int
    seed: int
    abtt: int | None
    init: Init | str
    standardize: Standardize | str
    lr: float
    min_lr: float
    clip: float
    batch: int
    e1: float
    e2: float
    e3: float
    mix: float
    context: Context | str
    beta1: float
    beta2: float
    eps: float
    batch_sentences: int
    xmax: float
    alpha: float
    grad_clip: float
    checkpoint_every: int
    checkpoint: str | os.PathLike | None
    cooc: Cooc | str
    weighting: PairWeighting | str
    min_occurrences: int
    table: Table | str
    ridge: float
    iterations: int
    tolerance: float


class StudentOptions(CacheStudentOptions, total=False):
    """Every student's options (:class:`CacheStudentOptions`, ``threads`` and word2vec's own)."""

    threads: int
    min_alpha: float
    compute_loss: bool
    cbow_mean: bool


class FitOptions(CorpusOptions, VocabOptions, StudentOptions, total=False):
    """:func:`~ctx2static.api.fit`'s: the student's, and a text student's corpus and vocabulary."""


class DistillOptions(ExtractOptions, CacheStudentOptions, total=False):
    """:func:`~ctx2static.api.distill`'s: :func:`~ctx2static.api.extract`'s and the cache student's."""


class RetrofitOptions(TypedDict, total=False):
    """:class:`~ctx2static.retrofit.config.RetrofitConfig`'s fields."""

    method: Method | str
    iterations: int
    alpha: float
    a: float
    b: float
    nu: float
    sigma: float
    epochs: int
    batch_size: int
    delta_att: float
    delta_rep: float
    l2_reg: float
    learning_rate: float
    mix: float
    expand_antonyms: bool
    seed: int
    propagate: bool
    ridge: float
    normalize: bool


class ExportOptions(TypedDict, total=False):
    """:class:`~ctx2static.export.config.ExportConfig`'s fields: the pooling, the rows' type, their dims."""

    weighting: Weighting | str
    sif_a: float
    normalize: bool
    quantize: Quantize | str
    dims: int
