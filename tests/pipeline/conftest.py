"""The pipeline tests' corpus: six sentences of the tiny teachers' words in three paragraphs."""

import pytest

from ctx2static.text.corpus import Corpus

from .. import tiny_models as tm


@pytest.fixture(scope="session")
def corpus_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("corpus") / "c.txt"
    s = tm.SENTENCES
    p.write_text("\n".join(s[:2]) + "\n\n" + "\n".join(s[2:5]) + "\n\n" + s[5] + "\n")
    return p


@pytest.fixture(scope="session")
def corpus_sentences(corpus_file):
    """The words of each sentence of ``corpus_file``, as extract reads them."""
    return [toks for _, toks in Corpus([corpus_file]).sentences()]
