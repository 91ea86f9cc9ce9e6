"""Word <-> subword alignment for any fast tokenizer (WordPiece ##, byte-level BPE Ġ, SentencePiece ▁).

The static corpus is already split into words. The teacher sees the words joined by single spaces;
each subword token is assigned to the word holding the last character of its offset span, so the
rule is the same for all three tokenizer kinds and needs no knowledge of their continuation marks.
Words cut by the teacher's maximum length are flagged incomplete (reported, never misaligned).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np


@dataclass
class Encoding:
    """One teacher input: token ids and, per token, the group (word or sentence) it belongs to.

    ``tok_group`` is -1 for special tokens and for tokens outside every group; ``complete[g]`` is
    False when group ``g`` lost tokens to truncation (or got none), so its signals must not be used.
    """

    ids: np.ndarray  # int64 [T]
    tok_group: np.ndarray  # int32 [T]
    complete: np.ndarray  # bool [n_groups]
    wanted: np.ndarray | None = None  # bool [n_groups]: groups that need top-k substitutes (None: all)

    @property
    def n_groups(self) -> int:
        """Number of groups (words, or sentences for a paragraph input)."""
        return len(self.complete)

    def first_token(self) -> np.ndarray:
        """Position of each group's first token (-1 for groups without tokens)."""
        first = np.full(self.n_groups, -1, dtype=np.int64)
        pos = np.flatnonzero(self.tok_group >= 0)
        grp = self.tok_group[pos]
        # reversed assignment leaves the smallest position per group
        first[grp[::-1]] = pos[::-1]
        return first

    def after(self, n: int) -> Encoding:
        """The encoding with its first ``n`` groups (a prompt's words) in no group, the rest renumbered."""
        groups = np.where(self.tok_group >= n, self.tok_group - n, -1).astype(np.int32)
        return Encoding(self.ids, groups, self.complete[n:])

    def regroup(self, group_of: np.ndarray) -> Encoding:
        """Map groups through ``group_of`` (e.g. word -> sentence); a new group is complete iff all are."""
        n_new = int(group_of.max()) + 1 if len(group_of) else 0
        complete = np.ones(n_new, dtype=bool)
        np.logical_and.at(complete, group_of, self.complete)
        tok = np.where(self.tok_group >= 0, group_of[np.maximum(self.tok_group, 0)], -1).astype(np.int32)
        return Encoding(self.ids, tok, complete)


class Encoder:
    """A fast tokenizer's Rust core set up as extract calls it: words in, aligned encodings out.

    It runs what ``tokenizer(texts, truncation=True, max_length=...)`` runs in transformers (the
    same truncation, no padding, special tokens as the tokenizer treats them) without transformers'
    per-token Python conversion, which cost as much as the tokenization itself; and it pickles
    (the tokenizer as its JSON), so the processes that feed a teacher
    (:mod:`~ctx2static.pipeline.feed`) each hold one without loading transformers or the model.
    """

    def __init__(self, tokenizer: object, bos_id: int | None) -> None:
        from tokenizers import Tokenizer

        backend = tokenizer.backend_tokenizer  # type: ignore[attr-defined]
        self.rust = Tokenizer.from_str(backend.to_str())
        self.split_special = bool(getattr(tokenizer, "split_special_tokens", False))
        self._setup()
        self.side = str(getattr(tokenizer, "truncation_side", "right"))
        self.bos_id = bos_id

    def __getstate__(self) -> dict:
        return {**self.__dict__, "rust": self.rust.to_str()}

    def __setstate__(self, state: dict) -> None:
        from tokenizers import Tokenizer

        self.__dict__.update(state, rust=Tokenizer.from_str(state["rust"]))
        self._setup()

    def _setup(self) -> None:
        """No padding, truncation set per call, special tokens' text as the tokenizer reads it."""
        self.rust.no_padding()
        self.rust.no_truncation()
        self.rust.encode_special_tokens = self.split_special
        self.limit = 0

    def to_str(self) -> str:
        """The tokenizer as a cache stores it (JSON), untruncated: a reader sets its own truncation."""
        from tokenizers import Tokenizer

        plain = Tokenizer.from_str(self.rust.to_str())
        plain.no_truncation()
        return plain.to_str()

    def encode(
        self, sentences: Sequence[Sequence[str]], max_length: int, prompt: Sequence[str] = ()
    ) -> list[Encoding]:
        """Tokenise word lists to at most ``max_length`` tokens and align each subword token to its word.

        The BOS token is prepended when the teacher needs it (causal teachers whose tokenizer adds
        none itself), so the first word also has a preceding position to be predicted from. The
        ``prompt``'s words are read before each sentence (after the special tokens that open it, as
        sentence-transformers puts a prompt before the text) and belong to no group.
        """
        limit = max_length - (self.bos_id is not None)
        if limit != self.limit:
            self.rust.enable_truncation(limit, stride=0, strategy="longest_first", direction=self.side)
            self.limit = limit
        if prompt:
            sentences = [[*prompt, *words] for words in sentences]
        texts = [" ".join(words) for words in sentences]
        encs = self.rust.encode_batch(texts, add_special_tokens=True)
        ids_l = [e.ids for e in encs]
        offsets_l = [e.offsets for e in encs]
        special_l = [e.special_tokens_mask for e in encs]
        aligned = _aligned(sentences, texts, ids_l, offsets_l, special_l, self.bos_id)
        return [e.after(len(prompt)) for e in aligned] if prompt else aligned


def _aligned(
    sentences: Sequence[Sequence[str]],
    texts: list[str],
    ids_l: list[list[int]],
    offsets_l: list[list[tuple[int, int]]],
    special_l: list[list[int]],
    bos_id: int | None,
) -> list[Encoding]:
    """The encodings of a batch, aligned with whole arrays over all its tokens at once.

    Each sentence's text is placed at its own stretch of one number line (sentence ``s`` at ``s *
    span``), so one sorted search finds every token's word; per-sentence numpy calls cost more
    than the tokenizer on a GPU machine, where this runs while the device waits.
    """
    n = len(texts)
    n_tok = np.fromiter(map(len, ids_l), np.int64, n)
    n_words = np.fromiter(map(len, sentences), np.int64, n)
    total = int(n_tok.sum())
    ids = np.fromiter(chain.from_iterable(ids_l), np.int64, total)
    off = np.fromiter(chain.from_iterable(chain.from_iterable(offsets_l)), np.int64, 2 * total).reshape(-1, 2)
    special = np.fromiter(chain.from_iterable(special_l), np.int64, total)
    lens = np.fromiter((len(w) for words in sentences for w in words), np.int64, int(n_words.sum()))
    word_sent = np.repeat(np.arange(n), n_words)
    first_word = np.cumsum(n_words) - n_words
    stride = np.cumsum(lens + 1) - (lens + 1)
    starts = stride - stride[first_word[word_sent]] if len(lens) else stride  # within the sentence's text
    ends = starts + lens
    span = max(map(len, texts), default=0) + 2
    tok_sent = np.repeat(np.arange(n), n_tok)
    last = off[:, 1] - 1
    word = np.searchsorted(word_sent * span + starts, tok_sent * span + last, side="right") - 1
    grp = word - first_word[tok_sent]
    valid = (special == 0) & (off[:, 1] > off[:, 0]) & (grp >= 0)
    if len(lens):
        valid &= last < ends[np.clip(word, 0, len(lens) - 1)]
    lo = np.full(len(lens), np.iinfo(np.int64).max)
    hi = np.full(len(lens), -1)
    np.minimum.at(lo, word[valid], off[valid, 0])
    np.maximum.at(hi, word[valid], off[valid, 1])
    complete = (lo <= starts) & (hi >= ends)
    grp = np.where(valid, grp, -1).astype(np.int32)
    if bos_id is not None:
        at = np.cumsum(n_tok) - n_tok
        ids, grp, n_tok = np.insert(ids, at, bos_id), np.insert(grp, at, -1), n_tok + 1
    cut_t, cut_w = np.cumsum(n_tok)[:-1], np.cumsum(n_words)[:-1]
    return [
        Encoding(i, g, c)
        for i, g, c in zip(np.split(ids, cut_t), np.split(grp, cut_t), np.split(complete, cut_w), strict=True)
    ]
