"""Hostile paths: links, devices, pipes and inputs where an output or a lock goes; SIGTERM.

Each case must end in one line naming the path (exit 2) or be handled, and leave every file the
user had as it was: a lock never follows a link nor empties a file it did not make, an output
never replaces a link, a device, a pipe, a file in a folder's place or one of the command's inputs,
and SIGTERM cleans temporaries as Ctrl-C does (exit 143). Character devices are made with
``mknod`` (root); where that is refused those cases skip with the reason.
"""

import errno
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from ctx2static import api
from ctx2static.errors import UserError
from ctx2static.fileio import atomic
from ctx2static.fileio.atomic import atomic_dir, atomic_write
from ctx2static.fileio.locks import folder_lock
from ctx2static.fileio.oserrors import environment_error
from ctx2static.fileio.outputs import check_writable
from ctx2static.vectors import Vectors

from .. import tiny_models as tm
from ..faults import cli_command, cli_env
from ..synthetic_cache import write_cache

PRECIOUS = "the user's own words\n"
WORDS = ["king", "queen", "man", "woman", "past", "former"]


@pytest.fixture
def inputs(tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    rng = np.random.default_rng(0)
    Vectors(WORDS, rng.normal(size=(6, 4)).astype(np.float32)).save(root / "v.txt")
    Vectors(WORDS, rng.normal(size=(6, 4)).astype(np.float32)).save(root / "native")
    (root / "lex.txt").write_text("king queen\npast former\n")
    (root / "sim.txt").write_text("king\tqueen\t3\nman\twoman\t2\npast\tformer\t1\n")
    (root / "corpus.txt").write_text("\n".join(tm.SENTENCES * 3) + "\n")
    (root / "study.toml").write_text(
        '[corpus]\nfiles = ["corpus.txt"]\nmin_count = 1\n[students.sgns]\noptions = { dim = 4, epochs = 1 }'
    )
    sents = [list(rng.integers(0, 6, size=5)) for _ in range(8)]
    write_cache(root / "cache", WORDS, sents, 4, rng.normal(size=(8, 4)).astype(np.float32))
    return root


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file's bytes (and every link's target) under ``folder``."""
    return {
        str(p.relative_to(folder)): os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
        for p in folder.rglob("*")
        if p.is_symlink() or p.is_file()
    }


def _one_line(code: int, err: str, *parts: str) -> None:
    assert code == 2, err
    line = err.strip().splitlines()[-1]
    assert "Traceback" not in err and line.startswith("error: "), err
    for part in parts:
        assert part in line, line


def _device(path: Path) -> Path:
    """A character device at ``path`` like /dev/null (skips where mknod is not permitted)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod is not permitted here (needs root)")
    return path


def _special(kind: str, path: Path, target: Path) -> Path:
    """Put a ``kind`` of thing at ``path``: a link to ``target``, a device, a pipe, a socket."""
    if kind == "symlink":
        path.symlink_to(target)
    elif kind == "device":
        _device(path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    return path


# ------------------------------------------------------------------ locks


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "foreign", "fifo", "device"])
def test_a_lock_file_that_is_not_a_lock_is_refused_and_left_as_it_is(tmp_path, kind):
    precious, folder = tmp_path / "precious.txt", tmp_path / "c"
    precious.write_text(PRECIOUS)
    folder.mkdir()
    lock = folder / ".lock"
    if kind == "hardlink":
        os.link(precious, lock)
    elif kind == "foreign":
        lock.write_text(PRECIOUS)
    else:
        _special(kind, lock, precious)
    before = os.lstat(lock)
    with pytest.raises(
        UserError, match=rf"^{lock}: not a ctx2static lock file \(.*\); locks are never followed"
    ):
        with folder_lock(folder, "cache"):
            pass
    after = os.lstat(lock)
    assert precious.read_text() == PRECIOUS
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    if kind == "foreign":
        assert lock.read_text() == PRECIOUS


def test_a_lock_left_by_a_dead_process_is_taken_again(tmp_path):
    (tmp_path / ".lock").write_text("pid 1234567: cli.py extract, since 2026-01-01 00:00:00")
    with folder_lock(tmp_path, "cache"):
        assert (tmp_path / ".lock").read_text().startswith(f"pid {os.getpid()}: ")
    assert (tmp_path / ".lock").read_text() == ""


@pytest.mark.parametrize("command", ["extract", "run"])
def test_extract_and_run_never_empty_a_file_through_a_linked_lock(
    tmp_path, inputs, tiny_models, cli_main, command
):
    precious, out = tmp_path / "precious.txt", tmp_path / "out"
    precious.write_text(PRECIOUS)
    out.mkdir()
    (out / ".lock").symlink_to(precious)
    args = {
        "extract": ["extract", "--corpus", inputs / "corpus.txt", "--teacher", tiny_models["bert"]],
        "run": ["run", inputs / "study.toml"],
    }[command]
    code, _, err = cli_main(*args, "--out", out)
    _one_line(code, err, f"{out / '.lock'}: not a ctx2static lock file (it is a symbolic link)")
    assert precious.read_text() == PRECIOUS and (out / ".lock").is_symlink()


# ------------------------------------------------------------------ outputs that are not files


def _writers(inputs: Path, out: Path) -> dict[str, list]:
    v, sim = inputs / "v.txt", inputs / "sim.txt"
    return {
        "fit-student": ["fit-student", "-s", "x2static", "--cache", inputs / "cache", "-o", out],
        "retrofit": ["retrofit", v, "-l", inputs / "lex.txt", "-o", out],
        "eval --json": ["eval", v, "--no-bundled", "--similarity", sim, "--json", out],
        "eval --markdown": ["eval", v, "--no-bundled", "--similarity", sim, "--markdown", out],
        "export": ["export", v, "--format", "word2vec", "-o", out],
    }  # fmt: skip


@pytest.mark.parametrize("kind", ["device", "fifo", "socket", "symlink"])
@pytest.mark.parametrize("command", ["fit-student", "retrofit", "eval --json", "eval --markdown", "export"])
def test_an_output_that_is_not_a_file_is_refused_not_replaced(tmp_path, inputs, cli_main, kind, command):
    precious = tmp_path / "precious.txt"
    precious.write_text(PRECIOUS)
    out = _special(kind, tmp_path / "out.txt", precious)
    before = os.lstat(out)
    code, stdout, err = cli_main(*_writers(inputs, out)[command])
    what = {"device": "a character device", "fifo": "a named pipe", "socket": "a socket"}
    want = "a file or a folder" if command in ("fit-student", "retrofit") else "a file"  # by the path
    if kind == "symlink":
        _one_line(code, err, f"{out}: is a symbolic link (to {precious}); an output never replaces a link")
    else:
        _one_line(code, err, f"{out}: is {what[kind]}, not {want}; remove it")
    assert stdout == ""  # refused before the work
    after = os.lstat(out)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)
    assert precious.read_text() == PRECIOUS


def test_eval_refuses_a_folder_as_its_json_before_evaluating(tmp_path, inputs, cli_main):
    (tmp_path / "j").mkdir()
    args = [
        "eval",
        inputs / "v.txt",
        "--no-bundled",
        "--similarity",
        inputs / "sim.txt",
        "--json",
        tmp_path / "j",
    ]
    code, out, err = cli_main(*args)
    _one_line(code, err, f"{tmp_path / 'j'}: is a folder, not a file")
    assert out == "" and list((tmp_path / "j").iterdir()) == []


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder"])
def test_atomic_write_replaces_only_a_regular_file(tmp_path, kind):
    precious = tmp_path / "precious.txt"
    precious.write_text(PRECIOUS)
    target = tmp_path / "t"
    if kind == "folder":
        target.mkdir()
    else:
        _special(kind, target, precious)
    with pytest.raises(UserError, match=rf"^{target}: is a (named pipe|symbolic link|folder)"):
        with atomic_write(target, "w") as fh:
            fh.write("x")
    assert precious.read_text() == PRECIOUS and os.path.lexists(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious.txt", "t"]  # no temp left


# ------------------------------------------------------------------ folder outputs (atomic_dir)


@pytest.mark.parametrize("how", ["cli", "api", "save"])
def test_a_file_in_a_folder_outputs_place_is_refused_twice_and_kept(tmp_path, inputs, cli_main, how):
    out = tmp_path / "m2v"
    out.write_text(PRECIOUS)
    for _ in range(2):  # the second run used to fail on the first one's leftover
        if how == "api":
            with pytest.raises(UserError, match=f"{out}: is a file, not a folder"):
                api.export(inputs / "v.txt", "model2vec", out)
        elif how == "cli":
            code, _, err = cli_main("export", inputs / "v.txt", "--format", "model2vec", "-o", out)
            _one_line(code, err, f"{out}: is a file, not a folder; remove it or choose another output path")
        else:
            with pytest.raises(UserError, match=f"{out}: is a file, not a folder"):
                Vectors.load(inputs / "v.txt").save(out)  # no suffix: a native folder
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "m2v"] and out.read_text() == PRECIOUS


def test_a_link_to_a_folder_as_a_folder_output_is_refused_and_both_kept(tmp_path, inputs, cli_main):
    real = tmp_path / "real"
    real.mkdir()
    (real / "notes.txt").write_text(PRECIOUS)
    link = tmp_path / "link"
    link.symlink_to(real)
    code, _, err = cli_main("export", inputs / "v.txt", "--format", "model2vec", "-o", link)
    _one_line(code, err, f"{link}: is a symbolic link (to {real}); an output never replaces a link")
    with pytest.raises(UserError, match="is a symbolic link"), atomic_dir(link):
        pass
    assert link.is_symlink() and _snapshot(real) == {"notes.txt": PRECIOUS.encode()}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "link", "real"]


@pytest.mark.parametrize("how", ["export", "save"])
def test_a_folder_output_never_replaces_a_folder_of_other_files(tmp_path, inputs, cli_main, how):
    out = tmp_path / "mine"
    (out / "sub").mkdir(parents=True)
    (out / "thesis.tex").write_text(PRECIOUS)
    (out / "sub" / "data.csv").write_text(PRECIOUS)
    if how == "export":
        code, _, err = cli_main("export", inputs / "v.txt", "--format", "model2vec", "-o", out)
        _one_line(code, err, f"{out}: holds sub and 1 more, which this output does not write")
    else:
        with pytest.raises(UserError, match=f"{out}: holds sub and 1 more"):
            Vectors.load(inputs / "v.txt").save(out)
    assert _snapshot(out) == {"thesis.tex": PRECIOUS.encode(), "sub/data.csv": PRECIOUS.encode()}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "mine"]


@pytest.mark.parametrize("command", ["fit-student", "retrofit", "combine"])
def test_overwrite_onto_a_folder_of_other_files_is_refused_before_the_work(
    tmp_path, inputs, cli_main, monkeypatch, command
):
    import ctx2static.retrofit.files as retrofit_files
    import ctx2static.students.registry as registry

    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text(PRECIOUS)

    def no_work(*_a, **_k):
        raise AssertionError("worked before checking the output")

    monkeypatch.setattr(registry, "fit_cache_student", no_work)
    monkeypatch.setattr(retrofit_files, "retrofit_vectors", no_work)
    args = {
        "fit-student": ["fit-student", "-s", "x2static", "--cache", inputs / "cache"],
        "retrofit": ["retrofit", inputs / "v.txt", "-l", inputs / "lex.txt"],
        "combine": ["combine", inputs / "v.txt", inputs / "native"],
    }[command]
    code, _, err = cli_main(*args, "-o", out, "--overwrite")
    _one_line(code, err, f"{out}: holds thesis.tex, which this output does not write")
    assert _snapshot(out) == {"thesis.tex": PRECIOUS.encode()}


def test_a_native_folder_is_saved_again_with_and_without_its_composer(tmp_path, inputs):
    v = Vectors.load(inputs / "v.txt")
    (tmp_path / "v").mkdir()  # an empty folder made for it
    v.save(tmp_path / "v")
    (tmp_path / "v" / "subwords.npy").write_bytes(b"")  # as if a composer had been saved there
    v.save(tmp_path / "v")
    assert sorted(p.name for p in (tmp_path / "v").iterdir()) == ["meta.json", "vectors.npy", "vocab.tsv"]


def test_a_folder_output_replaces_a_folder_and_leaves_no_old_copy(tmp_path):
    out = tmp_path / "d"
    for text in ("first", "second"):
        with atomic_dir(out) as tmp:
            (tmp / "f").write_text(text)
        assert (out / "f").read_text() == text and [p.name for p in tmp_path.iterdir()] == ["d"]


# ------------------------------------------------------------------ output = input


def _cases(inputs: Path) -> dict[str, tuple[list, Path]]:
    """Each command with an output that is, holds or lies inside one of its inputs, and that input."""
    corpus, cache, v, native = inputs / "corpus.txt", inputs / "cache", inputs / "v.txt", inputs / "native"
    lex, sgns = inputs / "lex.txt", ["fit-student", "-s", "sgns", "--min-count", "1"]
    x2s, m2v = ["fit-student", "-s", "x2static", "--cache", cache], ["--format", "model2vec"]
    ext = ["extract", "--teacher", "minilm", "--corpus"]
    return {
        "fit-student corpus": ([*sgns, "--corpus", corpus, "-o", corpus], corpus),
        "fit-student ..": ([*sgns, "--corpus", inputs / "cache" / ".." / "corpus.txt", "-o", corpus], corpus),
        "fit-student cache": (["fit-student", "-s", "x2static", "--cache", cache, "-o", cache], cache),
        "retrofit lexicon": (["retrofit", v, "-l", lex, "-o", lex], lex),
        "retrofit vectors": (["retrofit", native, "-l", lex, "-o", native], native),
        "eval --json": (["eval", v, "--no-bundled", "--similarity", inputs / "sim.txt", "--json", v], v),
        "export vectors": (["export", native, "--format", "model2vec", "-o", native], native),
        "export folder holds": (["export", native, "--format", "model2vec", "-o", inputs], native),
        "extract": (["extract", "--corpus", corpus, "--teacher", "minilm", "--out", inputs], corpus),
        "compose": (["compose", v, "--cache", cache, "-o", cache], cache),
        "run": (["run", inputs / "study.toml", "--out", inputs], corpus),
        "fit-student into cache": ([*x2s, "-o", cache / "vocab.h5"], cache),
        "compose into cache": (["compose", v, "--cache", cache, "-o", cache / "manifest.json"], cache),
        "export into vectors": (["export", native, *m2v, "-o", native / "m2v"], native),
        "retrofit into vectors": (["retrofit", native, "-l", lex, "-o", native / "retro.txt"], native),
        "extract into corpus": ([*ext, inputs, "--out", inputs / "c"], inputs),
    }  # fmt: skip


@pytest.mark.parametrize(
    "case",
    ["fit-student corpus", "fit-student ..", "fit-student cache", "retrofit lexicon",
     "retrofit vectors", "eval --json", "export vectors", "export folder holds", "extract", "compose", "run",
     "fit-student into cache", "compose into cache", "export into vectors", "retrofit into vectors",
     "extract into corpus"],
)  # fmt: skip
def test_an_output_that_is_holds_or_is_inside_an_input_is_refused(inputs, cli_main, case):
    args, given = _cases(inputs)[case]
    before = _snapshot(inputs)
    code, _, err = cli_main(*args)
    out = Path(str(args[-1]))
    if out.parent == given:
        _one_line(code, err, f"{out}: is inside the input folder {given}", "never writes into an input")
    else:
        verb = "is" if given == out else "holds"
        _one_line(code, err, f"{out}: {verb} the input ", "an output never replaces an input")
    assert _snapshot(inputs) == before


@pytest.mark.parametrize("where", ["corpus", "output"])
def test_a_glove_checkpoint_never_names_the_corpus_or_the_output(inputs, cli_main, where):
    corpus, out = inputs / "corpus.txt", inputs / "v.txt"
    before = _snapshot(inputs)
    checkpoint = {"corpus": corpus, "output": out}[where]
    code, _, err = cli_main(
        "fit-student", "-s", "glove", "--corpus", corpus, "--min-count", "1",
        "--set", f"checkpoint={checkpoint}", "-o", out, "--overwrite",
    )  # fmt: skip
    expected = {
        "corpus": f"{corpus}: is the input {corpus}",
        "output": "is both the checkpoint and the output",
    }
    _one_line(code, err, expected[where])
    assert _snapshot(inputs) == before


def test_the_api_refuses_a_glove_checkpoint_that_names_the_corpus(inputs):
    corpus = inputs / "corpus.txt"
    before = _snapshot(inputs)
    with pytest.raises(UserError, match=f"{corpus}: is the input {corpus}"):
        api.fit(corpus, "glove", min_count=1, epochs=1, checkpoint=str(corpus))
    assert _snapshot(inputs) == before


def test_an_input_reached_by_a_hard_link_is_refused(inputs, tmp_path, cli_main):
    alias = tmp_path / "alias.txt"
    os.link(inputs / "corpus.txt", alias)
    code, _, err = cli_main(
        "fit-student", "-s", "sgns", "--corpus", inputs / "corpus.txt", "--min-count", "1", "-o", alias
    )
    _one_line(code, err, f"{alias}: is the input {inputs / 'corpus.txt'}")
    assert alias.read_text() == (inputs / "corpus.txt").read_text() == "\n".join(tm.SENTENCES * 3) + "\n"


def test_the_api_refuses_an_output_that_is_or_holds_an_input(inputs, tiny_models):
    before = _snapshot(inputs)
    with pytest.raises(UserError, match=f"{inputs}: holds the input {inputs / 'corpus.txt'}"):
        api.extract(inputs / "corpus.txt", str(tiny_models["bert"]), out=inputs)
    with pytest.raises(UserError, match=f"{inputs}: holds the input {inputs / 'corpus.txt'}"):
        api.distill([inputs / "corpus.txt"], str(tiny_models["bert"]), "token", out=inputs)
    with pytest.raises(UserError, match=f"{inputs / 'native'}: is the input"):
        api.export(inputs / "native", "model2vec", inputs / "native")
    assert _snapshot(inputs) == before


# ------------------------------------------------------------------ an input's sidecars are inputs

SIDECARS = [".meta.json", ".subwords.npy", ".tokenizer.json"]


def _sidecar_writers(inputs: Path, out: Path) -> dict[str, list]:
    """Each command that reads the vectors ``v.txt`` and writes ``out``."""
    v, sim, lex, cache = inputs / "v.txt", inputs / "sim.txt", inputs / "lex.txt", inputs / "cache"
    return {
        "export": ["export", v, "--format", "word2vec", "-o", out],
        "export bin": ["export", v, "--format", "word2vec-bin", "-o", out],
        "retrofit": ["retrofit", v, "-l", lex, "-o", out],
        "eval --json": ["eval", v, "--no-bundled", "--similarity", sim, "--json", out],
        "eval --markdown": ["eval", v, "--no-bundled", "--similarity", sim, "--markdown", out],
        "compose": ["compose", v, "--cache", cache, "-o", out],
    }  # fmt: skip


@pytest.mark.parametrize("sidecar", SIDECARS)
@pytest.mark.parametrize(
    "command", ["export", "export bin", "retrofit", "eval --json", "eval --markdown", "compose"]
)
def test_no_output_replaces_a_sidecar_or_composer_file_of_its_input(inputs, cli_main, command, sidecar):
    v = inputs / "v.txt"
    for suffix in SIDECARS[
        1:
    ]:  # the composer's files: their content does not matter, the refusal comes first
        (inputs / f"v.txt{suffix}").write_bytes(b"the composer the user fitted")
    out = inputs / f"v.txt{sidecar}"
    before = _snapshot(inputs)
    code, _, err = cli_main(*_sidecar_writers(inputs, out)[command])
    _one_line(code, err, f"{out}: is the input {v}{sidecar}", "an output never replaces an input")
    assert _snapshot(inputs) == before


def test_the_output_s_own_sidecar_may_not_be_an_input(inputs, cli_main):
    lex = inputs / "o.txt.meta.json"  # a lexicon named as the output's sidecar would be
    lex.write_text("king queen\n")
    code, _, err = cli_main("retrofit", inputs / "v.txt", "-l", lex, "-o", inputs / "o.txt")
    _one_line(code, err, f"{lex}: is the input {lex}")
    assert lex.read_text() == "king queen\n" and not (inputs / "o.txt").exists()


def test_the_api_export_refuses_the_input_s_sidecar(inputs):
    before = _snapshot(inputs)
    with pytest.raises(UserError, match="is the input .*v.txt.meta.json"):
        api.export(inputs / "v.txt", "word2vec", inputs / "v.txt.meta.json")
    assert _snapshot(inputs) == before
    assert Vectors.load(inputs / "v.txt").words == WORDS


def test_eval_refuses_one_file_for_both_json_and_markdown(inputs, cli_main, tmp_path):
    (tmp_path / "r").write_text(PRECIOUS)
    v, sim = inputs / "v.txt", inputs / "sim.txt"
    args = ["eval", v, "--no-bundled", "--similarity", sim, "--json", tmp_path / "r"]
    code, out, err = cli_main(*args, "--markdown", tmp_path / "." / "r")
    _one_line(code, err, f"{tmp_path / '.' / 'r'}: given to both --json and --markdown", "its own path")
    assert out == "" and (tmp_path / "r").read_text() == PRECIOUS


# ------------------------------------------------------------------ names too long for the filesystem


def _fit(inputs: Path, out: Path) -> list:
    return ["fit-student", "-s", "sgns", "--corpus", inputs / "corpus.txt", "--min-count", "1", "-o", out]


@pytest.mark.parametrize(
    "name, part",
    [("a" * 300 + ".txt", "is 304 bytes"), ("d" * 300 + "/v.txt", "is 300 bytes"),
     ("b" * 246 + ".txt", "temporary name")],
    ids=["file name", "folder name", "temporary name"],
)  # fmt: skip
def test_a_name_too_long_is_one_line_before_the_work(tmp_path, inputs, cli_main, name, part):
    out = tmp_path / name
    code, stdout, err = cli_main(*_fit(inputs, out))
    _one_line(code, err, part, "255")
    assert stdout == "" and os.listdir(tmp_path) == ["in"]


def test_a_name_whose_sidecar_temp_is_too_long_is_one_line_before_the_work(tmp_path, inputs, cli_main):
    out = tmp_path / ("c" * 225 + ".txt")  # the table's temp fits; ".tokenizer.json"'s does not
    code, stdout, err = cli_main(*_fit(inputs, out))
    _one_line(code, err, "tokenizer.json", "shorten the name by")
    assert stdout == "" and os.listdir(tmp_path) == ["in"]


def test_the_probe_takes_the_real_temporary_name(tmp_path, monkeypatch):
    seen = []
    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        seen.append(kwargs["prefix"] + kwargs["suffix"])
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    check_writable(tmp_path / "out.txt", beside=[tmp_path / "out.txt.meta.json"])
    assert seen == [f".out.txt.meta.json.{os.getpid()}.-old.tmp"] and os.listdir(tmp_path) == []


def test_enametoolong_anywhere_is_one_line(tmp_path):
    exc = OSError(errno.ENAMETOOLONG, "File name too long", str(tmp_path / ("x" * 300)))
    mapped = environment_error(exc)
    assert mapped is not None and "longer than the filesystem allows" in str(mapped)


def test_a_full_tmpdir_names_tmpdir_not_the_output(tmp_path, inputs, cli_main, monkeypatch):
    import ctx2static.students.registry as registry

    def full(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(registry, "encode_corpus", full)
    code, _, err = cli_main(*_fit(inputs, tmp_path / "v.txt"))
    _one_line(
        code, err, f"{tempfile.gettempdir()}: cannot write the temporary files there (TMPDIR)", "TMPDIR="
    )
    assert "v.txt" not in err


# ------------------------------------------------------------------ two saves to one folder at once


def _racing(monkeypatch, times: int) -> list[Path]:
    """Make another save put its folder in place just before this one's rename, ``times`` times.

    Without renameat2's exchange (where it works, this save swaps with whatever is there and wins).
    """
    raced: list[Path] = []
    real = os.replace
    monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)

    def replace(src, dst, *args, **kwargs):
        if Path(src).is_dir() and len(raced) < times:
            Path(dst).mkdir(exist_ok=True)
            (Path(dst) / "vectors.npy").write_bytes(b"the other save's")
            raced.append(Path(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    return raced


def test_a_folder_save_that_loses_a_race_once_still_lands(tmp_path, monkeypatch):
    v = Vectors(WORDS, np.eye(6, 4, dtype=np.float32))
    raced = _racing(monkeypatch, 1)
    v.save(tmp_path / "out")
    assert raced == [tmp_path / "out"]
    assert Vectors.load(tmp_path / "out").words == WORDS
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no temp, no old folder left


def test_a_folder_save_that_keeps_losing_keeps_its_work_and_says_where(tmp_path, monkeypatch):
    v = Vectors(WORDS, np.eye(6, 4, dtype=np.float32))
    _racing(monkeypatch, 99)
    with pytest.raises(UserError) as info:
        v.save(tmp_path / "out")
    (kept,) = tmp_path.glob("out.kept-*")
    assert str(info.value).startswith(f"{tmp_path / 'out'}: another process saved this folder at the same")
    assert f"kept as {kept}" in str(info.value) and "\n" not in str(info.value)
    assert Vectors.load(kept).words == WORDS
    assert (tmp_path / "out" / "vectors.npy").read_bytes() == b"the other save's"


def test_two_processes_saving_one_folder_both_succeed(tmp_path):
    script = (
        "import sys, numpy as np\n"
        "from ctx2static.vectors import Vectors\n"
        "v = Vectors([str(i) for i in range(50)], np.ones((50, 8), np.float32))\n"
        "for _ in range(40):\n"
        "    v.save(sys.argv[1])\n"
    )
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path / "out")], env=cli_env(), stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    errors = [run.communicate(timeout=120)[1].decode() for run in runs]
    assert [run.returncode for run in runs] == [0, 0], errors
    assert len(Vectors.load(tmp_path / "out")) == 50 and os.listdir(tmp_path) == ["out"]


# ------------------------------------------------------------------ a study's linked cache


def test_a_study_never_deletes_through_a_linked_cache_folder(tmp_path, tiny_models, cli_main):
    (tmp_path / "corpus.txt").write_text("\n".join(tm.SENTENCES * 3) + "\n")
    (tmp_path / "study.toml").write_text(
        f'[corpus]\nfiles = ["corpus.txt"]\nmin_count = 1\n[teachers.t]\nmodel = "{tiny_models["bert"]}"\n'
        '[students.token]\nteacher = "t"\n[eval]\nfamilies = ["similarity"]\n'
    )
    elsewhere, out = tmp_path / "elsewhere", tmp_path / "out"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text(PRECIOUS)
    (out / "caches").mkdir(parents=True)
    (out / "caches" / "t").symlink_to(elsewhere)
    code, _, err = cli_main("-q", "run", tmp_path / "study.toml", "--out", out)
    _one_line(
        code, err, f"{out / 'caches' / 't'}: a symbolic link (to {elsewhere})", "never deletes through a link"
    )
    assert _snapshot(elsewhere) == {"notes.txt": PRECIOUS.encode()}
    (elsewhere / "notes.txt").unlink()  # a link to an empty folder: the cache is written there
    code, _, err = cli_main("-q", "run", tmp_path / "study.toml", "--out", out)
    assert code == 0, err
    assert (out / "caches" / "t").is_symlink() and (elsewhere / "manifest.json").is_file()


# ------------------------------------------------------------------ SIGTERM


def test_sigterm_to_fit_student_removes_its_temporaries_and_says_so(tmp_path):
    """SIGTERM while the encoded corpus is on disk: exit 143, one line, no ids.bin left."""
    rng = np.random.default_rng(0)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(" ".join(rng.choice(tm.WORDS, size=12)) for _ in range(40000)) + "\n")
    temp = tmp_path / "temp"
    temp.mkdir()
    args = ["-q", "fit-student", "-s", "sgns", "--corpus", corpus, "--min-count", "1",
            "-o", tmp_path / "v.txt", "--epochs", "200", "--dim", "8", "--threads", "1"]  # fmt: skip
    proc = subprocess.Popen(
        cli_command(*args), env={**cli_env(), "TMPDIR": str(temp)}, stderr=subprocess.PIPE, text=True
    )
    deadline = time.time() + 300
    while not list(temp.glob("ctx2static-enc-*/ids.bin")) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, "fit-student ended before its encoded corpus appeared"
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=300)[1]
    assert proc.returncode == 143, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("interrupted (SIGTERM): no new vectors were written") and "Traceback" not in err
    assert list(temp.iterdir()) == [] and not (tmp_path / "v.txt").exists()


DISTILL = """
import os, signal, sys, time
from ctx2static import api
from ctx2static.students import registry

def terminated(*_):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(60)

registry.fit_cache_student = terminated
try:
    api.distill(["a b c .", "b c a ."] * 20, teacher=sys.argv[1], student="token", min_count=1)
except KeyboardInterrupt as exc:
    print(type(exc).__name__)
"""


def test_distill_without_out_leaves_no_temporary_cache_after_sigterm(tmp_path, tiny_models):
    temp = tmp_path / "temp"
    temp.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", DISTILL, str(tiny_models["bert"])],
        env={**cli_env(), "TMPDIR": str(temp)}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "Terminated", done.stderr
    assert list(temp.iterdir()) == []


def test_distill_without_out_leaves_no_temporary_cache_after_an_error(tmp_path, tiny_models, monkeypatch):
    import tempfile

    from ctx2static.students import registry

    def fails(*_):
        raise RuntimeError("the student failed")

    monkeypatch.setattr(registry, "fit_cache_student", fails)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    sentences = ["a b c .", "b c a ."] * 20
    with pytest.raises(RuntimeError, match="the student failed"):
        api.distill(sentences, teacher=str(tiny_models["bert"]), student="token", min_count=1)
    assert list(tmp_path.iterdir()) == []
