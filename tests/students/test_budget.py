"""Memory estimated before a student allocates: refused in one line naming the option; near the peak."""

from pathlib import Path

import numpy as np
import pytest

from ctx2static import memory
from ctx2static.errors import UserError
from ctx2static.memory import PeakRss
from ctx2static.students import cooc, glove, sgns
from ctx2static.students.budget import Sizes
from ctx2static.students.registry import fit_cache_student, fit_text_student
from ctx2static.text.corpus import Corpus
from ctx2static.text.encoded import EncodedCorpus
from ctx2static.text.vocab import VocabConfig

from .test_contextual_students import _topic_cache

SENTENCES = [f"the w{i} and w{i + 1} of w{i + 2} saw the w{i + 3}" for i in range(200)]


def _corpus(tmp_path: Path) -> Corpus:
    path = tmp_path / "c.txt"
    path.write_text("\n".join(SENTENCES) + "\n")
    return Corpus([path])


@pytest.fixture
def little_memory(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 64 << 20)


@pytest.mark.parametrize("student", ["sgns", "cbow", "glove"])
def test_a_text_student_too_wide_for_the_memory_is_refused_before_training(tmp_path, little_memory, student):
    with pytest.raises(UserError) as err:
        fit_text_student(student, _corpus(tmp_path), VocabConfig(min_count=1), {"dim": "200000"})
    line = str(err.value)
    assert line.startswith(f"student '{student}' with dim=200000 and 207 words needs about ")
    assert "more than the 64 MiB available: lower --dim" in line and "--min-count" in line
    assert "\n" not in line


def test_a_cache_student_with_a_huge_window_is_refused_naming_dim_and_window(tmp_path, little_memory):
    with pytest.raises(
        UserError, match=r"student 'bert-sg' with dim=10, window=100000 and 8 words needs about"
    ):
        fit_cache_student(
            "bert-sg", _topic_cache(tmp_path), {"dim": "10", "window": "100000", "threads": "1"}
        )


def test_glove_window_buffer_and_nonzeros_are_checked_where_they_become_known(monkeypatch):
    starts = np.array([0, 5000], dtype=np.int64)  # one sentence of 5,000 words
    corpus = EncodedCorpus(np.zeros(5000, dtype=np.int32), starts, np.zeros(1, dtype=np.int32))
    monkeypatch.setattr(memory, "available_bytes", lambda: 16 << 20)
    with pytest.raises(
        UserError, match=r"^window=4000 over sentences of up to 5,000 words needs about .*--split"
    ):
        cooc.window_cooccurrence(corpus, 1, 4000)
    x = np.ones((1000, 1000))  # a million nonzeros: 32 MB of training arrays
    with pytest.raises(
        UserError, match=r"^GloVe with dim=2 on 1,000,000 co-occurrences of 1,000 words needs"
    ):
        glove.train_glove(x, glove.Config(dim=2, epochs=1))


def test_the_sgns_estimate_is_within_a_factor_two_of_the_measured_peak(tmp_path):
    corpus, vocab = _corpus(tmp_path), VocabConfig(min_count=1)
    small = {"dim": "8", "epochs": "1", "threads": "1"}
    fit_text_student("sgns", corpus, vocab, small)  # compiles the kernels: their memory is not the tables'
    dim = 60_000  # 207 words: two 49 MB tables
    estimate = sgns.memory(sgns.Config(dim=dim), Sizes(207))
    memory.release_freed()
    with PeakRss(interval=0.005) as peak:
        before = memory.current_rss()
        fit_text_student("sgns", corpus, vocab, {**small, "dim": str(dim)})
    assert estimate / 2 < peak.bytes - before < estimate * 2
