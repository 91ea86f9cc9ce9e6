"""The shards prepared in worker processes: the same cache, bounded read-ahead, Ctrl-C and kill -9."""

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

from ..faults import cli_env


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
