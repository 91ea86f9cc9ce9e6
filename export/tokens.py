"""The token table of the token-bag formats (Model2Vec, sentence-transformers): a tokenizer, a row per id.

Both libraries split a text with ``tokenizer.json`` (no special tokens) and average the rows of
its token ids. Two tables:

- **pieces** (vectors with a composer, from any teacher: WordPiece as BERT's, byte-level BPE as
  GPT-2's, SentencePiece as Gemma's): the teacher's own model, and each word of the table an added
  token whose row is the word's. The normalizer (lower-casing first when the vectors are, then the
  teacher's) marks where the corpus reader cuts words (punctuation apart, inner hyphens and
  apostrophes kept), so a word of the table matches only a whole word, and any other word reaches
  the teacher's pre-tokenizer and model alone, as :meth:`Composer.token_ids` encodes it, and gets
  the mean of its pieces' composer rows (the teacher's input embeddings mapped into the vectors'
  space): :meth:`Vectors.query`'s vector, so a folder encodes as :meth:`Vectors.encode` does. A
  Metaspace pre-tokenizer marks every word as a word's start (``prepend_scheme="always"``), as a
  word encoded alone is. The table holds every teacher piece (262,144 rows for Gemma's vocabulary:
  ``--dims`` and ``--quantize`` make them small).
- **word** (vectors without a composer): a WordLevel model over the table, ``[PAD]`` (id 0) and
  ``[UNK]`` (id 1) zero rows. A word outside the table is ``[UNK]``: Model2Vec drops it,
  sentence-transformers averages its zero row in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ctx2static.errors import UserError
from ctx2static.fileio.atomic import atomic_dir
from ctx2static.vectors import Vectors
from ctx2static.words import TOKEN

PAD, UNK = "[PAD]", "[UNK]"

# A word of the table is the added token WORD_START + word + WORD_END (two private-use characters):
# its own id, apart from any teacher piece spelt alike, which keeps its composer row inside a
# composed word. The normalizer writes the marks around every word of a text, where
# :data:`~ctx2static.words.TOKEN` cuts it: at every run of spaces (and ▁, a SentencePiece
# normalizer's space), at the text's two ends, and where a word character meets any other
# character that is no space, but for a joiner inside a word (- ' or ’ between word characters).
# The last is a regex in Oniguruma's dialect (the tokenizers library's), where a word character is
# Python's \w (a letter, a digit or "_"; Oniguruma's own \w also takes combining marks). So an
# added token matches a whole word only, never part of a longer one ("tfg" in "tfg's"). A run of
# spaces at either end leaves an empty pair of marks, which no token matches.
WORD_START, WORD_END = "\ue000", "\ue001"
_W, _J = r"[\p{L}\p{N}_]", "[-'’]"
_P = rf"[^\p{{L}}\p{{N}}_\s\u2581{WORD_START}{WORD_END}]"
_SPACES = r"[\s\u2581]+"
_FIRST, _LAST = rf"\A(?!{WORD_START})", rf"(?<!{WORD_END})\z"  # a marked word is left as it is
_BETWEEN = (
    rf"(?={_P})(?<={_W})(?!{_J}{_W})"  # a word's end, other characters next
    rf"|(?={_W})(?<={_P})(?<!{_W}{_J})"  # other characters' end, a word next
)


def word_marks() -> Any:
    """The normalizer steps that write the marks around every word of a text."""
    from tokenizers import Regex, normalizers

    return [
        normalizers.Replace(Regex(_SPACES), f"{WORD_END} {WORD_START}"),
        normalizers.Replace(Regex(_FIRST), WORD_START),
        normalizers.Replace(Regex(_LAST), WORD_END),
        normalizers.Replace(Regex(_BETWEEN), WORD_END + WORD_START),
    ]


def marked(word: str) -> str:
    """A word of the table as the folder's tokenizer holds it."""
    return f"{WORD_START}{word}{WORD_END}"


@dataclass
class TokenTable:
    """A ``tokenizers.Tokenizer``, the row of each of its token ids, what it does with unknown words."""

    tokenizer: Any
    matrix: np.ndarray
    kind: str  # "pieces" or "word"
    unknown_words: str  # for the model card


def write_token_bag(
    out: Path, table: TokenTable, tensors: Mapping[str, np.ndarray], files: Mapping[str, str]
) -> Path:
    """Write a token-bag folder atomically: the stored rows, the tokenizer and ``files`` (name -> text).

    ``tensors`` (the rows as stored, perhaps with their scales) go to ``model.safetensors``, the
    tokenizer to ``tokenizer.json``. Every byte goes through Python's writes, so a full disk is an
    OSError with its errno (one line), not a Rust library's error.
    """
    from safetensors.numpy import save

    with atomic_dir(out) as tmp:
        (tmp / "model.safetensors").write_bytes(save(dict(tensors)))
        (tmp / "tokenizer.json").write_text(table.tokenizer.to_str(pretty=True), encoding="utf-8")
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
    return out


def token_table(vectors: Vectors) -> TokenTable:
    """The pieces table for vectors with a composer, else the word table."""
    composer = vectors.composer
    if composer is None:
        matrix = np.zeros((len(vectors) + 2, vectors.dim), dtype=np.float32)
        matrix[2:] = vectors.matrix
        return TokenTable(
            word_tokenizer(list(vectors.words), vectors.lowercase),
            matrix,
            "word",
            "A word outside the table is `[UNK]`, a zero row (these vectors have no composer).",
        )
    return _pieces_table(vectors)


def _corpus_split() -> Any:
    """Whitespace, then the corpus reader's word pattern (:data:`ctx2static.words.TOKEN`)."""
    from tokenizers import Regex, pre_tokenizers

    words_and_punctuation = pre_tokenizers.Split(Regex(TOKEN.pattern), behavior="isolated")
    return pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), words_and_punctuation])


def word_tokenizer(words: list[str], lowercase: bool) -> Any:
    """A WordLevel ``tokenizers.Tokenizer``: [PAD]=0, [UNK]=1, then ``words`` in order."""
    from tokenizers import Tokenizer, models, normalizers

    vocab = {PAD: 0, UNK: 1}
    for w in words:
        vocab.setdefault(w, len(vocab))
    if len(vocab) != len(words) + 2:
        raise UserError(f"the vocabulary holds {PAD!r}, {UNK!r} or a word twice; it cannot be exported")
    tok = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tok.pre_tokenizer = _corpus_split()
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    return tok


def _pieces_table(vectors: Vectors) -> TokenTable:
    from tokenizers import AddedToken, Regex, Tokenizer, normalizers, pre_tokenizers

    composer = vectors.composer
    assert composer is not None
    spec = json.loads(composer.tokenizer_json)
    spec.update(truncation=None, padding=None, post_processor=None)
    inner = spec.get("pre_tokenizer")
    for step in [inner, *(inner or {}).get("pretokenizers", [])]:
        if step and step.get("type") == "Metaspace":
            step["prepend_scheme"] = "always"
    tok = Tokenizer.from_str(json.dumps(spec))
    n_teacher = tok.get_vocab_size()
    own = [tok.normalizer] if tok.normalizer is not None else []
    lower = [normalizers.Lowercase()] if composer.lowercase else []
    tok.normalizer = normalizers.Sequence([*lower, *own, *word_marks()])
    # the marks and spaces (and the ▁ a SentencePiece normalizer puts for them) end a word; what is
    # left of a word reaches the teacher's own step (a byte-level map, a Metaspace mark) alone
    cut = pre_tokenizers.Split(Regex(f"[\\s\u2581{WORD_START}{WORD_END}]+"), behavior="removed")
    tok.pre_tokenizer = pre_tokenizers.Sequence([cut, *([tok.pre_tokenizer] if tok.pre_tokenizer else [])])
    tok.add_tokens([AddedToken(marked(w), normalized=True) for w in vectors.words])
    vocab: dict[str, int] = tok.get_vocab(with_added_tokens=True)
    return TokenTable(
        tok,
        _rows(tok.get_vocab_size(), n_teacher, vectors, [vocab[marked(w)] for w in vectors.words]),
        "pieces",
        "A word of the table is a token of its own (in the tokenizer's vocabulary between the characters "
        "U+E000 and U+E001); a word outside the table is encoded alone by the teacher's tokenizer and gets "
        "the mean of its pieces' rows: the teacher's input embeddings mapped into this space.",
    )


def _rows(size: int, n_teacher: int, vectors: Vectors, ids: list[int]) -> np.ndarray:
    """A row per token id: the composer's for the first ``n_teacher`` ids, the table's at ``ids``."""
    assert vectors.composer is not None
    matrix = np.zeros((size, vectors.dim), dtype=np.float32)
    n = min(n_teacher, len(vectors.composer.rows), size)
    matrix[:n] = vectors.composer.rows[:n]
    matrix[ids] = vectors.matrix
    return matrix
