"""Fault injection around the files written: read-only and full outputs, locks, stale temps, Ctrl-C.

Read-only and full filesystems are real tmpfs mounts where the test may mount one (root in a
container), else simulated by making the write raise the same OSError; both variants run where
they can. Each command must fail before its work, in one line naming the path, and lose nothing.
"""

import contextlib
import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ctx2static.cache import Cache
from ctx2static.cache.writer import CacheWriter
from ctx2static.errors import UserError
from ctx2static.fileio import atomic, locks, outputs, temps
from ctx2static.fileio.atomic import atomic_dir, atomic_write
from ctx2static.fileio.outputs import check_writable
from ctx2static.fileio.temps import remove_stale_temps_in
from ctx2static.vectors import Vectors

from .. import tiny_models as tm
from ..faults import cli_env
from ..synthetic_cache import write_cache


@contextlib.contextmanager
def tmpfs(path: Path, options: str):
    """A tmpfs mounted at ``path`` (yields None where mounting is not allowed)."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    if done.returncode != 0:
        yield None
        return
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


def _simulate(monkeypatch, folder: Path, code: int) -> None:
    """Make every temp file or folder created under ``folder`` fail with OSError ``code``."""
    for name in ("mkstemp", "mkdtemp"):
        real = getattr(temps.tempfile, name)

        def refuse(*args, real=real, **kwargs):
            if str(kwargs.get("dir", "")).startswith(str(folder)):
                raise OSError(code, os.strerror(code), kwargs.get("dir"))
            return real(*args, **kwargs)

        monkeypatch.setattr(temps.tempfile, name, refuse)


@pytest.fixture(params=["tmpfs", "simulated"])
def readonly(request, tmp_path, monkeypatch):
    """A read-only folder and the message it gives: a read-only mount, or a simulated EROFS."""
    folder = tmp_path / "ro"
    if request.param == "simulated":
        folder.mkdir()
        _simulate(monkeypatch, folder, errno.EROFS)
        yield folder
        return
    with tmpfs(folder, "size=1m,ro") as mounted:
        if mounted is None:
            pytest.skip("mounting a tmpfs is not allowed here (the simulated variant runs)")
        yield mounted


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    words = ["king", "queen", "man", "woman", "past", "former"]
    Vectors(words, rng.normal(size=(6, 4)).astype(np.float32)).save(root / "v.txt")
    (root / "lex.txt").write_text("king queen\npast former\n")
    (root / "sim.txt").write_text("king\tqueen\t3\nman\twoman\t2\npast\tformer\t1\n")
    (root / "corpus.txt").write_text("\n".join(tm.SENTENCES * 3) + "\n")
    (root / "study.toml").write_text(
        '[corpus]\nfiles = ["corpus.txt"]\nmin_count = 1\n'
        "[students.sgns]\noptions = { dim = 4, epochs = 1 }\n"
    )
    sents = [list(rng.integers(0, 6, size=5)) for _ in range(8)]
    write_cache(root / "cache", words, sents, 4, rng.normal(size=(8, 4)).astype(np.float32))
    return root


def _commands(inputs, tiny_models, out):
    teacher, sim = tiny_models["bert"], inputs / "sim.txt"
    return {
        "extract": ["extract", "--corpus", inputs / "corpus.txt", "--teacher", teacher, "--out", out],
        "fit-student": ["fit-student", "-s", "x2static", "--cache", inputs / "cache", "-o", out / "v.txt"],
        "retrofit": ["retrofit", inputs / "v.txt", "-l", inputs / "lex.txt", "-o", out / "r.txt"],
        "eval --json": ["eval", inputs / "v.txt", "--no-bundled", "--similarity", sim, "--json", out / "j"],
        "export": ["export", inputs / "v.txt", "--format", "model2vec", "-o", out / "m2v"],
        "run": ["run", inputs / "study.toml", "--out", out / "study"],
    }  # fmt: skip


@pytest.mark.parametrize("command", ["extract", "fit-student", "retrofit", "eval --json", "export", "run"])
def test_a_read_only_output_fails_before_the_work_in_one_line(
    readonly, inputs, tiny_models, cli_main, monkeypatch, command
):
    import ctx2static.students.registry as registry

    def no_training(*_):
        raise AssertionError("trained before checking the output")

    monkeypatch.setattr(registry, "fit_cache_student", no_training)
    code, out, err = cli_main(*_commands(inputs, tiny_models, readonly)[command])
    assert code == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"error: {readonly}") and "Traceback" not in err, err
    assert "cannot write: the filesystem is read-only; write to another folder" in line
    if command.startswith("eval"):
        assert out == ""  # the table is not printed either: the check comes first


def test_a_write_refused_at_the_end_is_one_line_and_leaves_no_temp(tmp_path, inputs, cli_main, monkeypatch):
    real = os.replace

    def refuse(src, dst):
        if str(dst).endswith("r.txt"):
            raise PermissionError(errno.EACCES, "Permission denied", str(dst))
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", refuse)
    code, _, err = cli_main("retrofit", inputs / "v.txt", "-l", inputs / "lex.txt", "-o", tmp_path / "r.txt")
    assert code == 2
    want = "cannot write: permission denied; write somewhere you may or fix the folder's permissions"
    assert err.strip().splitlines()[-1] == f"error: {tmp_path / 'r.txt'}: {want}"
    assert [p.name for p in tmp_path.iterdir()] == []


@pytest.mark.parametrize("code, what", [(errno.EDQUOT, "disk quota"), (errno.EPERM, "not permitted")])
def test_environment_errors_anywhere_reach_the_user_as_one_line(
    cli_main, inputs, tmp_path, monkeypatch, code, what
):
    import ctx2static.students.registry as registry

    def fails(*_):
        raise OSError(code, os.strerror(code), "/some/where")

    monkeypatch.setattr(registry, "fit_cache_student", fails)
    rc, _, err = cli_main(
        "fit-student", "-s", "x2static", "--cache", inputs / "cache", "-o", tmp_path / "v.txt"
    )
    assert rc == 2 and err.startswith("error: /some/where: cannot write: ") and what in err


def test_other_os_errors_stay_exceptions(cli_main, inputs, tmp_path, monkeypatch):
    import ctx2static.students.registry as registry

    def fails(*_):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(registry, "fit_cache_student", fails)
    with pytest.raises(OSError, match="Input/output"):
        cli_main("fit-student", "-s", "x2static", "--cache", inputs / "cache", "-o", tmp_path / "v.txt")


def test_check_writable(tmp_path):
    check_writable(tmp_path / "new" / "deeper" / "v.txt")  # folders made later: the nearest one is probed
    assert not (tmp_path / "new").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="is a file, not a folder"):
        check_writable(tmp_path / "file" / "v.txt")
    assert [p.name for p in tmp_path.iterdir()] == ["file"]  # the probe is gone


# ------------------------------------------------------------------ disk full


def _extract(cli_main, model, corpus, out):
    return cli_main(
        "-q", "extract", "--corpus", corpus, "--teacher", model, "--out", out, "--min-count", "1",
        "--shard-size", "2", "--vectors", "--max-length", "14",
    )  # fmt: skip


def _cache_files(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.name != ".lock"}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["tmpfs", "simulated"])
def test_a_full_disk_stops_extract_in_one_line_and_a_rerun_completes_it(
    tmp_path, tiny_models, inputs, cli_main, monkeypatch, how
):
    corpus, model = inputs / "corpus.txt", tiny_models["bert"]
    assert _extract(cli_main, model, corpus, tmp_path / "whole")[0] == 0
    whole = _cache_files(tmp_path / "whole")
    room = sum(-(-len(b) // 4096) for b in whole.values()) // 2 * 4096  # tmpfs: 4 KiB blocks
    with contextlib.ExitStack() as stack:
        if how == "tmpfs":
            folder = stack.enter_context(tmpfs(tmp_path / "full", f"size={room}"))
            if folder is None:
                pytest.skip("mounting a tmpfs is not allowed here (the simulated variant runs)")
        else:
            folder = tmp_path / "full"
            real, written = atomic.os.fsync, [0]

            def fsync(fd):
                written[0] += os.fstat(fd).st_size
                if written[0] > room:
                    raise OSError(errno.ENOSPC, "No space left on device")
                real(fd)

            monkeypatch.setattr(atomic.os, "fsync", fsync)
        out = folder / "cache"
        code, _, err = _extract(cli_main, model, corpus, out)
        assert code == 2, err
        line = err.strip().splitlines()[-1]
        assert line.startswith(f"error: {out}") and "Traceback" not in err
        assert line.endswith(
            "cannot write: no space left on the device; free some space or write elsewhere, then re-run"
        )
        partial = Cache.open(out)
        assert not partial.complete and 0 < partial.n_shards < len(whole)
        assert partial.verify() == [] and not list(out.glob("*.tmp")) and not list(out.glob(".*.tmp"))
        if how == "tmpfs":
            subprocess.run(["mount", "-o", f"remount,size={8 * room}", str(folder)], check=True)
        else:
            monkeypatch.undo()
        assert _extract(cli_main, model, corpus, out)[0] == 0
        assert _cache_files(out) == whole


# ------------------------------------------------------------------ locks


@contextlib.contextmanager
def _holder(folder: Path):
    """A separate process that holds ``folder``'s lock until it is killed."""
    code = "import sys, time; from ctx2static.fileio.locks import acquire_lock\n"
    code += "acquire_lock(sys.argv[1], 'cache'); print('held', flush=True); time.sleep(600)"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(folder)], env=cli_env(), stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_second_writer_of_a_cache_gets_one_line_naming_the_first(tmp_path, inputs, tiny_models, cli_main):
    folder = tmp_path / "cache"
    vocab = Cache.open(inputs / "cache").vocab
    with _holder(folder) as proc:
        with pytest.raises(
            UserError, match=rf"another ctx2static process is writing this cache \(pid {proc.pid}: "
        ):
            CacheWriter.open(folder, {"teacher": {}, "options": {}}, vocab)
        code, _, err = _extract(cli_main, tiny_models["bert"], inputs / "corpus.txt", folder)
        assert code == 2 and f"(pid {proc.pid}: " in err and "wait for it to end, or write elsewhere" in err
        assert not (folder / "manifest.json").exists()
    # kill -9 of the holder releases the lock (the kernel drops it with the process)
    writer = CacheWriter.open(folder, {"teacher": {}, "options": {}}, vocab)
    writer.close()


def test_a_second_extract_meets_the_lock_before_its_teacher_loads_or_its_corpus_is_read(
    tmp_path, inputs, tiny_models, cli_main, monkeypatch
):
    from ctx2static.pipeline.teacher import Teacher
    from ctx2static.text.vocab import Vocab

    def too_early(*_args, **_kwargs):
        raise AssertionError("the teacher loaded or the corpus was read before the lock was checked")

    monkeypatch.setattr(Teacher, "load", too_early)
    monkeypatch.setattr(Vocab, "build", too_early)
    folder = tmp_path / "cache"
    with _holder(folder) as proc:
        code, _, err = _extract(cli_main, tiny_models["bert"], inputs / "corpus.txt", folder)
    assert code == 2 and err.startswith(
        f"error: {folder}: another ctx2static process is writing this cache (pid "
    )
    assert f"(pid {proc.pid}: " in err and len(err.splitlines()) == 1


def test_an_extract_that_fails_before_writing_leaves_no_folder_it_made(tmp_path, inputs, cli_main):
    out = tmp_path / "cache"
    code, _, err = _extract(cli_main, tmp_path / "no-such-teacher", inputs / "corpus.txt", out)
    assert code == 2 and err.startswith("error: ") and not out.exists()


def test_a_second_study_run_into_one_folder_gets_one_line(tmp_path, inputs, cli_main):
    out = tmp_path / "study"
    with _holder(out) as proc:
        code, _, err = cli_main("run", inputs / "study.toml", "--out", out)
    assert code == 2 and f"{out}: another ctx2static process is writing this study (pid {proc.pid}" in err


def test_the_lock_is_reentrant_within_a_process_and_released_after(tmp_path, inputs):
    vocab = Cache.open(inputs / "cache").vocab
    ident = {"teacher": {}, "options": {}}
    a = CacheWriter.open(tmp_path / "c", ident, vocab)
    b = CacheWriter.open(tmp_path / "c", ident, vocab)  # the same process: no deadlock
    b.close()
    assert (tmp_path / "c" / ".lock").read_text().startswith(f"pid {os.getpid()}: ")
    a.close()
    assert (tmp_path / "c" / ".lock").read_text() == ""
    assert locks._HELD == {}


# ------------------------------------------------------------------ temp files


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_write_removes_the_temps_dead_writers_left_and_keeps_a_live_ones(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = _dead_pid()
        stale = [tmp_path / f".v.txt.{dead}.abcd1234.tmp"]
        kept = [
            tmp_path / f".v.txt.{live.pid}.abcd1234.tmp",
            tmp_path / f".w.txt.{dead}.abcd1234.tmp",
            tmp_path / ".v.txt.k2j_h4x9.tmp",  # no pid: not a name fileio makes, so not its to remove
        ]
        for p in stale + kept:
            p.write_bytes(b"partial")
        with atomic_write(tmp_path / "v.txt", "w") as fh:
            fh.write("done")
        assert (tmp_path / "v.txt").read_text() == "done"
        assert not any(p.exists() for p in stale) and all(p.exists() for p in kept)
        (tmp_path / f".d.{dead}.abcd1234.tmp").mkdir()
        with atomic_dir(tmp_path / "d") as tmp:
            assert tmp.name.startswith(f".d.{os.getpid()}.")
        assert not (tmp_path / f".d.{dead}.abcd1234.tmp").exists()
        assert sorted(p.name for p in remove_stale_temps_in(tmp_path)) == [kept[1].name]
        assert kept[0].exists() and kept[2].exists()
    finally:
        live.kill()
        live.wait()


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path):
    (tmp_path / "v.txt").write_text("good")
    with pytest.raises(RuntimeError), atomic_write(tmp_path / "v.txt", "w") as fh:
        fh.write("half")
        raise RuntimeError
    assert [p.name for p in tmp_path.iterdir()] == ["v.txt"] and (tmp_path / "v.txt").read_text() == "good"


def test_glove_removes_the_checkpoint_temps_a_killed_run_left(tmp_path, inputs, cli_main):
    ckpt = tmp_path / "g.ckpt"
    stale = tmp_path / f".g.ckpt.{_dead_pid()}.abcd1234.tmp"
    stale.write_bytes(b"x" * 1000)
    code, _, err = cli_main(
        "-q", "fit-student", "-s", "glove", "--corpus", inputs / "corpus.txt", "--min-count", "1",
        "-o", tmp_path / "g.txt", "--set", "dim=4", "--set", "epochs=2", "--set", f"checkpoint={ckpt}",
        "--set", "checkpoint_every=1", "--threads", "1",
    )  # fmt: skip
    assert code == 0, err
    assert ckpt.is_file() and not stale.exists()


def test_glove_checks_its_checkpoint_folder_before_training(readonly, inputs, cli_main, tmp_path):
    code, _, err = cli_main(
        "-q", "fit-student", "-s", "glove", "--corpus", inputs / "corpus.txt", "--min-count", "1",
        "-o", tmp_path / "g.txt", "--set", f"checkpoint={readonly / 'g.ckpt'}", "--set", "checkpoint_every=1",
    )  # fmt: skip
    assert code == 2 and f"error: {readonly / 'g.ckpt'}: cannot write: the filesystem is read-only" in err


# ------------------------------------------------------------------ Ctrl-C


@pytest.mark.parametrize(
    "command, patched, said",
    [
        ("extract", "ctx2static.pipeline.extract.run_extract", "the shards written so far are kept; re-run"),
        ("fit-student", "ctx2static.students.registry.fit_cache_student", "no new vectors were written"),
        ("run", "ctx2static.study.runner.run_study", "the finished steps are kept; re-run"),
        ("retrofit", "ctx2static.retrofit.files.retrofit_vectors", "nothing half-written was kept"),
    ],
)
def test_ctrl_c_says_what_was_kept(
    tmp_path, inputs, tiny_models, cli_main, monkeypatch, command, patched, said
):
    def interrupted(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(patched, interrupted)
    code, _, err = cli_main(*_commands(inputs, tiny_models, tmp_path)[command])
    line = err.strip().splitlines()[-1]
    assert code == 130 and line.startswith("interrupted: ") and said in line and "Traceback" not in err


def test_time_of_a_lock_note_is_recent(tmp_path):
    with locks.folder_lock(tmp_path, "study"):
        note = (tmp_path / ".lock").read_text()
    stamp = time.mktime(time.strptime(note.rsplit("since ", 1)[1], "%Y-%m-%d %H:%M:%S"))
    assert abs(time.time() - stamp) < 60


@contextlib.contextmanager
def full_folder(tmp_path, monkeypatch, how):
    """A folder with 200 kB of room: a real tmpfs, or a patched fsync that fails past that size."""
    if how == "tmpfs":
        with tmpfs(tmp_path / "full", "size=200k") as folder:
            if folder is None:
                pytest.skip("mounting a tmpfs is not allowed here (the simulated variant runs)")
            yield folder
        return
    folder = tmp_path / "full"
    folder.mkdir()

    def fsync(fd):
        if os.fstat(fd).st_size > 200_000:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    yield folder


@pytest.mark.parametrize("how", ["tmpfs", "simulated"])
@pytest.mark.parametrize(
    "fmt, name", [("model2vec", "m2v"), ("word2vec-bin", "v.bin"), ("word2vec", "v.txt")]
)
def test_a_full_disk_during_export_is_one_line_and_leaves_nothing(
    tmp_path, cli_main, monkeypatch, how, fmt, name
):
    rng = np.random.default_rng(0)
    Vectors([f"w{i}" for i in range(3000)], rng.random((3000, 50), np.float32)).save(tmp_path / "big.txt")
    with full_folder(tmp_path, monkeypatch, how) as folder:
        code, _, err = cli_main("export", tmp_path / "big.txt", "--format", fmt, "-o", folder / name)
        # the folder formats say first that they evaluate for the model card
        assert code == 2 and err.strip().splitlines()[-1] == (
            f"error: {folder / name}: cannot write: no space left on the device; "
            "free some space or write elsewhere, then re-run"
        )
        assert list(folder.iterdir()) == []


def test_a_damaged_glove_checkpoint_is_one_line_not_a_crash(tmp_path):
    import dataclasses

    import scipy.sparse as sp

    from ctx2static.students.glove import Config, save_checkpoint, train_glove

    x = sp.csr_matrix(np.array([[0, 2.0, 1], [2, 0, 3], [1, 3, 0]]))
    cfg = Config(dim=4, epochs=2, threads=1, checkpoint=str(tmp_path / "g.ckpt"), checkpoint_every=1)
    state = train_glove(x, cfg, progress=False)
    fingerprint = str(np.load(tmp_path / "g.ckpt")["fingerprint"])
    for params, gradsq, message in [
        (state.params[:, :2], state.gradsq, "wrong shape"),
        (state.params, state.gradsq[:, :, :3], "wrong shape"),
        (np.where(np.arange(5) == 2, np.nan, state.params), state.gradsq, "NaN or infinity"),
    ]:
        save_checkpoint(dataclasses.replace(state, params=params, gradsq=gradsq), cfg, fingerprint)
        with pytest.raises(UserError, match=message):
            train_glove(x, dataclasses.replace(cfg, epochs=3), progress=False)
    flip_at = (tmp_path / "g.ckpt").stat().st_size // 2
    with open(tmp_path / "g.ckpt", "r+b") as fh:
        fh.seek(flip_at)
        fh.write(b"\xff\xff")
    with pytest.raises(UserError, match="not a readable GloVe checkpoint"):
        train_glove(x, dataclasses.replace(cfg, epochs=3), progress=False)


@pytest.mark.parametrize("how", ["tmpfs", "simulated"])
@pytest.mark.parametrize("name", ["v.bin", "v.txt", "native/"])
def test_a_full_disk_while_saving_a_composer_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, how, name):
    from ctx2static.composer import Composer

    rng = np.random.default_rng(0)
    v = Vectors([f"w{i}" for i in range(100)], rng.random((100, 8), np.float32))
    v.composer = Composer(rng.random((30000, 8)).astype(np.float16), "{}", True)  # 480 kB of rows
    with full_folder(tmp_path, monkeypatch, how) as folder:
        with pytest.raises(UserError, match="cannot write: no space left on the device"):
            v.save(f"{folder / name}")
        assert list(folder.iterdir()) == []


def test_a_write_probe_left_by_a_killed_run_is_removed_by_the_next_check(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    left = tmp_path / f".write-probe.{dead.pid}.abc123.tmp"  # killed between the probe's write and unlink
    left.write_bytes(b"\0")
    live = tmp_path / ".write-probe.1.def456.tmp"  # a live process's probe (pid 1) is its own
    live.write_bytes(b"\0")
    outputs.check_writable(tmp_path / "out.txt")
    assert not left.exists() and live.exists()


@pytest.fixture(params=["tmpfs", "simulated"])
def mount_point(request, tmp_path, monkeypatch):
    """A mount point (a tmpfs where the test may mount one), or a folder the system calls one."""
    if request.param == "simulated":
        folder = tmp_path / "mnt"
        folder.mkdir()
        monkeypatch.setattr(outputs.os.path, "ismount", lambda p: Path(p) == folder)
        yield folder
        return
    with tmpfs(tmp_path / "mnt", "size=1m") as mounted:
        if mounted is None:
            pytest.skip("mounting is not allowed here")
        yield mounted


def test_a_mount_point_as_an_output_is_one_line_before_the_work(mount_point, inputs, cli_main):
    """The old code wrote the whole folder beside it, then failed at the rename with a traceback."""
    Vectors(["king", "queen"], np.eye(2, dtype=np.float32)).save(mount_point.parent / "w.txt")
    code, _, err = cli_main("combine", inputs / "v.txt", mount_point.parent / "w.txt", "-o", mount_point)
    assert code == 2 and "Traceback" not in err
    assert err.strip() == f"error: {mount_point}: cannot write: {outputs.MOUNT_POINT}"
    assert not [p for p in mount_point.parent.iterdir() if p.name.startswith(".")]  # no temp beside it


@pytest.mark.parametrize("code", [errno.EBUSY, errno.EXDEV])
def test_a_busy_target_at_the_rename_is_one_line_naming_it(tmp_path, inputs, cli_main, monkeypatch, code):
    """A target the checks could not foresee (busy, or on another device) when the rename comes."""
    real = os.replace

    def refuse(src, dst):
        if str(dst).endswith("r.txt"):
            raise OSError(code, os.strerror(code), str(src), None, str(dst))
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", refuse)
    rc, _, err = cli_main("retrofit", inputs / "v.txt", "-l", inputs / "lex.txt", "-o", tmp_path / "r.txt")
    assert rc == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"error: {tmp_path / 'r.txt'}: cannot write: {outputs.MOUNT_POINT}"
    assert [p.name for p in tmp_path.iterdir()] == []


def test_a_folder_replaced_over_a_mount_point_is_one_line(mount_point, monkeypatch):
    """Past the checks (the mount made meanwhile), the exchange or rename is refused: one line."""
    if mount_point.stat().st_dev == mount_point.parent.stat().st_dev:  # simulated: refused as a real one is
        monkeypatch.setattr(atomic, "_exchange", _refuses(errno.EBUSY))
    with pytest.raises(UserError, match=f"^{mount_point}: cannot write: it is a mount point or in use"):
        with atomic_dir(mount_point) as tmp:
            (tmp / "a.txt").write_text("a")
    assert [p.name for p in mount_point.parent.iterdir()] == ["mnt"]


def _refuses(code: int):
    def exchange(a, b):
        raise OSError(code, os.strerror(code), str(b))

    return exchange
