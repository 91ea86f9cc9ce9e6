"""A cache is resumed only by the same run, and a run killed with -9 resumes to the uninterrupted cache."""

import json
import signal
import subprocess
import time

import numpy as np
import pytest
import torch

from ctx2static.cache import Cache
from ctx2static.errors import UserError
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus, CorpusConfig
from ctx2static.text.split import Split
from ctx2static.text.vocab import Vocab, VocabConfig

from .. import tiny_models as tm
from ..faults import cli_command, cli_env


def test_mismatched_rerun_refuses(tiny_models, corpus_file, tmp_path):
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    cfg = ExtractConfig(shard_size=4)
    extract(corpus, vocab, Teacher.load(str(tiny_models["bert"])), tmp_path / "c", cfg)
    with pytest.raises(UserError, match=r"different run \(differs in .*teacher") as exc:
        extract(corpus, vocab, Teacher.load(str(tiny_models["gpt2"])), tmp_path / "c", cfg)
    assert "\n" not in str(exc.value)
    other = tmp_path / "other.txt"
    other.write_text(corpus_file.read_text() + "one more line .\n")
    with pytest.raises(UserError, match=r"differs in corpus"):
        extract(Corpus([other]), vocab, Teacher.load(str(tiny_models["bert"])), tmp_path / "c", cfg)


def _edit_after_shard(monkeypatch, path, index, keep_stamp=False):
    """Edit ``path`` in place once the shard maker has made shard ``index`` (before it is recorded)."""
    import os

    from ctx2static.pipeline.shard import ShardMaker

    real = ShardMaker.make

    def make(self, folder, i, sents, pca, prepared=None):
        done = real(self, folder, i, sents, pca, prepared)
        if i == index:
            st = path.stat()
            text = path.read_text()
            path.write_text(text.replace("cat", "dog") if keep_stamp else text + "one more line .\n")
            if keep_stamp:  # same length, and the modification time put back: only the digest tells
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        return done

    monkeypatch.setattr(ShardMaker, "make", make)


def test_a_corpus_edited_while_extract_reads_it_stops_before_a_shard_of_the_new_text(
    tiny_models, corpus_file, tmp_path, monkeypatch
):
    corpus_path = tmp_path / "c.txt"
    corpus_path.write_text(corpus_file.read_text())
    corpus = Corpus([corpus_path])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    _edit_after_shard(monkeypatch, corpus_path, 1)
    teacher = Teacher.load(str(tiny_models["bert"]))
    with pytest.raises(
        UserError,
        match=r"c.txt: the corpus changed while extract read it; the shards recorded before the change are",
    ) as exc:
        extract(corpus, vocab, teacher, tmp_path / "c", ExtractConfig(shard_size=2))
    assert "\n" not in str(exc.value)
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert [r["index"] for r in manifest["shards"]] == [0] and not manifest["complete"]


def test_an_edit_that_keeps_size_and_time_is_caught_before_the_cache_completes(
    tiny_models, corpus_file, tmp_path, monkeypatch
):
    corpus_path = tmp_path / "c.txt"
    corpus_path.write_text(corpus_file.read_text())
    corpus = Corpus([corpus_path])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    _edit_after_shard(monkeypatch, corpus_path, 1, keep_stamp=True)
    teacher = Teacher.load(str(tiny_models["bert"]))
    with pytest.raises(UserError, match=r"may mix both versions and is not completed"):
        extract(corpus, vocab, teacher, tmp_path / "c", ExtractConfig(shard_size=2))
    assert not json.loads((tmp_path / "c" / "manifest.json").read_text())["complete"]


def _extract_cmd(model, corpus, out):
    return cli_command(
        "extract", "--corpus", corpus, "--teacher", model, "--out", out,
        "--min-count", "1", "--shard-size", "5", "--vectors", "--topk", "2",
        "--attention", "2", "--paragraph", "--threads", "1", "--split", "lines", "--feeders", "2",
    )  # fmt: skip


@pytest.mark.slow
def test_kill_9_then_rerun_equals_an_uninterrupted_run(tiny_models, tmp_path):
    corpus = tmp_path / "big.txt"
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(tm.WORDS, size=rng.integers(3, 12))) for _ in range(300)]
    corpus.write_text("\n".join(lines) + "\n")
    env = cli_env()
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        _extract_cmd(tiny_models["bert"], corpus, killed), env=env, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 300
    while not (killed / "shard_00000.h5").exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    partial = Cache.open(killed)
    assert not partial.complete and partial.n_shards < 60
    subprocess.run(
        _extract_cmd(tiny_models["bert"], corpus, killed), env=env, check=True, capture_output=True
    )
    whole = tmp_path / "whole"  # the same job uninterrupted, in this process with the same thread count
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        c = Corpus([corpus], CorpusConfig(split=Split.LINES))  # random words: some look like two sentences
        cfg = ExtractConfig(shard_size=5, vectors=True, topk=2, attention=2, paragraph=True)
        extract(
            c, Vocab.build(c, VocabConfig(min_count=1)), Teacher.load(str(tiny_models["bert"])), whole, cfg
        )
    finally:
        torch.set_num_threads(threads)
    a, b = Cache.open(killed), Cache.open(whole)
    assert a.complete and b.complete and a.n_shards == b.n_shards == 60
    assert a.files() == b.files() and a.verify() == []
    assert not [p.name for p in killed.iterdir() if p.name.endswith(".tmp")]  # stale temp files removed
