"""Child Pythons run only the code this process would: its interpreter options and its path."""

import subprocess
import sys

from ctx2static.pipeline import child

from ..faults import cli_env

_PLANT = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


def plant(folder, marker):
    """A pip/ package, a numpy.py and a sitecustomize.py in ``folder``, each writing ``marker`` when run."""
    (folder / "pip").mkdir(parents=True)
    for name in ("pip/__init__.py", "pip/__main__.py", "numpy.py", "sitecustomize.py", "runpy.py"):
        (folder / name).write_text(_PLANT.format(marker=str(marker)))


def test_interpreter_flags_are_passed_on(monkeypatch):
    class Flags:
        isolated = ignore_environment = no_user_site = True
        no_site = safe_path = dont_write_bytecode = False
        optimize = 2

    monkeypatch.setattr(sys, "flags", Flags)
    monkeypatch.setattr(sys, "warnoptions", ["error"])
    monkeypatch.setattr(sys, "_xoptions", {"utf8": True, "importtime": "2"})
    assert child.interpreter_flags() == ["-I", "-E", "-s", "-O", "-O", "-Werror", "-Xutf8", "-Ximporttime=2"]


def test_a_module_runs_from_this_process_path_not_the_working_folder(tmp_path, monkeypatch):
    """``python -m pip`` in a folder holding a ``pip/`` runs that folder's; the child runs the real pip."""
    here, marker = tmp_path / "downloads", tmp_path / "ran"
    plant(here, marker)
    monkeypatch.syspath_prepend("")  # as `python -c` and an interactive session have it
    out = subprocess.run(child.module_argv("pip", "--version"), cwd=here, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("pip ")
    assert not marker.exists()
    # the plant is live: the plain command runs it
    subprocess.run([sys.executable, "-m", "pip", "--version"], cwd=here, capture_output=True)
    assert marker.exists()


def test_arguments_reach_the_child_as_given(tmp_path):
    code = "print(sys.argv[1:]); print('' in sys.path)"
    out = subprocess.run(child.python_argv(code, "a b", "-c", ""), capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["['a b', '-c', '']", "False"]


_PARENT = """
import subprocess
from ctx2static.pipeline.child import module_argv
subprocess.run(module_argv("pip", "--version"), check=True)
"""


def test_a_child_keeps_the_parents_E(tmp_path):
    """``python -E`` ignores PYTHONPATH, and so does its child: a sitecustomize.py there never runs."""
    planted, marker = tmp_path / "planted", tmp_path / "ran"
    plant(planted, marker)
    env = {**cli_env(), "PYTHONPATH": str(planted)}
    out = subprocess.run([sys.executable, "-E", "-c", _PARENT], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("pip ")
    assert not marker.exists()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)  # the plant is live without -E
    assert marker.exists()
