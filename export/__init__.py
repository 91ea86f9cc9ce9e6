"""Export vectors for other tools: word2vec text/binary (gensim), Model2Vec or sentence-transformers folders.

The two folder formats are token bags (a tokenizer and a row per token, averaged), built by
:mod:`ctx2static.export.tokens` (words outside the table: composed where the teacher's pieces
allow it); each folder carries a model card (:mod:`ctx2static.export.card`). What each holds:

- **model2vec**: rows in float32, float16 or int8 (a scale per row in the ``weights`` tensor,
  :mod:`ctx2static.export.quantize`); the word weights of :class:`~ctx2static.vectors.encoding.Weighting`
  folded into the rows, and ``normalize`` in ``config.json``, so ``StaticModel.encode`` gives
  :meth:`Vectors.encode`'s vectors (:mod:`ctx2static.export.model2vec` says where they differ).
- **sentence-transformers**: one ``StaticEmbedding`` (an ``EmbeddingBag`` of float32 or float16
  rows, so no int8) with the weights folded into the rows (its ``WordWeights`` module needs token
  embeddings, which a ``StaticEmbedding`` never outputs), and a ``Normalize`` module when
  ``normalize``.
- **word2vec** text or binary: float32 word vectors only; ``--dims`` applies, the pooling options
  (weights, int8, float16) do not.

``--dims D`` projects the table (and the composer's rows) on its D principal axes first
(:meth:`Vectors.reduced`), and the weights are applied after, as Model2Vec's ``distill`` does; the
axes are the rows' own, or with ``--pca-text`` those of a text's sentence means (``--pca-drop``
leaves out the first few). ``--lexical-dims D`` then appends D lexical dimensions to the folder's
rows (:mod:`ctx2static.transforms.lexical`, after the axes so PCA never mixes them in).
``--add-words FILE`` gives the table a composed row for each listed word it lacks
(:meth:`Vectors.with_composed`), so gensim and Model2Vec, which never compose, know those words.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import os
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from ctx2static.errors import InputError, OptionError, did_you_mean, spell
from ctx2static.export.card import Card
from ctx2static.export.config import ExportConfig
from ctx2static.export.quantize import Quantize
from ctx2static.fileio.outputs import check_writable
from ctx2static.fileio.reading import read_lines, require_file
from ctx2static.memory import check_fits
from ctx2static.transforms.lexical import with_lexical
from ctx2static.vectors import Vectors
from ctx2static.vectors.encoding import Weighting
from ctx2static.vectors.formats import saves_folder
from ctx2static.vectors.outputs import check_vectors_output
from ctx2static.vectors.table import COMPOSE_CHUNK, COMPOSED_WORD_BYTES

__all__ = [
    "Card",
    "ExportConfig",
    "Format",
    "Quantize",
    "add_words_bytes",
    "check_output",
    "export_vectors",
    "format_hint",
    "missing_words",
    "read_words",
]

WORDS_FORMAT = "UTF-8 text, one word a line"


class Format(str, enum.Enum):
    """Export formats."""

    WORD2VEC = "word2vec"  # text with header
    WORD2VEC_BIN = "word2vec-bin"  # binary with header
    MODEL2VEC = "model2vec"  # folder for model2vec.StaticModel.from_pretrained
    SENTENCE_TRANSFORMERS = "sentence-transformers"  # folder for SentenceTransformer(path)

    @property
    def folder(self) -> bool:
        """Whether the format is a folder (with a model card)."""
        return self in (Format.MODEL2VEC, Format.SENTENCE_TRANSFORMERS)


KNOWN_AS = {
    "gensim": "word2vec, or word2vec-bin",
    "keyedvectors": "word2vec, or word2vec-bin",
    "fasttext": "word2vec, its .vec text",
    "text": "word2vec",
    "txt": "word2vec",
    "vec": "word2vec",
    "bin": "word2vec-bin",
    "binary": "word2vec-bin",
    "m2v": "model2vec",
    "st": "sentence-transformers",
    "sbert": "sentence-transformers",
}
"""The format to give for a tool or kind of file that users name in its place (none is a typo of one)."""


def format_hint(name: str) -> str:
    """`` (for gensim: word2vec, ...)`` when ``name`` is a tool or file kind, else the closest format."""
    known = KNOWN_AS.get(name.lower())
    return f" (for {name}: {known})" if known else did_you_mean(name, [f.value for f in Format])


def check_output(out: str | os.PathLike, fmt: Format, inputs: Iterable[str | os.PathLike]) -> None:
    """Refuse an export's output before the vectors load: a folder is written whole, a file as vectors are."""
    if fmt.folder:
        check_writable(out, inputs=inputs, folder=True)
    else:
        check_vectors_output(out, inputs, folder=False)


def export_vectors(
    vectors: Vectors,
    fmt: Format | str,
    out: str | os.PathLike,
    card: Card | None = None,
    config: ExportConfig | None = None,
) -> Path:
    """Write ``vectors`` to ``out`` in ``fmt``; folders get ``card`` (default: one without evaluation).

    ``config`` (default :class:`ExportConfig`'s defaults): the table is shaped first (:func:`reduced`),
    then a folder gets the word weights folded into its rows and its rows stored as ``quantize``.
    """
    out, fmt = Path(out), Format(fmt)
    config = config or ExportConfig()
    check_pooling(fmt, config)
    vectors, config = reduced(vectors, config)
    card = card or Card.of(vectors)
    if not fmt.folder:
        binary = fmt is Format.WORD2VEC_BIN
        if saves_folder(out) or (out.suffix == ".bin") != binary:
            want = "a .bin file" if binary else "a file not ending in .bin (e.g. .txt or .vec)"
            raise OptionError(
                f"{out}: {spell('format', fmt.value, keyword='fmt')} writes {want}; change {spell('out')}",
                "format",
                "out",
            )
        return vectors.save(out)
    weights = vectors.row_weights(config.weighting, config.sif_a)
    weighted = replace(vectors, matrix=vectors.matrix * weights[:, None])
    if fmt is Format.MODEL2VEC:
        from ctx2static.export.model2vec import save_model2vec

        return save_model2vec(weighted, out, card, config)
    from ctx2static.export.sentence_transformers import save_sentence_transformers

    return save_sentence_transformers(weighted, out, card, config)


def check_pooling(fmt: Format, config: ExportConfig) -> None:
    """Refuse the options a word2vec file cannot hold (it stores float32 word vectors, no pooling)."""
    pooled = config.quantize is not Quantize.FLOAT32 or config.weighting is not Weighting.NONE
    if fmt.folder or not (pooled or config.lexical_dims):
        return
    raise OptionError(
        f"{spell('format', fmt.value, keyword='fmt')} holds float32 word vectors; "
        f"{spell('quantize')}, {spell('weighting')} and {spell('lexical_dims')} are for the "
        "model2vec and sentence-transformers folders",
        "format",
        "quantize",
        "weighting",
        "lexical_dims",
    )


def reduced(vectors: Vectors, config: ExportConfig) -> tuple[Vectors, ExportConfig]:
    """The table a file or folder holds, and ``config`` with its shaping done (applied once).

    ``dims`` axes of the rows, or of ``pca_text``'s sentence means, the first ``pca_drop`` left out;
    then ``lexical_dims`` appended (:mod:`ctx2static.transforms.lexical`: after the axes, so PCA
    never mixes them in).
    """
    if config.dims:
        texts = pca_texts(config.pca_text) if config.pca_text else None
        vectors = vectors.reduced(
            config.dims, texts=texts, drop=config.pca_drop, weighting=config.weighting, sif_a=config.sif_a
        )
        config = replace(config, dims=0, pca_text=None, pca_drop=0)
    if config.lexical_dims:
        vectors = with_lexical(vectors, config.lexical_dims, config.lexical_weight, config.sif_a)
        config = replace(config, lexical_dims=0)
    return vectors, config


PCA_TEXTS = 100_000
"""Lines of ``--pca-text`` the axes are fitted on: 100,000 sentence means of 768 floats pass through
float64 blocks, never all at once; beyond a few ten thousands the axes hardly move."""


def pca_texts(path: str | os.PathLike) -> Iterator[str]:
    """The first :data:`PCA_TEXTS` non-blank lines of ``path`` (read in 1 MiB pieces at most)."""
    expect = "a text file, one sentence a line"
    require_file(path, expect)  # refused now, not once the table is being reduced
    lines = (line for _, line in read_lines(path, expect, limit=1 << 20))
    return itertools.islice((line for line in lines if line.strip()), PCA_TEXTS)


def read_words(path: str | os.PathLike) -> list[str]:
    """The words of a file of one word a line (blank lines skipped); a line of two words is an error."""
    words = []
    for n, line in read_lines(path, WORDS_FORMAT):
        word = line.strip()
        if len(word.split()) > 1:
            raise InputError(path, f"{path}: line {n} holds {len(word.split())} words; write one word a line")
        if word:
            words.append(word)
    return words


THREAD_RESERVE = 66 << 20
"""Address space each thread of the tokenizer's pool reserves once it composes: glibc's 64 MiB heap
arena and a 2 MiB stack (measured: 66 MiB a thread, with 1, 2 and 8 threads). It is hardly
resident, but ``ulimit -v`` counts it."""

TOKEN_BYTES = 160
"""What a token of a word being composed costs beside its row's copies: the tokenizer's encoding of it
(id, offsets, string, masks), its id in a Python list and in the flat index array."""

FOLDER_COLUMN_BYTES, FOLDER_WORD_BYTES = 22, 512
"""What a row of a Model2Vec or sentence-transformers folder costs while it is made, a column and a
word: measured 20 bytes a column (the table, its weighted, stored and serialized copies) and 413
bytes a word (its token in the tokenizer, its JSON) with 300,000 words added at 64 and 384 dims."""

EXPORT_BASE = 64 << 20
"""What composing and writing cost whatever the words: the interpreter's and numpy's temporaries."""


def tokenizer_threads() -> int:
    """The threads the ``tokenizers`` library composes with, at most.

    None with ``TOKENIZERS_PARALLELISM`` off, else ``RAYON_NUM_THREADS`` or one per CPU (its pool's
    default, which a CPU affinity or quota only lowers).
    """
    parallel = os.environ.get("TOKENIZERS_PARALLELISM")
    if parallel is not None and parallel.lower() in ("", "off", "false", "f", "no", "n", "0"):
        return 0
    given = os.environ.get("RAYON_NUM_THREADS", "")
    return int(given) if given.isdigit() and int(given) > 0 else os.cpu_count() or 1


def add_words_bytes(
    vectors: Vectors, missing: list[str], dims: int = 0, fmt: Format = Format.WORD2VEC
) -> int:
    """What adding ``missing`` to ``vectors`` and exporting them as ``fmt`` costs at its peak, at most.

    An upper bound of what the process grows by (its address space, which bounds what becomes
    resident), as measured with ``/usr/bin/time -v`` and ``/proc/self/status`` (VmPeak, VmHWM) for
    10,000 to 1,000,000 words at 64 and 384 dims (docs/design/reliability.md, round 6): the new
    table (float32 rows of ``dims`` columns, 0: the vectors'; a folder's copies,
    :data:`FOLDER_COLUMN_BYTES`), a chunk of words being composed (its tokens, at most one a UTF-8
    byte of the longest :data:`~ctx2static.vectors.table.COMPOSE_CHUNK` words, each gathered as a
    float16 and a float32 row) and the tokenizer's threads (:data:`THREAD_RESERVE`). 1,000,000
    words at 384 dims grew the address space by 1.66 GiB written as word2vec; estimated 2.04 GiB.
    """
    dim = dims or vectors.dim
    rows = len(vectors) + len(missing)
    if fmt.folder:
        table = rows * (FOLDER_COLUMN_BYTES * dim + FOLDER_WORD_BYTES)
    else:
        table = rows * 4 * dim + len(missing) * COMPOSED_WORD_BYTES
    longest = heapq.nlargest(COMPOSE_CHUNK, (len(w.encode()) for w in missing))
    chunk = sum(longest) * (6 * dim + TOKEN_BYTES)
    return table + chunk + tokenizer_threads() * THREAD_RESERVE + EXPORT_BASE


def missing_words(
    vectors: Vectors, words: Iterable[str], source: str, dims: int = 0, fmt: Format = Format.WORD2VEC
) -> list[str]:
    """The ``words`` that ``vectors`` lack, checked to be composable before any slow step.

    Vectors without a composer cannot make rows for them: one line naming ``source`` (the vectors)
    and ``compose``, which gives them one. Adding them and exporting as ``fmt`` (the rows and the
    composed ones, of ``dims`` columns, 0: the vectors') must fit in memory, under a ``ulimit -v``
    too: :func:`add_words_bytes`, checked before anything is composed.
    """
    missing = list(dict.fromkeys(w for w in words if vectors.row_of(w) is None))
    if missing and vectors.composer is None:
        raise OptionError(
            f"{spell('add_words')}: {source} lacks {len(missing):,} of the words (first '{missing[0]}') and "
            f"has no composer to make them; give it one: ctx2static compose {source} --cache DIR --out NEW",
            "add_words",
        )
    if not missing:
        return missing
    check_fits(
        add_words_bytes(vectors, missing, dims, fmt),
        f"--add-words ({len(missing):,} words to compose into {source}'s table)",
        "add fewer words, or export fewer columns (--dims)"
        + ", or as word2vec-bin (about a fifth of a folder's memory)" * fmt.folder,
    )
    return missing
