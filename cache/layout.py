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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MANIFEST = "manifest.json"
VOCAB_TSV = "vocab.tsv"
VOCAB_H5 = "vocab.h5"
TEACHER_TOKENS = "teacher_tokens.parquet"
TEACHER_TOKENIZER = "teacher_tokenizer.json"
PCA_H5 = "pca.h5"
FORMAT_VERSION = 2  # 2: per-word sums in vocab.h5, fp16 sentence/paragraph means
ATTN_COLUMNS = ("occ", "ctx", "offset", "weight")


@dataclass(frozen=True)
class Signal:
    """One thing a cache can hold: where it is stored, which extract option writes it, what it is."""

    name: str
    option: str | None  # the extract option that turns it on (None: always written)
    description: str
    stored: str = "shard"  # "shard" (an HDF5 array per shard), "attention" (Parquet per shard), "vocab"

    @property
    def flag(self) -> str:
        """The ``extract`` flag that writes it."""
        if self.option is None:
            return "(always written)"
        return {"topk": "--topk K", "attention": "--attention S"}.get(self.option, f"--{self.option}")


SIGNALS: dict[str, Signal] = {
    s.name: s
    for s in [
        Signal("sent_para", None, "paragraph id per sentence"),
        Signal("sent_offsets", None, "sentence start offsets into word_ids (n+1)"),
        Signal("word_ids", None, "static word id per word (-1: out of vocabulary)"),
        Signal("word_aligned", None, "False where the teacher's max length cut the word"),
        Signal(
            "sent_ctx", None, "mean of the teacher layer over all tokens of the sentence (X2Static Eq. 3)"
        ),
        Signal(
            "para_ctx",
            "paragraph",
            "per-sentence mean when the teacher saw the paragraph (X2Static Eq. 4; sent_ctx if cut)",
        ),
        Signal("occ_vec", "vectors", "subword-pooled vector per occurrence (fp16; PCA-reduced with --pca)"),
        Signal("topk_ids", "topk", "LM top-k substitute teacher token ids per occurrence (SemGloVe md)"),
        Signal("topk_scores", "topk", "raw logits of the substitutes"),
        Signal(
            "attention",
            "attention",
            "attention context words, raw summed weights (SemGloVe sd)",
            stored="attention",
        ),
        Signal("token_emb", None, "input-embedding mean over each word's subwords ('token')", stored="vocab"),
        Signal("word_emb", None, "each word encoded alone, subword mean ('word')", stored="vocab"),
        Signal("occ_sum", None, "each word's subword-pooled contextual vectors summed (ASE)", stored="vocab"),
        Signal("occ_count", None, "how many occurrences each occ_sum row holds", stored="vocab"),
    ]
}

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
    return [
        s.name
        for s in SIGNALS.values()
        if s.stored != "vocab" and (s.option is None or bool(options.get(s.option)))
    ]


def missing_signals(needed: Iterable[str], available: Iterable[str]) -> list[str]:
    """The ``needed`` signals not in ``available``, in the order needed."""
    have = set(available)
    return [s for s in needed if s not in have and SIGNALS[s].stored != "vocab"]
