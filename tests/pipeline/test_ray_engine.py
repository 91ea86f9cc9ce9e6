"""extract on Ray: the local engine's cache (BERT, GPT-2), a killed worker retried, a killed driver resumed.

One local Ray of 2 CPUs for the module; every engine runs 2 one-thread workers, the local engine one
thread (the forward's float sums then run in the same order, so the files are equal byte for byte).
"""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ctx2static.cache import Cache
from ctx2static.errors import UserError
from ctx2static.pipeline.config import Engine, EngineConfig, ExtractConfig, TeacherConfig
from ctx2static.pipeline.extract import extract, run_extract
from ctx2static.pipeline.teacher import torch_threads
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

from .. import tiny_models as tm
from ..faults import cli_command, cli_env

ONE_THREAD = TeacherConfig(threads=1)
TWO_WORKERS = EngineConfig(engine=Engine.RAY, workers=2)
# the word table inside a template, at the layers auto resolves to on the workers
ALL_SIGNALS = ExtractConfig(
    shard_size=2, vectors=True, pca=3, topk=2, attention=2, paragraph=True, word_template="x {w}"
)
# 80 shards of the long corpus: time to kill something mid-run
LONG = ExtractConfig(shard_size=5, vectors=True, topk=2, attention=2, paragraph=True)


@pytest.fixture(scope="module")
def ray_session():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    p = tmp_path_factory.mktemp("corpus") / "c.txt"
    s = tm.SENTENCES
    p.write_text("\n".join(s[:2]) + "\n\n" + "\n".join(s[2:5]) + "\n\n" + s[5] + "\n")
    return p


@pytest.fixture(scope="module")
def long_corpus(tmp_path_factory):
    p = tmp_path_factory.mktemp("corpus") / "long.txt"
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(tm.WORDS, size=rng.integers(3, 12))) for _ in range(400)]
    p.write_text("\n".join(lines) + "\n")
    return p


def _local(model, corpus_file, out, cfg):
    from ctx2static.pipeline.teacher import Teacher

    corpus = Corpus([corpus_file])
    with torch_threads(1):
        return extract(corpus, _vocab(corpus), Teacher.load(str(model)), out, cfg)


def _vocab(corpus):
    return Vocab.build(corpus, VocabConfig(min_count=1))


def _engine(model, corpus_file, cfg):
    from ctx2static.pipeline.ray_engine import RayEngine

    corpus = Corpus([corpus_file])
    vocab = _vocab(corpus)
    return corpus, vocab, RayEngine.start(str(model), ONE_THREAD, vocab, cfg, True, TWO_WORKERS)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def long_reference(tiny_models, long_corpus, tmp_path_factory):
    """The local engine's caches of the long corpus, by teacher (built on first use)."""
    root, made = tmp_path_factory.mktemp("reference"), {}

    def get(name):
        if name not in made:
            _local(tiny_models[name], long_corpus, root / name, LONG)
            made[name] = root / name
        return made[name]

    return get


@pytest.mark.slow
def test_a_ray_cache_equals_the_local_one_file_for_file(ray_session, tiny_models, small_corpus, tmp_path):
    local = tmp_path / "local"
    _local(tiny_models["bert"], small_corpus, local, ALL_SIGNALS)
    corpus, vocab, engine = _engine(tiny_models["bert"], small_corpus, ALL_SIGNALS)
    with engine:
        m = run_extract(corpus, vocab, engine, tmp_path / "ray", ALL_SIGNALS)
    assert m["complete"] and len(m["shards"]) == 3 and "pca.h5" in m["aux_files"]
    assert _files(tmp_path / "ray") == _files(local)  # manifest included: the engine is not in the identity
    deadline = time.time() + 30
    while ray_session.available_resources().get("CPU") != 2 and time.time() < deadline:
        time.sleep(0.1)
    assert ray_session.available_resources().get("CPU") == 2  # the workers are gone, Ray is kept


@pytest.mark.slow
def test_a_worker_killed_mid_run_is_restarted_and_the_cache_is_the_same(
    ray_session, tiny_models, long_corpus, long_reference, tmp_path
):
    corpus, vocab, engine = _engine(tiny_models["bert"], long_corpus, LONG)
    out = tmp_path / "ray"
    with engine:
        pids = engine.pids()
        run = threading.Thread(target=run_extract, args=(corpus, vocab, engine, out, LONG))
        run.start()
        deadline = time.time() + 300
        while not (out / "shard_00005.h5").exists() and time.time() < deadline:
            time.sleep(0.005)
        os.kill(pids[0], signal.SIGKILL)  # it has a shard running and one queued (DEPTH 2)
        assert run.is_alive(), "the run finished before a worker could be killed"
        run.join()
        assert engine.pids()[0] != pids[0]  # Ray restarted it
    assert Cache.open(out).complete
    assert _files(out) == _files(long_reference("bert"))  # no temp file of the killed writer left either


def _cli_command(model, corpus, out, address):
    return cli_command(
        "extract", "--corpus", corpus, "--teacher", model, "--out", out,
        "--min-count", "1", "--shard-size", "5", "--vectors", "--topk", "2",
        "--attention", "2", "--paragraph", "--threads", "1",
        "--engine", "ray", "--address", address, "--workers", "2",
    )  # fmt: skip


@pytest.mark.slow
def test_cli_on_ray_a_killed_driver_is_resumed_by_the_same_command_redoing_only_missing_shards(
    ray_session, tiny_models, long_corpus, long_reference, tmp_path
):
    env = cli_env()
    address = ray_session.get_runtime_context().gcs_address  # this Ray: the driver's death ends its workers
    out = tmp_path / "ray"
    cmd = _cli_command(tiny_models["gpt2"], long_corpus, out, address)
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not (out / "shard_00010.h5").exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    partial = Cache.open(out)
    assert not partial.complete and 0 < partial.n_shards < 80
    kept = {p.name: p.stat().st_mtime_ns for p in out.glob("shard_*.h5")}
    committed = [s["name"] + ".h5" for s in partial.manifest["shards"]]
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    assert _files(out) == _files(long_reference("gpt2"))
    assert all(out.joinpath(n).stat().st_mtime_ns == kept[n] for n in committed)  # not computed again


def test_engine_options_are_checked_before_ray_starts(tiny_models, monkeypatch):
    with pytest.raises(UserError, match="--address auto must be empty unless --engine ray"):
        EngineConfig(address="auto")
    from ctx2static.pipeline.ray_engine import RayEngine

    vocab = Vocab(["a"], np.array([1]))
    with pytest.raises(UserError, match="need both --device cuda and --gpus-per-worker > 0"):
        RayEngine.start("x", TeacherConfig(device="cuda"), vocab, LONG, True, TWO_WORKERS)
    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed
    with pytest.raises(UserError, match=r"pip install 'ctx2static\[scale\]'"):
        RayEngine.start(str(tiny_models["bert"]), ONE_THREAD, vocab, LONG, True, TWO_WORKERS)


@pytest.mark.slow
def test_a_local_rays_workers_run_only_the_drivers_code(tiny_models, small_corpus, tmp_path):
    """Planted in the working folder (``tokenizers.py``...) and, under ``python -E``, on PYTHONPATH
    (``sitecustomize.py``): Ray would put the first on every worker's path and its workers would read
    the second; neither runs, and the cache is made."""
    pytest.importorskip("ray")
    here, planted, marker = tmp_path / "here", tmp_path / "planted", tmp_path / "ran"
    for folder in (here, planted):
        folder.mkdir()
        for name in ("tokenizers.py", "transformers.py", "sitecustomize.py", "h5py.py"):
            (folder / name).write_text(f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')\n")
    env = {**cli_env(), "PYTHONPATH": os.pathsep.join([str(planted), cli_env()["PYTHONPATH"]])}
    cmd = cli_command(
        "extract", "--corpus", small_corpus, "--teacher", tiny_models["bert"], "--out", tmp_path / "out",
        "--min-count", "1", "--vectors", "--threads", "1", "--engine", "ray", "--workers", "1",
    )  # fmt: skip
    done = subprocess.run([cmd[0], "-E", *cmd[1:]], env=env, cwd=here, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert Cache.open(tmp_path / "out").complete
    assert not marker.exists()
