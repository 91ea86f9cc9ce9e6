"""Word <-> subword alignment for any fast tokenizer (WordPiece ##, byte-level BPE Ġ, SentencePiece ▁).

The static corpus is already split into words. The teacher sees the words joined by single spaces;
each subword token is assigned to the word holding the last character of its offset span, so the
rule is the same for all three tokenizer kinds and needs no knowledge of their continuation marks.
Words cut by the teacher's maximum length are flagged incomplete (reported, never misaligned).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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

    def regroup(self, group_of: np.ndarray) -> Encoding:
        """Map groups through ``group_of`` (e.g. word -> sentence); a new group is complete iff all are."""
        n_new = int(group_of.max()) + 1 if len(group_of) else 0
        complete = np.ones(n_new, dtype=bool)
        np.logical_and.at(complete, group_of, self.complete)
        tok = np.where(self.tok_group >= 0, group_of[np.maximum(self.tok_group, 0)], -1).astype(np.int32)
        return Encoding(self.ids, tok, complete)


def align(
    tokenizer: object, sentences: Sequence[Sequence[str]], max_length: int, bos_id: int | None = None
) -> list[Encoding]:
    """Tokenise word lists with a fast tokenizer and align each subword token to its word.

    ``bos_id`` is prepended when given (causal teachers whose tokenizer adds no BOS itself), so the
    first word also has a preceding position to be predicted from.
    """
    texts = [" ".join(words) for words in sentences]
    limit = max_length - (bos_id is not None)
    enc = tokenizer(  # type: ignore[operator]
        texts,
        add_special_tokens=True,
        truncation=True,
        max_length=limit,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        return_attention_mask=False,
    )
    out = []
    for words, ids, offsets, special in zip(
        sentences, enc["input_ids"], enc["offset_mapping"], enc["special_tokens_mask"], strict=True
    ):
        lens = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
        starts = np.concatenate([[0], np.cumsum(lens + 1)[:-1]]).astype(np.int64)
        ends = starts + lens
        off = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        last = off[:, 1] - 1
        grp = np.searchsorted(starts, last, side="right") - 1
        valid = (np.asarray(special) == 0) & (off[:, 1] > off[:, 0]) & (grp >= 0)
        valid &= last < ends[np.clip(grp, 0, len(words) - 1)]
        grp = np.where(valid, grp, -1).astype(np.int32)
        complete = np.zeros(len(words), dtype=bool)
        if valid.any():
            g = grp[valid]
            lo = np.full(len(words), np.iinfo(np.int64).max)
            hi = np.full(len(words), -1)
            np.minimum.at(lo, g, off[valid, 0])
            np.maximum.at(hi, g, off[valid, 1])
            complete = (lo <= starts) & (hi >= ends)
        ids_arr = np.asarray(ids, dtype=np.int64)
        if bos_id is not None:
            ids_arr = np.concatenate([[bos_id], ids_arr])
            grp = np.concatenate([[-1], grp]).astype(np.int32)
        out.append(Encoding(ids_arr, grp, complete))
    return out
