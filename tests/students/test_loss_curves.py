"""Every student with a loss records its mean loss per epoch in ``meta["train"]["loss_per_epoch"]``."""

import math

import numpy as np
import pytest

from ctx2static.students import cbow, glove, sgns
from ctx2static.students.registry import fit_cache_student
from ctx2static.text.encoded import EncodedCorpus
from ctx2static.text.vocab import Vocab

from ..synthetic_cache import write_cache


def _topic_ids(n_sent: int = 200, seed: int = 0) -> list[np.ndarray]:
    """Sentences of 8 words drawn from one of two disjoint topics (words 0-3 and 4-7)."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 4, size=8) + 4 * (s % 2) for s in range(n_sent)]


def _encoded() -> tuple[EncodedCorpus, Vocab]:
    ids = np.concatenate(_topic_ids()).astype(np.int32)
    starts = np.arange(0, len(ids) + 1, 8, dtype=np.int64)
    vocab = Vocab([f"w{i}" for i in range(8)], np.bincount(ids, minlength=8))
    return EncodedCorpus(ids, starts, np.zeros(len(starts) - 1, dtype=np.int32)), vocab


@pytest.mark.parametrize(
    "module,config",
    [
        (sgns, sgns.Config(dim=8, epochs=2, threads=1, sample=0.0, compute_loss=True)),
        (cbow, cbow.Config(dim=8, epochs=2, threads=1, sample=0.0, compute_loss=True)),
        (glove, glove.Config(dim=8, epochs=2, threads=1, window=3)),
    ],
)
def test_text_students_record_a_falling_loss_per_epoch(module, config):
    corpus, vocab = _encoded()
    losses = module.fit(corpus, vocab, config).meta["train"]["loss_per_epoch"]
    assert len(losses) == 2 and all(math.isfinite(x) and x > 0 for x in losses)
    assert losses[1] < losses[0]  # from a random start the first pass must improve the fit


def test_word2vec_records_no_curve_without_compute_loss():
    corpus, vocab = _encoded()
    assert (
        "loss_per_epoch" not in sgns.fit(corpus, vocab, sgns.Config(dim=8, epochs=2, threads=1)).meta["train"]
    )


@pytest.mark.parametrize("student", ["x2static", "bert-sg", "ctx2vec"])
def test_cache_students_record_a_falling_loss_per_epoch(tmp_path, student):
    rng = np.random.default_rng(1)
    dim = 12
    topics = rng.normal(size=(2, dim))
    sents = [list(s) for s in _topic_ids(300)]
    occ = np.concatenate([topics[np.array(s) // 4] + 0.3 * rng.normal(size=(8, dim)) for s in sents])
    ctx = topics[np.arange(len(sents)) % 2] + 0.3 * rng.normal(size=(len(sents), dim))
    folder = write_cache(tmp_path / "c", [f"w{i}" for i in range(8)], sents, 64, ctx, occ_vec=occ)
    options = {"epochs": "2", "threads": "1"} if student != "x2static" else {"epochs": "2", "sample": "0"}
    options["init"] = "random"
    if student != "x2static":
        options.update(dim="8", lr="0.05")
    losses = fit_cache_student(student, folder, options).meta["train"]["loss_per_epoch"]
    assert len(losses) == 2 and all(math.isfinite(x) and x > 0 for x in losses)
    if student == "x2static":  # Adam from a random table on separable topics: the fit must improve
        assert losses[1] < losses[0]
