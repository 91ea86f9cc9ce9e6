"""No command writes among the package's own files: in a clone, ``--out cache`` is the ``cache`` package.

Each refusal is one line (exit 2) before any work, so nothing is written into the repository; a
folder of one's own in the clone (``runs/``) and any folder outside it stay writable.
"""

import numpy as np
import pytest

from ctx2static.errors import UserError
from ctx2static.fileio.outputs import check_writable, refuse_package
from ctx2static.resources import PACKAGE_DIR
from ctx2static.vectors import Vectors


@pytest.mark.parametrize(
    ("target", "inside"),
    [(".", True), ("cache", True), ("ase.txt", False), ("ase", False), ("data/x", False), ("eval/x", True)],
)
def test_an_output_among_the_package_files_is_refused(target, inside):
    before = sorted(p.name for p in PACKAGE_DIR.iterdir())
    with pytest.raises(UserError, match="inside the ctx2static package") as info:
        check_writable(PACKAGE_DIR / target, inside=inside)
    assert "\n" not in str(info.value)
    assert sorted(p.name for p in PACKAGE_DIR.iterdir()) == before


def test_a_folder_of_ones_own_in_the_clone_and_outside_it_are_writable(tmp_path):
    check_writable(tmp_path / "cache", inside=True)
    refuse_package(PACKAGE_DIR / "runs" / "default")  # check_writable would probe the clone: not here
    refuse_package(PACKAGE_DIR / "bench" / "results" / "x.md")


def test_the_tutorial_mistake_in_the_clone_is_one_line(cli_main, tmp_path, monkeypatch):
    Vectors(["king", "queen"], np.eye(2, dtype=np.float32)).save(tmp_path / "ase")
    monkeypatch.chdir(PACKAGE_DIR)
    code, _, err = cli_main("export", tmp_path / "ase", "--format", "model2vec", "-o", "ase-m2v")
    assert code == 2
    assert err.count("\n") == 1 and "ase-m2v: is inside the ctx2static package" in err
    assert not (PACKAGE_DIR / "ase-m2v").exists()
