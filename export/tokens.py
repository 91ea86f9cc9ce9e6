"""The token table of the token-bag formats (Model2Vec, sentence-transformers): a tokenizer, a row per id.

Both libraries split a text with ``tokenizer.json`` (no special tokens) and average the rows of
its token ids. Three tables:

- **pieces** (vectors with a composer, from any teacher: WordPiece as BERT's, byte-level BPE as
  GPT-2's, SentencePiece as Gemma's; ``tokens="marked"``, the default): the teacher's own model, and
  each word of the table an added token whose row is the word's. The normalizer (lower-casing first
  when the vectors are and the teacher's does not, then the teacher's) marks where the corpus
  reader cuts words (punctuation apart, inner hyphens and apostrophes kept), so a word of the table
  matches only a whole word, and any other word reaches the teacher's pre-tokenizer and model
  alone, as :meth:`Composer.token_ids` encodes it, and gets the mean of its pieces' composer rows
  (the teacher's input embeddings mapped into the vectors' space): :meth:`Vectors.query`'s vector,
  so a folder encodes as :meth:`Vectors.encode` does. A Metaspace pre-tokenizer marks every word as
  a word's start (``prepend_scheme="always"``), as a word encoded alone is. The table holds every
  teacher piece (262,144 rows for Gemma's vocabulary: ``--dims`` and ``--quantize`` make them small).

  An added token is matched on normalized text, so words the teacher's normalizer makes alike
  (BERT's strips accents: "a", "à", "ā") would be one token string for several ids, and which id
  the library gives is not fixed from one load to the next. Only the most frequent of them becomes
  a token. Where a folder and :meth:`Vectors.encode` differ: a text's "à" gets the row of "a"
  where :meth:`Vectors.encode` gives its own, and a word outside the table spelt as a word of the
  table without its accents ("ka" for "kā") gets that word's row where it would be composed.
- **pieces in the WordPiece vocabulary** (``tokens="wordpiece"``, WordPiece teachers: BERT's,
  MiniLM's, MPNet's): the teacher's tokenizer as it is, the table's words added to its WordPiece
  vocabulary, as Model2Vec's ``distill`` adds words; a teacher piece spelt as a word takes the
  word's row. A table word in a text is one lookup and no normalizer pass is added, so the folder
  encodes at the speed of Model2Vec's own folders; but it reads a text only nearly as
  :meth:`Vectors.encode` does: a word outside the table is split by longest match over the
  teacher's pieces and the table's words, and a table word the teacher's pre-tokenizer cuts (at an
  inner apostrophe or hyphen) is read as its parts. MPNet's ``sentence-kd`` folder: 1.01x
  potion-base-8M's texts a second against 0.79x marked, and 0.3 lower on the topic sets'
  development halves (+0.2 on the bundled sets, +0.8 lee-docsim).
- **word** (vectors without a composer): a WordLevel model over the table, ``[PAD]`` (id 0) and
  ``[UNK]`` (id 1) zero rows. A word outside the table is ``[UNK]``: Model2Vec drops it,
  sentence-transformers averages its zero row in.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ctx2static.errors import OptionError, UserError, spell
from ctx2static.fileio.atomic import atomic_dir
from ctx2static.vectors import Vectors
from ctx2static.words import TOKEN

PAD, UNK = "[PAD]", "[UNK]"


class Tokens(str, enum.Enum):
    """How a folder's tokenizer finds the table's words (vectors with a composer)."""

    MARKED = "marked"
    WORDPIECE = "wordpiece"


# A word of the table is matched as WORD_START + word + WORD_END (two private-use characters): its
# own id, apart from any teacher piece spelt alike, which keeps its composer row inside a composed
# word. The normalizer writes the marks around every word of a text, where
# :data:`~ctx2static.words.TOKEN` cuts it: at the text's start, at every run of spaces (and ▁, a
# SentencePiece normalizer's space) and where a word character meets any other character that is no
# space, but for a joiner inside a word (- ' or ’ between word characters), in one pass that writes
# WORD_END, a space and WORD_START, and at the text's end. The boundary is a regex in Oniguruma's
# dialect (the tokenizers library's), where a word character is Python's \w (a letter, a digit or
# "_"; Oniguruma's own \w also takes combining marks). So an added token matches a whole word only,
# never part of a longer one ("tfg" in "tfg's"). A run of spaces at either end leaves an empty pair
# of marks, which no token matches. Each normalizer step is a pass over the text, so the spaces and
# the boundaries share one.
WORD_START, WORD_END = "\ue000", "\ue001"
_W, _J = r"[\p{L}\p{N}_]", "[-'’]"
_P = rf"[^\p{{L}}\p{{N}}_\s\u2581{WORD_START}{WORD_END}]"
_CUTS = (
    r"[\s\u2581]+"  # spaces
    rf"|(?={_P})(?<={_W})(?!{_J}{_W})"  # a word's end, other characters next
    rf"|(?={_W})(?<={_P})(?<!{_W}{_J})"  # other characters' end, a word next
)
_LAST = rf"(?<!{WORD_END})\z"  # a token's own text, ending in its mark, is left as it is


def word_marks() -> Any:
    """The normalizer steps that write the marks around every word of a text."""
    from tokenizers import Regex, normalizers

    return [
        normalizers.Prepend(WORD_START),
        normalizers.Replace(Regex(_CUTS), f"{WORD_END} {WORD_START}"),
        normalizers.Replace(Regex(_LAST), WORD_END),
    ]


def marked(word: str) -> str:
    """A word of the table as the folder's tokenizer holds it: normalizing writes its WORD_START."""
    return f"{word}{WORD_END}"


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


def token_table(vectors: Vectors, tokens: Tokens = Tokens.MARKED) -> TokenTable:
    """The pieces table for vectors with a composer (``tokens``: which of the two), else the word table.

    ``wordpiece`` asks for the teacher's WordPiece vocabulary, which only a composer carries: without
    one it is refused, not ignored.
    """
    composer = vectors.composer
    if composer is None and Tokens(tokens) is Tokens.WORDPIECE:
        raise OptionError(
            f"{spell('tokens', 'wordpiece')}: these vectors have no composer, so no teacher's WordPiece "
            f"vocabulary to put their words in; fit one (ctx2static compose) or leave {spell('tokens')} out",
            "tokens",
        )
    if composer is None:
        matrix = np.zeros((len(vectors) + 2, vectors.dim), dtype=np.float32)
        matrix[2:] = vectors.matrix
        return TokenTable(
            word_tokenizer(list(vectors.words), vectors.lowercase),
            matrix,
            "word",
            "A word outside the table is `[UNK]`, a zero row (these vectors have no composer).",
        )
    return _pieces_table(vectors, Tokens(tokens))


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


def _pieces_table(vectors: Vectors, tokens: Tokens) -> TokenTable:
    from tokenizers import Tokenizer, normalizers

    composer = vectors.composer
    assert composer is not None
    spec = json.loads(composer.tokenizer_json)
    spec.update(truncation=None, padding=None, post_processor=None)
    inner = spec.get("pre_tokenizer")
    for step in [inner, *(inner or {}).get("pretokenizers", [])]:
        if step and step.get("type") == "Metaspace":
            step["prepend_scheme"] = "always"
    tok = Tokenizer.from_str(json.dumps(spec))
    if composer.lowercase and not _lowercases(spec.get("normalizer")):
        own = [tok.normalizer] if tok.normalizer is not None else []
        tok.normalizer = normalizers.Sequence([normalizers.Lowercase(), *own])
    if tokens is Tokens.MARKED:
        return _marked_table(tok, vectors)
    if spec["model"]["type"] != "WordPiece" or tok.pre_tokenizer is None:
        raise OptionError(
            f"{spell('tokens', 'wordpiece')}: the teacher's tokenizer is {spec['model']['type']}, not "
            f"WordPiece; use {spell('tokens', 'marked')}",
            "tokens",
        )
    return _wordpiece_table(tok, spec["model"], vectors)


def _wordpiece_table(tok: Any, model: dict[str, Any], vectors: Vectors) -> TokenTable:
    """The table's words join the teacher's WordPiece vocabulary, as Model2Vec's distill adds words."""
    from tokenizers import models

    n_teacher = tok.get_vocab_size()
    vocab = dict(model["vocab"])
    kept, ids, taken = [], [], set()
    for i in _by_frequency(vectors):
        word = tok.normalizer.normalize_str(vectors.words[i]) if tok.normalizer else vectors.words[i]
        pieces = tok.pre_tokenizer.pre_tokenize_str(word)
        if len(pieces) != 1:  # cut by the teacher's pre-tokenizer ("don't"): composed from its pieces
            continue
        key = pieces[0][0]
        if key in taken:  # a more frequent word normalizes alike
            continue
        taken.add(key)
        if key not in vocab:  # else a teacher piece spelt alike: the word's row is its row
            vocab[key] = n_teacher + len(vocab) - len(model["vocab"])
        kept.append(i)
        ids.append(vocab[key])
    tok.model = models.WordPiece(
        vocab,
        unk_token=model["unk_token"],
        continuing_subword_prefix=model["continuing_subword_prefix"],
        max_input_chars_per_word=model["max_input_chars_per_word"],
    )
    left = len(vectors) - len(kept)
    return TokenTable(
        tok,
        _rows(tok.get_vocab_size(), n_teacher, vectors, kept, ids),
        "pieces",
        "The words of the table are words of the teacher's WordPiece vocabulary (a teacher piece spelt as "
        "a word of the table takes its row); a word outside the table is split by longest match over "
        "them and the teacher's pieces, each piece the teacher's input embedding mapped into this space. "
        "Any evaluation on this card reads texts as the vectors themselves do (`--tokens marked`), which "
        "this tokenizer follows closely but not exactly."
        + (
            f" Not tokens ({left:,} of the table's words): accented words whose plain form is a more "
            "frequent word's, and words the teacher's pre-tokenizer cuts (at an inner apostrophe or hyphen)."
            if left
            else ""
        ),
    )


def _marked_table(tok: Any, vectors: Vectors) -> TokenTable:
    """Each word of the table an added token between its marks, the teacher's model for other words."""
    from tokenizers import AddedToken, Regex, normalizers, pre_tokenizers

    n_teacher = tok.get_vocab_size()
    own = [tok.normalizer] if tok.normalizer is not None else []
    tok.normalizer = normalizers.Sequence([*own, *word_marks()])
    # the marks and spaces (and the ▁ a SentencePiece normalizer puts for them) end a word; what is
    # left of a word reaches the teacher's own step (a byte-level map, a Metaspace mark) alone
    cut = pre_tokenizers.Split(Regex(f"[\\s\u2581{WORD_START}{WORD_END}]+"), behavior="removed")
    tok.pre_tokenizer = pre_tokenizers.Sequence([cut, *([tok.pre_tokenizer] if tok.pre_tokenizer else [])])
    seen: set[str] = set()
    kept = []
    for i in _by_frequency(vectors):
        form = tok.normalizer.normalize_str(marked(vectors.words[i]))
        if form not in seen:
            seen.add(form)
            kept.append(i)
    kept.sort()
    tok.add_tokens([AddedToken(marked(vectors.words[i]), normalized=True) for i in kept])
    vocab: dict[str, int] = tok.get_vocab(with_added_tokens=True)
    ids = [vocab[marked(vectors.words[i])] for i in kept]
    alike = len(vectors) - len(kept)
    return TokenTable(
        tok,
        _rows(tok.get_vocab_size(), n_teacher, vectors, kept, ids),
        "pieces",
        "A word of the table is a token of its own (in the tokenizer's vocabulary, ending in the character "
        "U+E001); a word outside the table is encoded alone by the teacher's tokenizer and gets "
        "the mean of its pieces' rows: the teacher's input embeddings mapped into this space."
        + (
            f" {alike:,} words that the teacher's normalizer makes alike (accents stripped) share the row of "
            "the most frequent of them."
            if alike
            else ""
        ),
    )


def _lowercases(spec: dict[str, Any] | None) -> bool:
    """Whether a tokenizer.json normalizer lower-cases the text (BERT's does): no second pass then."""
    if not spec:
        return False
    if spec.get("type") == "Sequence":
        return any(_lowercases(step) for step in spec.get("normalizers", []))
    kind = spec.get("type")
    return kind == "Lowercase" or (kind == "BertNormalizer" and bool(spec.get("lowercase")))


def _by_frequency(vectors: Vectors) -> list[int]:
    """Row indices, most frequent word first (the table's order where counts are unknown)."""
    if vectors.counts is None:
        return list(range(len(vectors)))
    return [int(i) for i in np.argsort(-vectors.counts, kind="stable")]


def _rows(size: int, n_teacher: int, vectors: Vectors, kept: list[int], ids: list[int]) -> np.ndarray:
    """A row per token id: the composer's for the first ``n_teacher`` ids, the table's ``kept`` at ``ids``."""
    assert vectors.composer is not None
    matrix = np.zeros((size, vectors.dim), dtype=np.float32)
    n = min(n_teacher, len(vectors.composer.rows), size)
    matrix[:n] = vectors.composer.rows[:n]
    matrix[ids] = vectors.matrix[kept]
    return matrix
