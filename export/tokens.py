"""The token table of the token-bag formats (Model2Vec, sentence-transformers): a tokenizer, a row per id.

Both libraries split a text with ``tokenizer.json`` (no special tokens) and average the rows of
its token ids. Two tables:

- **subword** (vectors with a composer from a WordPiece teacher, e.g. BERT, MiniLM): the teacher's
  WordPiece model whose vocabulary also holds every word of the table. Text is split into words as
  the corpus reader does (punctuation apart, inner hyphens and apostrophes kept), through the
  teacher's normalizer (lower-cased first when the vectors are). A word of the table is matched
  whole (WordPiece takes the longest piece first) and gets its own row; any other word is split
  greedily into the longest pieces of that vocabulary, a piece that is a word of the table taking
  the word's row and a teacher piece its composer row (the teacher's input embedding mapped into
  the vectors' space). So a word outside the table gets the mean of its pieces, as
  :meth:`Vectors.query` composes it, exactly when its pieces are the teacher's and none is a word
  of the table; otherwise a close variant (e.g. ``thermos`` as ``therm + ##os`` when ``therm`` is a
  word of the table).
- **pieces** (a composer from a BPE or Unigram teacher: byte-level BPE as GPT-2's, SentencePiece as
  Gemma's, whose pieces carry no continuation mark a word-level vocabulary could share): the
  teacher's own model, and each word of the table an added token matched whole (between
  non-word characters), whose row is the word's. The text is cut into words as the corpus reader
  does (through the teacher's normalizer, spaces and its ``▁`` both separating), so any other
  word reaches the teacher's model alone, as :meth:`Composer.token_ids` encodes it, and gets the
  mean of its pieces' composer rows: :meth:`Vectors.query`'s vector. A Metaspace pre-tokenizer
  marks every word as a word's start (``prepend_scheme="always"``), as a word encoded alone is.
  The table then holds every teacher piece (262,144 rows for Gemma's vocabulary: ``--dims`` and
  ``--quantize`` make them small).
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


@dataclass
class TokenTable:
    """A ``tokenizers.Tokenizer``, the row of each of its token ids, what it does with unknown words."""

    tokenizer: Any
    matrix: np.ndarray
    kind: str  # "subword" or "word"
    unknown_words: str  # one sentence for the model card


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
    """The subword table for a WordPiece teacher's composer, the pieces table for any other, else words."""
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
    if json.loads(composer.tokenizer_json)["model"]["type"] == "WordPiece":
        return _subword_table(vectors)
    return _pieces_table(vectors)


def _corpus_split() -> Any:
    """Whitespace, then the corpus reader's word pattern (:data:`ctx2static.words.TOKEN`)."""
    from tokenizers import Regex, pre_tokenizers

    from ctx2static.words import TOKEN

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


def _subword_table(vectors: Vectors) -> TokenTable:
    from tokenizers import Tokenizer

    composer = vectors.composer
    assert composer is not None
    spec = json.loads(composer.tokenizer_json)
    vocab: dict[str, int] = dict(spec["model"]["vocab"])
    n_teacher, n_teacher_pieces = max(vocab.values()) + 1, len(vocab)
    for w in vectors.words:  # a word that is also a teacher piece takes that piece's id
        vocab.setdefault(w, n_teacher + len(vocab) - n_teacher_pieces)
    spec["model"]["vocab"] = vocab
    spec.update(truncation=None, padding=None, post_processor=None)
    tok = Tokenizer.from_str(json.dumps(spec))
    _lowercase_first(tok, composer.lowercase)
    tok.pre_tokenizer = _corpus_split()
    return TokenTable(
        tok,
        _rows(tok.get_vocab_size(), n_teacher, vectors, [vocab[w] for w in vectors.words]),
        "subword",
        "A word outside the table is split into the teacher's WordPiece pieces (or words of the table) "
        "and gets the mean of their rows: the teacher's input embeddings mapped into this space.",
    )


def _pieces_table(vectors: Vectors) -> TokenTable:
    from tokenizers import AddedToken, Regex, Tokenizer, pre_tokenizers

    composer = vectors.composer
    assert composer is not None
    spec = json.loads(composer.tokenizer_json)
    spec.update(truncation=None, padding=None, post_processor=None)
    inner = spec.get("pre_tokenizer")
    for step in [inner, *(inner or {}).get("pretokenizers", [])]:
        if step and step.get("type") == "Metaspace":
            step["prepend_scheme"] = "always"
    tok = Tokenizer.from_str(json.dumps(spec))
    _lowercase_first(tok, composer.lowercase)
    # spaces and the ▁ a SentencePiece normalizer puts for them both end a word, then the corpus
    # reader's words, then the teacher's own step (a byte-level map, a Metaspace mark)
    steps = [
        pre_tokenizers.Split(Regex("[\\s\u2581]+"), behavior="removed"),
        pre_tokenizers.Split(Regex(TOKEN.pattern), behavior="isolated"),
    ]
    if tok.pre_tokenizer is not None:
        steps.append(tok.pre_tokenizer)
    tok.pre_tokenizer = pre_tokenizers.Sequence(steps)
    tok.add_tokens([AddedToken(w, single_word=True, normalized=True) for w in vectors.words])
    vocab: dict[str, int] = tok.get_vocab(with_added_tokens=True)
    size = tok.get_vocab_size()
    return TokenTable(
        tok,
        _rows(size, size, vectors, [vocab[w] for w in vectors.words]),
        "pieces",
        "A word outside the table is encoded alone by the teacher's tokenizer and gets the mean of its "
        "pieces' rows: the teacher's input embeddings mapped into this space.",
    )


def _lowercase_first(tok: Any, lowercase: bool) -> None:
    """Lower-case a text before the teacher's own normalizer, as the vectors' words were read."""
    from tokenizers import normalizers

    if lowercase:
        own = [tok.normalizer] if tok.normalizer is not None else []
        tok.normalizer = normalizers.Sequence([normalizers.Lowercase(), *own])


def _rows(size: int, n_teacher: int, vectors: Vectors, ids: list[int]) -> np.ndarray:
    """A row per token id: the composer's for the first ``n_teacher`` ids, the table's at ``ids``."""
    assert vectors.composer is not None
    matrix = np.zeros((size, vectors.dim), dtype=np.float32)
    n = min(n_teacher, len(vectors.composer.rows), size)
    matrix[:n] = vectors.composer.rows[:n]
    matrix[ids] = vectors.matrix
    return matrix
