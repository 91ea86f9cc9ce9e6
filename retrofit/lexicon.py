"""Lexicons (``word nbr1 nbr2 ...`` per line) and the word graph built from them.

Synonym lexicons and, for attract-repel, antonym lexicons share this format and reader.

Rules (Faruqui et al. 2015 reference code, kept): each line gives directed edges
headword -> neighbour, used as given (the bundled and shared lexicons list both directions for
most pairs anyway). Several lexicons merge into one graph: the union of their edges. Words
absent from the vocabulary and self-loops are dropped. Matching is exact, except when the
vocabulary is all lower case: then lexicon words are lower-cased too.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ctx2static.errors import InputError, UserError, did_you_mean
from ctx2static.fileio.reading import read_lines
from ctx2static.resources import LEXICON_DIR
from ctx2static.text.normal import nfc

log = logging.getLogger(__name__)

BUNDLED = {
    "wordnet": LEXICON_DIR / "wordnet-synonyms.txt.xz",
    "wordnet-antonyms": LEXICON_DIR / "wordnet-antonyms.txt.xz",
}
LEXICON_FORMAT = "UTF-8 text, 'word nbr1 nbr2 ...' per line (plain, .gz, .xz or .bz2)"


def resolve_lexicon(name: str | os.PathLike) -> Path:
    """A bundled short name (``wordnet``, ``wordnet-antonyms``) or a path to a plain, .gz or .xz lexicon."""
    if str(name) in BUNDLED:
        return BUNDLED[str(name)]
    path = Path(name)
    if path.is_dir():
        raise InputError(
            path,
            f"{path}: is a folder, not a lexicon file; give each lexicon file by itself, one option per "
            f"file, or one of: {', '.join(BUNDLED)}",
        )
    if not path.is_file():
        raise InputError(
            path,
            f"{path}: no such lexicon file{did_you_mean(str(name), BUNDLED)}; give a path or one of: "
            f"{', '.join(BUNDLED)}",
        )
    return path


def read_lexicon(path: str | os.PathLike) -> Iterator[tuple[str, list[str]]]:
    """Yield ``(headword, neighbours)`` per line; fields are split on spaces and tabs only.

    Words come in Unicode NFC, as the corpus the vectors were trained on. Blank lines are skipped;
    other characters (PPDB holds a few control characters) are words.
    A line that is not UTF-8 text, holds a NUL byte or starts with whitespace (empty headword)
    raises :class:`UserError` naming the file and line number.
    """
    path = resolve_lexicon(path)
    for lineno, line in read_lines(path, LEXICON_FORMAT):
        head, *fields = nfc(line).replace("\t", " ").split(" ")  # in NFC, as the vectors' words
        nbrs = [w for w in fields if w]
        if not head:
            if not nbrs:
                continue  # blank line
            raise InputError(
                path,
                f"{path}: line {lineno} has an empty headword (it starts with a space or tab); "
                "each line is 'word nbr1 nbr2 ...'",
            )
        yield head, nbrs


@dataclass
class WordGraph:
    """Directed lexicon edges over a vocabulary, as a CSR adjacency matrix (n x n, ones)."""

    adjacency: sp.csr_matrix
    lexicons: list[str]
    lowercase: bool
    links: list[int]  # per lexicon, its pairs of two distinct vocabulary words (repeats counted)

    @property
    def moving(self) -> np.ndarray:
        """Boolean mask of the words that have at least one neighbour (only they move)."""
        return np.diff(self.adjacency.indptr) > 0

    def stats(self) -> dict[str, int]:
        """Edge and word counts for logs and metadata."""
        return {"edges": int(self.adjacency.nnz), "words_with_neighbours": int(self.moving.sum())}


def build_graph(words: Sequence[str], lexicons: Sequence[str | os.PathLike]) -> WordGraph:
    """Merge ``lexicons`` (union of edges) into a :class:`WordGraph` over ``words``."""
    index = {w: i for i, w in enumerate(words)}
    lowercase = all(w == w.lower() for w in words)
    rows: list[int] = []
    cols: list[int] = []
    links = []
    for lex in lexicons:
        before = len(rows)
        for head, nbrs in read_lexicon(lex):
            if lowercase:
                head, nbrs = head.lower(), [w.lower() for w in nbrs]
            i = index.get(head)
            if i is None:
                continue
            for w in nbrs:
                j = index.get(w)
                if j is not None and j != i:
                    rows.append(i)
                    cols.append(j)
        links.append(len(rows) - before)
    n = len(words)
    keys = np.unique(np.asarray(rows, np.int64) * n + np.asarray(cols, np.int64))
    adjacency = sp.csr_matrix(
        (np.ones(keys.size, np.float32), (keys // n, keys % n)), shape=(n, n), dtype=np.float32
    )
    return WordGraph(adjacency, [str(x) for x in lexicons], lowercase, links)


def check_links(graphs: Sequence[WordGraph]) -> None:
    """Refuse lexicons of which none links two words of the vectors; warn of each one that links none.

    Such a lexicon is most often a file of another kind (``/etc/passwd`` has no ``word nbr`` line)
    or of another language or casing; with nothing to link, the retrofit would only copy its input.
    """
    named = [(lex, n) for g in graphs for lex, n in zip(g.lexicons, g.links, strict=True)]
    hint = f"a lexicon is {LEXICON_FORMAT}; matching is exact unless the vocabulary is all lower case"
    if named and not any(n for _, n in named):
        raise UserError(
            f"{', '.join(lex for lex, _ in named)}: no line links two words of the vectors, so nothing "
            f"would move; {hint}"
        )
    for lex, n in named:
        if n == 0:
            log.warning("%s: no line links two words of the vectors; it adds nothing (%s)", lex, hint)
