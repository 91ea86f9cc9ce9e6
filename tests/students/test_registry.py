import subprocess
import sys
from dataclasses import dataclass

import pytest

from ctx2static.errors import UserError
from ctx2static.students.registry import configure, load_student

from ..faults import cli_env


@dataclass(frozen=True)
class Cfg:
    dim: int = 100
    lr: float = 0.025
    sample: float | None = 1e-3
    shrink: bool = True


def test_configure_casts_and_keeps_defaults():
    c = configure(Cfg, {"dim": "50", "sample": "none", "shrink": "false"})
    assert c == Cfg(dim=50, lr=0.025, sample=None, shrink=False)
    assert configure(Cfg, {"lr": "0.5"}).lr == 0.5
    assert configure(Cfg, {"dim": 7}).dim == 7


def test_configure_rejects_unknown_and_bad_values():
    with pytest.raises(UserError, match="no option 'dims'.*dim, lr"):
        configure(Cfg, {"dims": "5"})
    with pytest.raises(UserError, match="--set dim=x is not a valid int"):
        configure(Cfg, {"dim": "x"})


def test_every_row_loads_a_student_of_its_source():
    from ctx2static.students.registry import STUDENTS, Source
    from ctx2static.students.student import CacheStudent, TextStudent

    for name, row in STUDENTS.items():
        found = load_student(name)
        assert isinstance(found, TextStudent if row.source is Source.TEXT else CacheStudent), name
        assert found.memory is None or found.sized_by, name  # a sized student names what sizes it


def test_a_row_whose_module_gives_no_student_of_its_kind_is_a_wiring_error(tmp_path, monkeypatch):
    from ctx2static.students.registry import STUDENTS, Source, StudentSpec

    (tmp_path / "half_student.py").write_text(
        "from ctx2static.students.sgns import STUDENT\n"  # a text student, under a cache row
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(STUDENTS, "half", StudentSpec("half", "half_student", Source.CACHE, "wired wrong"))
    with pytest.raises(TypeError, match=r"half_student must end with STUDENT = CacheStudent\(Config, fit\)"):
        load_student("half")


@pytest.mark.slow
def test_a_student_whose_fit_does_not_take_its_config_fails_the_type_check(tmp_path, monkeypatch):
    """The STUDENT line is where mypy checks a fit against the registry's call and its own Config."""
    from pathlib import Path

    from mypy import api as mypy

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "ctx2static").symlink_to(root)
    (tmp_path / "toy.py").write_text(
        "import numpy as np\n"
        "from ctx2static.cache import Cache\n"
        "from ctx2static.students import ase\n"
        "from ctx2static.students.student import CacheStudent\n"
        "from ctx2static.vectors import Vectors\n"
        "def good(cache: Cache, config: ase.Config) -> Vectors:\n    raise NotImplementedError\n"
        "def other_config(cache: Cache, config: int) -> Vectors:\n    raise NotImplementedError\n"
        "def no_vectors(cache: Cache, config: ase.Config) -> np.ndarray:\n    raise NotImplementedError\n"
        "STUDENT = CacheStudent(ase.Config, good)\n"
        "WRONG = CacheStudent(ase.Config, other_config)\n"
        "ARRAY = CacheStudent(ase.Config, no_vectors)\n"
    )
    monkeypatch.setenv("MYPYPATH", str(tmp_path / "site"))
    monkeypatch.chdir(tmp_path)
    out, _, code = mypy.run([f"--cache-dir={tmp_path / 'cache'}", "--follow-imports=silent", "toy.py"])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert code == 1 and [e.split(":")[1] for e in errors] == ["13", "14"], out


def test_unknown_student():
    with pytest.raises(UserError, match="unknown student 'nope'"):
        load_student("nope")


def test_fit_student_help_shows_every_registered_student(cli_main):
    import re

    from ctx2static.students.registry import STUDENTS, Source

    code, out, _ = cli_main("fit-student", "--help")
    help_text = " ".join(out.split())
    text, cache = re.search(r"Students: (.*?) \(from --corpus\); (.*?) \(from --cache", help_text).groups()
    listed = {Source.TEXT: text.split(", "), Source.CACHE: cache.split(", ")}
    assert code == 0
    for source, names in listed.items():
        assert names == [n for n, s in STUDENTS.items() if s.source is source]


BOTH = "pass either --corpus (text students) or --cache (cache students), not both"


@pytest.mark.parametrize(
    "args, line",
    [
        (["--set", "negative"], "--set 'negative': write KEY=VALUE, e.g. --set negative=10"),
        (["--corpus", "c.txt", "--cache", "c"], BOTH),
        ([], "pass --corpus FILE (text students) or --cache DIR (distilled students)"),
    ],
)
def test_fit_student_refuses_a_mistake_in_one_line_before_any_work(tmp_path, cli_main, args, line):
    code, _, err = cli_main("fit-student", "-s", "sgns", "-o", tmp_path / "v.txt", *args)
    assert code == 2 and err.strip().splitlines()[-1] == f"error: {line}"
    assert not (tmp_path / "v.txt").exists()


def test_the_command_line_starts_without_the_registry():
    """fit-student's help reads the registry when shown: other commands start without numba and h5py."""
    code = (
        "import sys\n"
        "from ctx2static.cli import cli\n"
        "assert 'ctx2static.students.registry' not in sys.modules and 'numba' not in sys.modules\n"
        "assert 'Students: sgns' in cli.commands['fit-student'].help\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=cli_env())
