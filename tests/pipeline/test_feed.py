"""The shards prepared in worker processes: the same cache, bounded read-ahead, Ctrl-C and kill -9."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ctx2static.cache import Cache
from ctx2static.errors import UserError
from ctx2static.pipeline import feed
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.pipeline.extract import run_extract
from ctx2static.pipeline.feed import Feed, Setup, feeders
from ctx2static.pipeline.shard import ShardMaker
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

from ..faults import cli_command, cli_env, default_signals


def _feeders_alive() -> list[int]:
    """This process's children that run a feeding loop (zombies not counted)."""
    alive = []
    for stat in os.listdir("/proc"):
        if not stat.isdigit():
            continue
        try:
            fields = open(f"/proc/{stat}/stat").read().rsplit(") ", 1)[1].split()
            cmd = open(f"/proc/{stat}/cmdline").read()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and "pipeline.feed import serve" in cmd:
            alive.append(int(stat))
    return alive


def _extract(model, corpus_file, out, cfg, workers):
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    maker = ShardMaker(Teacher.load(str(model)), vocab, cfg, True, workers)
    with maker.feed:
        return run_extract(corpus, vocab, maker, out, cfg)


@pytest.mark.parametrize(("family", "template"), [("bert", "the word {w} ."), ("gpt2", "auto")])
def test_shards_prepared_by_workers_are_the_bytes_of_a_single_process(
    tiny_models, corpus_file, tmp_path, family, template
):
    """Every file of the cache (each shard's arrays, the vocabulary tables) is equal bit for bit."""
    cfg = ExtractConfig(shard_size=1, vectors=True, topk=2, paragraph=True, word_template=template)
    alone = _extract(tiny_models[family], corpus_file, tmp_path / "alone", cfg, 0)
    fed = _extract(tiny_models[family], corpus_file, tmp_path / "fed", cfg, 2)
    assert len(alone["shards"]) > 3
    assert Cache.open(tmp_path / "fed").files() == Cache.open(tmp_path / "alone").files()
    assert fed["vocab_files"] == alone["vocab_files"]
    assert not _feeders_alive()  # the workers ended with the block


def test_read_ahead_is_bounded_and_order_kept(tiny_models, corpus_file, monkeypatch):
    """At most workers + 1 shards are handed out ahead of the one the caller holds, in corpus order."""
    teacher = Teacher.load(str(tiny_models["bert"]))
    sents = list(Corpus([corpus_file]).sentences())
    jobs = [(i, sents[i : i + 1]) for i in range(len(sents))]
    pulled = []

    def source():
        for job in jobs:
            pulled.append(job[0])
            yield job

    with Feed(Setup(teacher.encoder, {}, 64, 4096, 0), 2) as f:
        seen = []
        for index, _, prepared in f.shards(source()):
            assert max(pulled) <= index + 2
            seen.append(index)
            assert len(prepared.n_words) == 1
    assert seen == [i for i, _ in jobs]


def test_ctrl_c_keeps_the_finished_shards_and_ends_the_workers(
    tiny_models, corpus_file, tmp_path, monkeypatch
):
    cfg = ExtractConfig(shard_size=1)
    real = ShardMaker.make

    def make(self, folder, index, sents, pca, prepared=None):
        if index == 3:
            raise KeyboardInterrupt
        return real(self, folder, index, sents, pca, prepared)

    monkeypatch.setattr(ShardMaker, "make", make)
    with pytest.raises(KeyboardInterrupt):
        _extract(tiny_models["bert"], corpus_file, tmp_path / "c", cfg, 2)
    assert not _feeders_alive()
    assert Cache.open(tmp_path / "c").n_shards == 3
    monkeypatch.setattr(ShardMaker, "make", real)
    resumed = _extract(tiny_models["bert"], corpus_file, tmp_path / "c", cfg, 2)
    whole = _extract(tiny_models["bert"], corpus_file, tmp_path / "whole", cfg, 0)
    assert Cache.open(tmp_path / "c").files() == Cache.open(tmp_path / "whole").files()
    assert resumed["vocab_files"] == whole["vocab_files"]


_ORPHAN = """
import os, sys, time
from transformers import AutoTokenizer
from ctx2static.pipeline.align import Encoder
from ctx2static.pipeline.feed import Feed, Setup

f = Feed(Setup(Encoder(AutoTokenizer.from_pretrained(sys.argv[1]), None), {}, 64, 4096, 0), 1).__enter__()
next(f.shards([(0, [(0, ["a", "b"])])]))
print(*[w.proc.pid for w in f.workers], flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_a_worker_ends_when_extract_is_killed(tiny_models):
    """kill -9 leaves no feeding process behind, holding memory and waiting forever on its queue."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _ORPHAN, str(tiny_models["bert"])],
        env=cli_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    (worker,) = map(int, proc.stdout.readline().split())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 30
    while time.time() < deadline:
        try:  # gone, or a zombie its new parent has not reaped yet
            if open(f"/proc/{worker}/stat").read().split(") ")[1][0] == "Z":
                return
        except FileNotFoundError:
            return
        time.sleep(0.1)
    pytest.fail(f"feeding process {worker} outlived the killed extract")


def test_one_feeder_a_core_none_on_one_core(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0})
    assert feeders(0) == 0  # one core: this process prepares each shard itself
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1})
    assert feeders(0) == 2 and feeders(3) == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(64)))
    assert feeders(0) == feed.MAX_FEEDERS


def test_beside_a_gpu_torch_keeps_one_cpu_thread_unless_told():
    from ctx2static.pipeline.config import TeacherConfig
    from ctx2static.pipeline.extract import torch_cpu_threads

    assert torch_cpu_threads(TeacherConfig(device="cpu")) == 0  # torch's own: the forward is the work
    assert torch_cpu_threads(TeacherConfig(device="cuda:1")) == 1  # the cores go to the feeders
    assert torch_cpu_threads(TeacherConfig(device="cuda", threads=3)) == 3


def test_a_feeding_process_that_dies_is_one_line_that_says_to_resume(tiny_models):
    """Killed (the system out of memory, say): the user is told to run again, not shown a traceback."""
    teacher = Teacher.load(str(tiny_models["bert"]))
    with Feed(Setup(teacher.encoder, {}, 64, 4096, 0), 1) as f:
        f.workers[0].proc.kill()
        f.workers[0].proc.wait()
        with pytest.raises(UserError, match=r"^extract: a feeding process ended .*run the same command"):
            next(f.shards([(0, [(0, ["a", "b"])])]))
    assert not _feeders_alive()


def _one_shard(teacher):
    with Feed(Setup(teacher.encoder, {"a": 0}, 64, 4096, 0), 1) as f:
        (_, _, prepared), *_ = list(f.shards([(0, [(0, ["a", "b"])])]))
    return prepared


_PLANT = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


def test_a_feeder_runs_no_file_of_the_working_folder(tiny_models, tmp_path, monkeypatch):
    """A numpy.py where the user runs extract is never imported: the worker takes this process's path."""
    teacher = Teacher.load(str(tiny_models["bert"]))
    here = tmp_path / "downloads"
    here.mkdir()
    marker = tmp_path / "ran"
    for planted in ("numpy.py", "tokenizers.py", "sitecustomize.py", "signal.py"):
        (here / planted).write_text(_PLANT.format(marker=str(marker)))
    monkeypatch.chdir(here)
    monkeypatch.syspath_prepend("")  # as `python -c` and an interactive session have it
    prepared = _one_shard(teacher)
    assert prepared.wids.tolist() == [0, -1]
    assert not marker.exists()


_FLAGS_PARENT = """
import sys
from transformers import AutoTokenizer
from ctx2static.pipeline.align import Encoder
from ctx2static.pipeline.feed import Feed, Setup

with Feed(Setup(Encoder(AutoTokenizer.from_pretrained(sys.argv[1]), None), {}, 64, 4096, 0), 1) as f:
    print(len(list(f.shards([(0, [(0, ["a", "b"])])]))))
"""


@pytest.mark.slow
def test_a_feeder_keeps_the_parents_interpreter_flags(tiny_models, tmp_path):
    """``python -E`` ignores PYTHONPATH, and so does its feeder: a sitecustomize.py there never runs."""
    planted = tmp_path / "planted"
    planted.mkdir()
    marker = tmp_path / "ran"
    (planted / "sitecustomize.py").write_text(_PLANT.format(marker=str(marker)))
    env = {**cli_env(), "PYTHONPATH": str(planted)}
    out = subprocess.run(
        [sys.executable, "-E", "-c", _FLAGS_PARENT, str(tiny_models["bert"])],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["1"]
    assert not marker.exists()
    # the plant is live: without -E the parent (and so its feeder) runs it
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    assert marker.exists()


def test_a_feeder_killed_while_it_writes_is_one_line(tiny_models):
    """A message cut short (the worker killed mid-write) is the same line as a worker gone."""
    teacher = Teacher.load(str(tiny_models["bert"]))
    with Feed(Setup(teacher.encoder, {}, 64, 4096, 0), 1) as f:
        w = f.workers[0]
        w.send((feed.Prepared.of, [(0, ["a", "b"])]))
        w.proc.kill()
        w.proc.wait()
        r, wr = os.pipe()
        os.write(wr, (1000).to_bytes(4, "big", signed=True) + b"x" * 10)  # a header for 1,000 bytes, 10 sent
        os.close(wr)
        w.results.close()
        w.results = feed.Connection(r, writable=False)
        with pytest.raises(UserError, match=r"^extract: a feeding process ended .*run the same command"):
            w.result()
    assert not _feeders_alive()


def test_a_stopped_feeder_is_one_line_after_the_patience(tiny_models, monkeypatch):
    """SIGSTOP: noticed after PATIENCE seconds, named, and the stopped process killed on the way out."""
    monkeypatch.setattr(feed, "PATIENCE", 2.0)
    teacher = Teacher.load(str(tiny_models["bert"]))
    start = time.monotonic()
    with Feed(Setup(teacher.encoder, {}, 64, 4096, 0), 1) as f:
        f.workers[0].proc.send_signal(signal.SIGSTOP)
        stopped = r"^extract: feeding process \d+ is stopped .* in 2 s; run the same"
        with pytest.raises(UserError, match=stopped):
            next(f.shards([(0, [(0, ["a", "b"])])]))
    assert time.monotonic() - start < 30
    assert not _feeders_alive()


def test_a_feeder_stopped_halfway_through_its_result_is_one_line_after_the_patience(tiny_models, monkeypatch):
    """Its first bytes came, the rest never will (SIGSTOP mid-write): recv() would block for good."""
    monkeypatch.setattr(feed, "PATIENCE", 2.0)
    teacher = Teacher.load(str(tiny_models["bert"]))
    start = time.monotonic()
    with Feed(Setup(teacher.encoder, {}, 64, 4096, 0), 1) as f:
        w = f.workers[0]
        w.proc.send_signal(signal.SIGSTOP)
        r, wr = os.pipe()
        os.write(wr, (1000).to_bytes(4, "big", signed=True) + b"x" * 10)  # a header for 1,000 bytes, 10 sent
        w.results.close()
        w.results = feed.Connection(r, writable=False)
        try:
            with pytest.raises(
                UserError, match=r"^extract: feeding process \d+ is stopped .* in 2 s; run the same"
            ):
                w.result()
        finally:
            os.close(wr)
    assert time.monotonic() - start < 30
    assert not _feeders_alive()


@pytest.mark.parametrize("name", ["SIGHUP", "SIGQUIT", "SIGINT"])
def test_a_feeder_leaves_the_terminals_signals_to_its_parent(tiny_models, name):
    """A closed terminal or Ctrl+backslash reaches every process of the group: the feeder keeps serving."""
    teacher = Teacher.load(str(tiny_models["bert"]))
    with Feed(Setup(teacher.encoder, {"a": 0}, 64, 4096, 0), 1) as f:
        f.workers[0].proc.send_signal(signal.Signals[name])
        (_, _, prepared), *_ = list(f.shards([(0, [(0, ["a", "b"])])]))
        assert prepared.wids.tolist() == [0, -1]
        assert f.workers[0].proc.poll() is None
    assert not _feeders_alive()


_HANGUP = """
import json, os, signal, sys
from ctx2static import cli
from ctx2static.pipeline import feed
from ctx2static.pipeline.shard import ShardMaker

real_make, real_close, ends = ShardMaker.make, feed._Worker.close, []

def make(self, folder, index, sents, pca, prepared=None):
    if index == 2:  # the terminal closes: its foreground process group gets the signal
        os.killpg(os.getpgid(0), signal.Signals[sys.argv[2]])
    return real_make(self, folder, index, sents, pca, prepared)

def close(self):
    real_close(self)
    ends.append(self.proc.returncode)
    open(sys.argv[1], "w").write(json.dumps(ends))

ShardMaker.make, feed._Worker.close = make, close
cli.main(sys.argv[3:])
"""


@pytest.mark.slow
@pytest.mark.parametrize(("name", "code"), [("SIGHUP", 129), ("SIGQUIT", 131)])
def test_a_hangup_to_the_process_group_is_one_line_and_the_run_resumes(
    tiny_models, corpus_file, tmp_path, name, code
):
    """The parent says what was kept; its feeders end as it closes them, not killed by the signal."""
    ends = tmp_path / "ends.json"
    args = ["extract", "--corpus", corpus_file, "--teacher", tiny_models["bert"], "--out", tmp_path / "c",
            "--shard-size", 1, "--feeders", 2, "--min-count", 1]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", _HANGUP, str(ends), name, *map(str, args)],
        env=cli_env(),
        capture_output=True,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's job is: the signal spares pytest
        preexec_fn=default_signals,
        timeout=300,
    )
    assert done.returncode == code, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"interrupted ({name}):"), done.stderr
    assert "Traceback" not in done.stderr
    assert json.loads(ends.read_text()) == [0, 0]  # each ended at its pipe's end, not of the signal
    assert Cache.open(tmp_path / "c").n_shards == 2
    again = subprocess.run(cli_command(*args), env=cli_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    whole = [tmp_path / "whole" if a == tmp_path / "c" else a for a in args]
    made = subprocess.run(cli_command(*whole), env=cli_env(), capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    assert Cache.open(tmp_path / "c").files() == Cache.open(tmp_path / "whole").files()
