"""No command writes among the package's own files: in a clone, ``--out cache`` is the ``cache`` package.

Each refusal is one line (exit 2) before any work, so nothing is written into the repository; a
folder of one's own in the clone (``runs/``) and any folder outside it stay writable.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from ctx2static.errors import UserError
from ctx2static.fileio.outputs import check_writable, refuse_package
from ctx2static.resources import PACKAGE_DIR
from ctx2static.vectors import Vectors


@pytest.mark.parametrize(
    ("target", "inside"),
    [
        *[
            (".", True),
            ("cache", True),
            ("ase.txt", False),
            ("ase", False),
            ("data/x", False),
            ("eval/x", True),
        ],
        # folders of the clone that are no subpackage: the old rule let each of these be written
        *[("docs/x.txt", False), (".git/x.txt", False), ("bench/results/x.txt", False), ("bench/x", True)],
        ("runs", True),  # the folder itself: its runs go under it
    ],
)
def test_an_output_among_the_package_files_is_refused(target, inside):
    before = sorted(p.name for p in PACKAGE_DIR.iterdir())
    with pytest.raises(UserError, match="inside the ctx2static package") as info:
        check_writable(PACKAGE_DIR / target, inside=inside)
    assert "\n" not in str(info.value)
    assert sorted(p.name for p in PACKAGE_DIR.iterdir()) == before


def test_runs_in_the_clone_and_any_folder_outside_it_are_writable(tmp_path):
    check_writable(tmp_path / "cache", inside=True)
    refuse_package(PACKAGE_DIR / "runs" / "default")  # check_writable would probe the clone: not here
    refuse_package(PACKAGE_DIR / "runs" / "a" / "b.txt")


def test_only_a_bench_script_of_the_clone_writes_its_reports(monkeypatch, tmp_path):
    report = PACKAGE_DIR / "bench" / "results" / "x.md"
    with pytest.raises(UserError, match="inside the ctx2static package"):
        refuse_package(report)  # this process is pytest, not a bench script
    monkeypatch.setattr(sys, "argv", [str(PACKAGE_DIR / "bench" / "probes" / "some_probe.py")])
    refuse_package(report)
    with pytest.raises(UserError, match="inside the ctx2static package"):
        refuse_package(PACKAGE_DIR / "docs" / "x.md")  # a bench script writes only its reports
    (tmp_path / "bench").mkdir()
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "bench" / "probe.py")])  # a bench/ of another tree
    with pytest.raises(UserError, match="inside the ctx2static package"):
        refuse_package(report)


@pytest.mark.parametrize("target", ["docs/x.txt", ".git/x.txt", "bench/results/x.txt"])
def test_an_export_into_the_clones_own_folders_is_one_line_and_writes_nothing(
    cli_main, tmp_path, monkeypatch, target
):
    Vectors(["king", "queen"], np.eye(2, dtype=np.float32)).save(tmp_path / "ase")
    monkeypatch.chdir(PACKAGE_DIR)
    code, _, err = cli_main("export", tmp_path / "ase", "--format", "word2vec", "-o", target)
    assert code == 2
    assert err.count("\n") == 1 and f"{target}: is inside the ctx2static package" in err
    name = Path(target).name
    assert not [p for p in (PACKAGE_DIR / target).parent.iterdir() if name in p.name]  # nor its temporaries


def test_the_tutorial_mistake_in_the_clone_is_one_line(cli_main, tmp_path, monkeypatch):
    Vectors(["king", "queen"], np.eye(2, dtype=np.float32)).save(tmp_path / "ase")
    monkeypatch.chdir(PACKAGE_DIR)
    code, _, err = cli_main("export", tmp_path / "ase", "--format", "model2vec", "-o", "ase-m2v")
    assert code == 2
    assert err.count("\n") == 1 and "ase-m2v: is inside the ctx2static package" in err
    assert not (PACKAGE_DIR / "ase-m2v").exists()
