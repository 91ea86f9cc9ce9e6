"""The teacher cache's on-disk contract: file names, format version and the one table of signals.

Layout of a cache folder::

    manifest.json              teacher, corpus, vocabulary, options, per-file sha256 checksums
    vocab.tsv                  the static vocabulary (word<TAB>count), ids are line numbers
    shard_00000.h5             dense arrays of up to ``shard_size`` sentences (the shard signals)
    shard_00000.attn.parquet   attention context words (variable length per occurrence), optional
    vocab.h5                   per-vocabulary-word tables: token_emb, word_emb, word_complete, and
                               occ_sum / occ_count (each word's contextual vectors summed over the corpus);
                               teacher_token_emb: the teacher's input embedding of every token (fp16)
    teacher_tokens.parquet     teacher token id -> token string -> static word id (for substitutes)
    teacher_tokenizer.json     the teacher's tokenizer (any string -> its subword token ids)
    pca.h5                     with --pca: mean, components (occ_vec = (v - mean) @ components.T)
    word_sums.NNNNN.h5         while extracting: the per-word sums over the first NNNNN shards

An *occurrence* is a word of a sentence that is in the static vocabulary and was not cut by the
teacher's maximum length; every per-occurrence array has one row per occurrence, in corpus order.

A manifest may name only these files (:func:`shard_files`, :data:`VOCAB_FILES`, :data:`AUX_FILES`,
:func:`running_sums_name`), bare and each in its own place: it is checked when read, so no name in
it can make a reader or the writer open or delete anything outside the folder.

Adding a signal touches three product files, this one (its row in :data:`SIGNALS`, the one table:
validation of every array read, the manifest's signal list, the "extract again with FLAG" messages
and ``ctx2static cache info`` follow from it), ``pipeline/config.py`` and ``pipeline/shard.py``; the
checklist is the contributing guide's ("Add a cache signal"), walked by ``tests/test_contributing.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ctx2static.errors import spell

MANIFEST = "manifest.json"
VOCAB_TSV = "vocab.tsv"
VOCAB_H5 = "vocab.h5"
TEACHER_TOKENS = "teacher_tokens.parquet"
TEACHER_TOKENIZER = "teacher_tokenizer.json"
PCA_H5 = "pca.h5"
FORMAT_VERSION = 3  # docs/design/cache-format.md says what each version changed
ATTN_COLUMNS = ("occ", "ctx", "offset", "weight")


class Rows(str, Enum):
    """What one row of a signal's array stands for: validation checks its row count against it."""

    SENTENCE = "sentence"
    BOUNDARY = "sentence boundary"  # one more than the sentences: each start, then the end
    WORD = "word"
    OCCURRENCE = "occurrence"
    VOCAB = "vocabulary word"
    PAIR = "attention pair"  # as many as the occurrences' context words (checked by their columns)


class Ids(Enum):
    """Which table a signal's values index, and the lowest value allowed (-1: outside the vocabulary).

    The students' Numba kernels index with these values unchecked, so validation bounds them first.
    """

    WORD = ("word ids", -1)  # rows of the static vocabulary
    TOKEN = ("teacher token ids", 0)  # rows of the teacher's token table

    @property
    def noun(self) -> str:
        """What the values are, as a message names them."""
        return self.value[0]

    @property
    def lowest(self) -> int:
        """The smallest value allowed."""
        return self.value[1]


@dataclass(frozen=True)
class Signal:
    """One thing a cache can hold: where it is stored, which extract option writes it, what it is.

    ``rows``, ``ndim``, ``kinds`` (numpy dtype kinds) and ``ids`` are its shape contract:
    :mod:`ctx2static.cache.validate` checks every array read against them, so a new signal's
    arrays are checked before any kernel indexes with them without a line in the validator.
    """

    name: str
    option: str | None  # the extract option that turns it on (None: always written)
    description: str
    rows: Rows
    ndim: int = 2
    kinds: str = "f"  # "f" float, "iu" integer, "b" bool
    ids: Ids | None = None  # the table its values index, bounded by validation
    stored: str = "shard"  # "shard" (an HDF5 array per shard), "attention" (Parquet per shard), "vocab"
    size: str = ""  # the option's value, as a user writes it, when it is a size rather than a switch

    def setting(self) -> str:
        """The extract option that writes it, as the user writes it (:func:`~ctx2static.errors.spell`).

        ``--topk K``, ``--vectors`` on the command line; ``topk = K``, ``vectors = true`` in a
        study; ``topk=K``, ``vectors=True`` in the API.
        """
        if self.option is None:
            return "(always written)"
        return spell(self.option, self.size or True)


_SENT, _OCC, _VOCAB = Rows.SENTENCE, Rows.OCCURRENCE, Rows.VOCAB
SIGNALS: dict[str, Signal] = {
    s.name: s
    for s in [
        Signal("sent_para", None, "paragraph id per sentence", _SENT, 1, "iu"),
        Signal("sent_offsets", None, "sentence start offsets into word_ids (n+1)", Rows.BOUNDARY, 1, "iu"),
        Signal("word_ids", None, "static word id per word (-1: out of vocabulary)", Rows.WORD, 1, "iu",
               Ids.WORD),
        Signal("word_aligned", None, "False where the teacher's max length cut the word", Rows.WORD, 1, "b"),
        Signal("sent_ctx", None, "mean of the teacher layer over all tokens of the sentence (X2Static Eq. 3)",
               _SENT),
        Signal("sent_emb", "sentence_embedding",
               "the teacher's own embedding of the sentence (its head on the last layer's all-token mean)",
               _SENT),
        Signal("para_ctx", "paragraph",
               "per-sentence mean when the teacher saw the paragraph (X2Static Eq. 4; sent_ctx if cut)",
               _SENT),
        Signal("occ_vec", "vectors", "subword-pooled vector per occurrence (fp16; PCA-reduced with --pca)",
               _OCC),
        Signal("topk_ids", "topk", "LM top-k substitute teacher token ids per occurrence (SemGloVe md)", _OCC,
               kinds="iu", ids=Ids.TOKEN, size="K"),
        Signal("topk_scores", "topk", "raw logits of the substitutes", _OCC, size="K"),
        Signal("attention", "attention", "attention context words, raw summed weights (SemGloVe sd)",
               Rows.PAIR, 1, ids=Ids.WORD, stored="attention", size="S"),
        Signal("token_emb", None, "input-embedding mean over each word's subwords ('token')", _VOCAB,
               stored="vocab"),
        Signal("word_emb", None, "each word inside the word template, its subwords' mean ('word')", _VOCAB,
               stored="vocab"),
        Signal("embed_emb", "embed_template",
               "each word inside the embed template, the teacher's own sentence embedding ('embed')", _VOCAB,
               stored="vocab", size="TEMPLATE"),
        Signal("occ_sum", None, "each word's subword-pooled contextual vectors summed (ASE)", _VOCAB,
               stored="vocab"),
        Signal("occ_count", None, "how many occurrences each occ_sum row holds", _VOCAB, 1, "iu",
               stored="vocab"),
    ]
}  # fmt: skip

INDEX_ARRAYS = ("sent_para", "sent_offsets", "word_ids", "word_aligned")
"""The arrays every shard read brings along (they locate sentences, words and occurrences)."""


def shard_name(i: int) -> str:
    """Stem of shard ``i``."""
    return f"shard_{i:05d}"


def shard_files(i: int) -> tuple[str, str]:
    """The files shard ``i`` may hold: its arrays, and its attention rows (``--attention``)."""
    stem = shard_name(i)
    return f"{stem}.h5", f"{stem}.attn.parquet"


VOCAB_FILES = (VOCAB_H5, TEACHER_TOKENS, TEACHER_TOKENIZER)
"""The files extract writes after the last shard (the manifest's ``vocab_files``)."""
AUX_FILES = (PCA_H5,)
"""The files later shards depend on (the manifest's ``aux_files``)."""


def running_sums_name(n_shards: int | None) -> str:
    """The running per-word sums file after ``n_shards`` committed shards (None: a glob of them all)."""
    return "word_sums.*.h5" if n_shards is None else f"word_sums.{n_shards:05d}.h5"


def shard_signals(options: Mapping[str, Any]) -> list[str]:
    """Names of the per-shard signals an extract with these options writes, in table order."""
    if options.get("tables_only"):
        return []
    return [
        s.name
        for s in SIGNALS.values()
        if s.stored != "vocab" and (s.option is None or bool(options.get(s.option)))
    ]


def missing_signals(needed: Iterable[str], available: Iterable[str]) -> list[str]:
    """The ``needed`` signals not in ``available``, in the order needed."""
    have = set(available)
    return [s for s in needed if s not in have and SIGNALS[s].stored != "vocab"]
