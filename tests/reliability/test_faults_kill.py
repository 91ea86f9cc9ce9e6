"""kill -9 at random points of extract, fit-student (GloVe with checkpoints) and run, then resume.

Each job is killed several times at points drawn from a fixed seed (after its first output
appears, so the kill lands in the work, not in Python's start-up), resumed by running the same
command again, and its result compared array for array with one uninterrupted run. Nothing is
left behind: no temp files, no lock held.
"""

import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from ctx2static.cache import Cache
from ctx2static.vectors import Vectors

from .. import tiny_models as tm
from ..faults import cli_command, cli_env

pytestmark = pytest.mark.slow

RNG = np.random.default_rng(14)  # the kill points


def _kill_during(args, started, delay: float, timeout: float = 300) -> bool:
    """Start the CLI with ``args``, wait for ``started()`` and ``delay`` s more, kill -9; True if it ran."""
    proc = subprocess.Popen(
        cli_command(*args), env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + timeout
    while not started() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    time.sleep(delay)
    running = proc.poll() is None
    proc.kill()
    proc.wait()
    return running


def _complete(args):
    done = subprocess.run(cli_command(*args), env=cli_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


def _uninterrupted(cli_main, args) -> list[float]:
    """The same job in this process (every thread count is fixed by the job's options).

    Returns the kill delays: fractions of its duration drawn from the fixed seed, so that every kill
    lands inside the work however fast the machine.
    """
    start = time.perf_counter()
    code, _, err = cli_main(*args)
    assert code == 0, err
    return list(RNG.uniform(0.05, 0.5, 3) * (time.perf_counter() - start))


def _no_temps(folder: Path):
    assert not [p for p in folder.rglob("*.tmp")], "temp files left behind"


def _corpus(tmp_path, n):
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(tm.WORDS, size=rng.integers(3, 12))) for _ in range(n)]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_extract_killed_at_random_points_resumes_to_the_uninterrupted_cache(tiny_models, tmp_path, cli_main):
    corpus, teacher = _corpus(tmp_path, 100), tiny_models["bert"]

    def args(out):
        return [
            "-q", "extract", "--corpus", corpus, "--teacher", teacher, "--out", out, "--min-count", "1",
            "--threads", "1", "--shard-size", "5", "--vectors", "--topk", "2", "--attention", "2",
            "--paragraph",
        ]  # fmt: skip

    whole, killed = tmp_path / "whole", tmp_path / "killed"
    delays = _uninterrupted(cli_main, args(whole))
    kills = [_kill_during(args(killed), (killed / "manifest.json").exists, d) for d in delays]
    assert kills[0], "the first run finished before it could be killed"
    partial = Cache.open(killed)
    assert partial.verify() == []
    _complete(args(killed))
    a, b = Cache.open(killed), Cache.open(whole)
    assert a.complete and a.files() == b.files() and a.verify() == []
    for i in range(a.n_shards):
        sa, sb = a.shard(i), b.shard(i)
        assert all(np.array_equal(sa[k], sb[k]) for k in sb.arrays)
    _no_temps(killed)


def test_glove_killed_at_random_points_resumes_from_its_checkpoint_exactly(tmp_path, cli_main):
    corpus = _corpus(tmp_path, 150)

    def args(out, ckpt):
        return [
            "-q", "fit-student", "-s", "glove", "--corpus", corpus, "--min-count", "1", "-o", out,
            "--threads", "1", "--set", "dim=8", "--set", "epochs=400", "--set", "window=3",
            "--set", f"checkpoint={ckpt}", "--set", "checkpoint_every=1",
        ]  # fmt: skip

    delays = _uninterrupted(cli_main, args(tmp_path / "whole.txt", tmp_path / "whole.ckpt"))
    ckpt = tmp_path / "killed.ckpt"
    kills = [_kill_during(args(tmp_path / "killed.txt", ckpt), ckpt.exists, d) for d in delays]
    assert kills[0], "the first run finished before it could be killed"
    assert not (tmp_path / "killed.txt").exists()
    _complete(args(tmp_path / "killed.txt", ckpt))
    a, b = Vectors.load(tmp_path / "killed.txt"), Vectors.load(tmp_path / "whole.txt")
    assert a.words == b.words and np.array_equal(a.matrix, b.matrix)
    assert a.meta["train"]["loss_per_epoch"] == b.meta["train"]["loss_per_epoch"]
    _no_temps(tmp_path)


STUDY = """
[corpus]
files = ["corpus.txt"]
min_count = 1

[teachers.tiny]
model = "{teacher}"
vectors = true
shard_size = 10
threads = 1

[students.sgns]
options = {{ dim = 8, epochs = 3, threads = 1 }}

[students.x2static]
teacher = "tiny"

[students.ase]
teacher = "tiny"

[[retrofit]]
vectors = "sgns"
lexicons = ["syn.txt"]

[eval]
families = ["similarity"]
"""


def test_run_killed_at_random_points_resumes_to_the_uninterrupted_outputs(tiny_models, tmp_path, cli_main):
    _corpus(tmp_path, 100)
    (tmp_path / "syn.txt").write_text("cat dog mouse\nriver tree\n")  # words of the corpus
    (tmp_path / "study.toml").write_text(STUDY.format(teacher=tiny_models["bert"]))
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    delays = _uninterrupted(cli_main, ["-q", "run", tmp_path / "study.toml", "--out", whole])
    args = ["-q", "run", tmp_path / "study.toml", "--out", killed]
    kills = [_kill_during(args, (killed / "caches").exists, d) for d in delays]
    assert kills[0], "the first run finished before it could be killed"
    _complete(args)
    names = sorted(p.name for p in (whole / "vectors").iterdir())
    assert names == ["ase", "sgns", "sgns+syn", "x2static"]
    for name in names:
        a, b = Vectors.load(killed / "vectors" / name), Vectors.load(whole / "vectors" / name)
        assert a.words == b.words and np.array_equal(a.matrix, b.matrix), name
    assert Cache.open(killed / "caches" / "tiny").files() == Cache.open(whole / "caches" / "tiny").files()
    assert (killed / "report.md").is_file()
    _no_temps(killed)
