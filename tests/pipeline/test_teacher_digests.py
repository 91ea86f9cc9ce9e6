"""Teachers prove what they are: package pieces against their pinned sha256 before assembly, assembled
folders against the SHA256SUMS written when they were made, at every load (a flipped byte, each kind)."""

import hashlib
import importlib.metadata as md
import os
import shutil
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from ctx2static.errors import UserError
from ctx2static.fileio import digests
from ctx2static.pipeline import models, nomic
from ctx2static.teachers import BY_NAME

from .. import tiny_models as tm


def _flip(path: Path, at: int | None = None) -> None:
    """One bit of ``path`` flipped in place, its mtime put back (as a careful tamperer would)."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2 if at is None else at] ^= 0x01
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.fixture
def sealed(tmp_path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(os.urandom(4096))
    (folder / "config.json").write_text('{"hidden_size": 8}')
    (folder / "tokenizer.json").write_text('{"model": {"vocab": {"a": 0}}}')
    digests.seal_folder(folder)
    return folder


def test_a_sealed_folder_is_checked_whole_and_refused_when_a_byte_changed(sealed, monkeypatch):
    digests.check_sealed(sealed, "FIX")
    _flip(sealed / "model.safetensors")
    with pytest.raises(UserError, match=r"model\.safetensors does not match the sha256 .*; FIX$"):
        digests.check_sealed(sealed, "FIX")


def test_every_use_hashes_every_file(sealed, monkeypatch):
    """Nothing checked before is trusted: a record of it would sit where a tamperer can rewrite it."""
    real, hashed = digests.sha256_file, []
    monkeypatch.setattr(digests, "sha256_file", lambda p: hashed.append(Path(p).name) or real(p))
    for _ in range(3):
        digests.check_sealed(sealed, "FIX")
    assert sorted(hashed) == sorted(["config.json", "model.safetensors", "tokenizer.json"] * 3)


@pytest.mark.parametrize("name", ["model.safetensors", "tokenizer.json", "config.json"])
def test_a_file_changed_after_use_is_refused_with_the_seal_pinned(sealed, name):
    """Weights, tokenizer, config: used, then changed with its mtime put back; the pinned seal refuses it."""
    pinned = hashlib.sha256((sealed / digests.SEAL).read_bytes()).hexdigest()
    digests.check_sealed(sealed, "FIX", pinned)
    _flip(sealed / name)
    with pytest.raises(UserError, match=rf"{name} does not match the sha256 .*; FIX$"):
        digests.check_sealed(sealed, "FIX", pinned)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda f: (f / "pytorch_model.bin").write_bytes(b"x"), "pytorch_model.bin was not there when"),
        (lambda f: (f / "config.json").unlink(), "config.json is missing"),
        (lambda f: (f / digests.SEAL).unlink(), "holds no readable SHA256SUMS"),
        (lambda f: (f / digests.SEAL).write_text("not a digest  x\n"), "not a list of sha256 digests"),
        (lambda f: (f / "model.safetensors").write_bytes(b""), "model.safetensors does not match"),
    ],
)
def test_any_other_change_to_a_sealed_folder_is_one_line(sealed, change, says):
    change(sealed)
    with pytest.raises(UserError, match=f"{says}.*; FIX$"):
        digests.check_sealed(sealed, "FIX")


class _Dist:
    """A stand-in for an installed distribution: its file list, one file located in ``where``."""

    def __init__(self, path: Path) -> None:
        self.files = [_File(path)]


class _File:
    def __init__(self, path: Path) -> None:
        self.path, self.name = path, path.name

    def locate(self) -> Path:
        return self.path


def _install(monkeypatch, pieces: dict[str, Path]) -> None:
    monkeypatch.setattr(md, "distribution", lambda name: _Dist(pieces[name]))


def _pinned(teacher: str, pieces: dict[str, Path]):
    digests = tuple(hashlib.sha256(p.read_bytes()).hexdigest() for p in pieces.values())
    return replace(BY_NAME[teacher], packages=tuple(pieces), sha256=digests, sealed="")


def test_split_zip_pieces_are_checked_before_assembly_and_the_folder_at_every_load(
    tmp_path, monkeypatch, tiny_models, capsys
):
    buf = tmp_path / "whole.zip"
    with zipfile.ZipFile(buf, "w") as zf:
        for f in Path(tiny_models["bert"]).iterdir():
            zf.write(f, f"all-mpnet-base-v2/{f.name}")
    data = buf.read_bytes()
    pieces = {}
    for i, start in enumerate(range(0, len(data), len(data) // 3 + 1), start=1):
        pieces[f"part-{i:03d}"] = tmp_path / f"m.zip.{i:03d}"
        pieces[f"part-{i:03d}"].write_bytes(data[start : start + len(data) // 3 + 1])
    _install(monkeypatch, pieces)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    t = _pinned("mpnet", pieces)
    folder = tmp_path / "xdg" / "ctx2static" / "mpnet"

    _flip(pieces["part-002"])  # a damaged or substituted piece: nothing is assembled from it
    with pytest.raises(
        UserError, match=r"m\.zip\.002: its sha256 is not the one pinned .*--force-reinstall part-002$"
    ):
        models.ASSEMBLERS["split-zip"](t)
    assert not folder.exists()
    _flip(pieces["part-002"])

    capsys.readouterr()
    assert models.ASSEMBLERS["split-zip"](t) == folder
    assert capsys.readouterr().err == f"mpnet: first use: making {folder} (438 MB) from its packages, once\n"
    assert (folder / digests.SEAL).is_file()
    assert models.ASSEMBLERS["split-zip"](t) == folder and not capsys.readouterr().err  # said once
    weights = next(folder.glob("*.safetensors"))
    _flip(weights)
    with pytest.raises(
        UserError, match=rf"^{folder}: {weights.name} does not match .*delete it \(rm -r {folder}\)"
    ):
        models.ASSEMBLERS["split-zip"](t)
    shutil.rmtree(folder)  # what the line says to do
    assert models.ASSEMBLERS["split-zip"](t) == folder

    # unpacking only: the seal is the same bytes on every machine, so the row pins it, and a
    # changed file whose line in SHA256SUMS is rewritten to match is refused
    sums = folder / digests.SEAL
    t = replace(t, sealed=hashlib.sha256(sums.read_bytes()).hexdigest())
    assert models.ASSEMBLERS["split-zip"](t) == folder
    _flip(weights)
    forged = hashlib.sha256(weights.read_bytes()).hexdigest()
    sums.write_text(
        "".join(
            f"{forged}  {weights.name}\n" if line.endswith(f"  {weights.name}") else line + "\n"
            for line in sums.read_text().splitlines()
        )
    )
    with pytest.raises(UserError, match=r"SHA256SUMS: not the one pinned for this folder.*rm -r"):
        models.ASSEMBLERS["split-zip"](t)


def test_the_nomic_slices_are_checked_against_their_pins(tmp_path, monkeypatch):
    slices = {p: tmp_path / f"gpt4all.zip.{9 + i:03d}" for i, p in enumerate(BY_NAME["nomic"].packages)}
    for path in slices.values():
        path.write_bytes(os.urandom(256))
    _install(monkeypatch, slices)
    t = _pinned("nomic", slices)
    assert models.package_files(t, nomic.SLICE_NAME) == list(slices.values())
    _flip(slices[t.packages[-1]])
    with pytest.raises(
        UserError, match=rf"gpt4all\.zip\.012: its sha256 is not the one pinned .*{t.packages[-1]}$"
    ):
        models.package_files(t, nomic.SLICE_NAME)


def test_an_assembled_nomic_folder_with_a_flipped_byte_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    gguf = tm.save_tiny_nomic_gguf(tmp_path / "tiny.gguf")
    monkeypatch.setattr(models, "package_files", lambda *_: [gguf])
    monkeypatch.setattr(nomic, "extract_gguf", lambda slices, out, install: shutil.copy(slices[0], out))
    folder = Path(models.resolve("nomic"))
    _flip(folder / "model.safetensors")
    with pytest.raises(
        UserError, match=r"model\.safetensors does not match the sha256 written when it was made"
    ):
        models.resolve("nomic")


def test_a_package_teachers_folder_is_checked_against_its_pin_at_every_load(
    tmp_path, monkeypatch, tiny_models
):
    shutil.copytree(tiny_models["bert"], tmp_path / "pkg" / "model")
    monkeypatch.setattr(models, "_package_dir", lambda module: tmp_path / "pkg")
    t = replace(BY_NAME["minilm"], sha256=(digests.folder_sha256(tmp_path / "pkg" / "model"),))
    assert models.ASSEMBLERS["package"](t) == tmp_path / "pkg" / "model"
    _flip(next((tmp_path / "pkg" / "model").glob("*.safetensors")))
    with pytest.raises(
        UserError, match=r"model: its files are not the ones pinned for teacher minilm .*--force-reinstall"
    ):
        models.ASSEMBLERS["package"](t)


def test_every_assembled_teacher_pins_a_digest_for_each_model_piece():
    for t in BY_NAME.values():
        if t.assemble in ("package", "split-zip", "gpt4all-nomic", "gguf", "gemma3-parts"):
            assert len(t.sha256) == len(t.packages) and any(t.sha256), t.name
            assert all(len(d) in (0, 64) for d in t.sha256), t.name


@pytest.mark.parametrize("where", ["file", "proc"])
def test_a_cache_root_that_cannot_hold_folders_is_one_line(tmp_path, monkeypatch, where):
    if where == "file":
        (tmp_path / "cache").write_text("a file")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", "/proc/self/ctx2static-test")
    gguf = tm.save_tiny_nomic_gguf(tmp_path / "tiny.gguf")
    monkeypatch.setattr(models, "package_files", lambda *_: [gguf])
    with pytest.raises(UserError, match=r"cannot be made for the assembled teachers .*set XDG_CACHE_HOME"):
        models.resolve("nomic")


def test_an_output_inside_the_teachers_folder_is_refused_before_anything_is_written(
    tiny_models, corpus_file, tmp_path, cli_main, monkeypatch
):
    """Else the sealed folder holds a file it was not made with, and its fix is deleting the teacher."""
    teacher = tmp_path / "bert"
    shutil.copytree(tiny_models["bert"], teacher)
    before = sorted(p.relative_to(teacher) for p in teacher.rglob("*"))
    code, _, err = cli_main(
        "extract", "--corpus", corpus_file, "--teacher", teacher, "--out", teacher / "cache"
    )
    assert code != 0 and err.strip().endswith("is inside the input folder " + str(teacher) + "; an output "
                                              "never writes into an input: write it elsewhere")  # fmt: skip
    assert sorted(p.relative_to(teacher) for p in teacher.rglob("*")) == before
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # a packaged teacher's folder, by name
    assert models.teacher_folder("mpnet") == tmp_path / "xdg" / "ctx2static" / "mpnet"
    assert models.teacher_folder("bert-base") is None
