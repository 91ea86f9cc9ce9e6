"""bench/gpu/check.py on a CPU at small shapes: the run a GPU machine makes, known to work before one sees it.

The script runs in a child process, as on the GPU machine (it puts the tree on the path itself);
``--wheels`` points at an empty folder, so no test installs anything.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ctx2static

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gpu" / "check.py"
SMALL = ["--device", "cpu", "--small", "--threads", "1"]


def _run(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    wheels = tmp_path / "no-wheels"
    wheels.mkdir(exist_ok=True)
    cmd = [sys.executable, str(SCRIPT), *args, "--wheels", str(wheels), "--out", str(tmp_path / "out")]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def _rows(text: str, section: str) -> list[list[str]]:
    """The cells of each row of the table under ``## section``."""
    part = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in part.splitlines() if line.startswith("| ")][1:]  # past the header
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines]


def _cos(cell: str) -> tuple[float, float]:
    mean, low = cell.split(" / ")
    return float(mean), float(low)


def test_cpu_run_writes_a_row_per_teacher_and_precision(tmp_path):
    done = _run(tmp_path, *SMALL, "--sentences", "200", "--compare-sentences", "100", "--no-ray", "--profile")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "out" / "check_cpu.md").read_text()
    assert "Command: `python bench/gpu/check.py --device cpu --small" in text
    assert "**failed**" not in text and "skipped (past" not in text
    wanted = [(k, p) for k in ("minilm", "mpnet") for p in ("float32", "bfloat16")]
    speed = _rows(text, "Speed")
    assert [(r[0], r[1]) for r in speed] == wanted
    for row in speed:
        budget, tokens, rates, shares = row[2], row[3], (row[4], row[6], row[8]), (row[7], row[9])
        assert budget == "4096" and int(tokens.replace(",", "")) > 200  # more than a token a sentence
        assert all(float(r.replace(",", "")) > 0 for r in rates)
        assert all(re.fullmatch(r"\d+%", s) for s in shares)
        cast = row[5]  # the weights-cast forward runs in half precision only
        assert cast == "-" if row[1] == "float32" else float(cast.replace(",", "")) > 0
        assert row[11] == "- / -"  # no GPU memory on a CPU
    fidelity = _rows(text, "Fidelity")
    assert [(r[0], r[1]) for r in fidelity] == wanted
    for row in fidelity:
        assert row[2] == "100" and int(row[4].replace(",", "")) > 100
        means, ase = _cos(row[3]), _cos(row[5])
        if row[1] == "float32":  # the reference itself
            assert means == ase == (1.0, 1.0)
        else:
            assert min(means + ase) > 0.99
    profile = _rows(text, "Where extract spends its time")
    for key in ("minilm", "mpnet"):
        rows = [r for r in profile if r[0] == key]
        assert rows[0][2].startswith("whole extract") and all(r[1] == "bfloat16" for r in rows)
        shares = [float(r[4].rstrip("%")) for r in rows[1:]]
        assert len(shares) > 5 and 99.0 < sum(shares) < 101.0  # the stages split the profiled run
    assert [r[0] for r in _rows(text, "Imports")][:3] == ["torch", "transformers", "tokenizers"]
    assert "the Ray row was left out (--no-ray)" in text


@pytest.mark.slow
def test_cpu_run_on_ray_matches_the_local_cache(tmp_path):
    pytest.importorskip("ray")
    args = [
        "--teachers",
        "minilm",
        "--precisions",
        "float32",
        "--sentences",
        "60",
        "--compare-sentences",
        "20",
    ]
    done = _run(tmp_path, *SMALL, *args)
    assert done.returncode == 0, done.stderr
    [row] = _rows((tmp_path / "out" / "check_cpu.md").read_text(), "Ray")
    assert row[:3] == ["minilm", "float32", "1 (CPU)"]
    assert _cos(row[6])[1] > 0.9999  # the same cache as the local engine's


def test_cuda_without_a_gpu_is_one_line_and_exit_2(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    done = _run(tmp_path, "--device", "cuda")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "--device cuda" in done.stderr and "no GPU" in done.stderr
    assert not (tmp_path / "out").exists()  # no results file, an earlier one would stay as it was


def test_a_missing_dependency_is_named_in_one_line(tmp_path):
    stub = tmp_path / "stub"
    stub.mkdir()
    # imported, it fails as a module that is not installed does
    (stub / "sentencex.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'sentencex'\", name='sentencex')\n"
    )
    paths = [str(stub), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = _run(tmp_path, *SMALL, env=env)
    assert done.returncode == 2
    line = done.stderr.strip()
    assert "\n" not in line and "module 'sentencex' is missing" in line and "bench/gpu/wheels" in line
    assert not (tmp_path / "out").exists()


def test_the_tree_is_linked_with_its_metadata_where_it_is_not_installed(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    check = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, check)  # dataclasses look their module up there
    spec.loader.exec_module(check)

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    how = check.link_tree(tmp_path)
    site = tmp_path / "site"
    assert "not installed" in how and sys.path[0] == str(site)
    assert os.environ["PYTHONPATH"].split(os.pathsep)[0] == str(site)  # for Ray's workers too
    assert (site / "ctx2static").resolve() == ROOT
    [dist] = importlib.metadata.distributions(path=[str(site)])
    assert (dist.metadata["Name"], dist.version) == ("ctx2static", ctx2static.__version__)
