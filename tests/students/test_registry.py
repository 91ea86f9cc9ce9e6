from dataclasses import dataclass

import pytest

from ctx2static.errors import UserError
from ctx2static.students.registry import configure, load_student


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
    with pytest.raises(UserError, match="dim='x' is not a valid int"):
        configure(Cfg, {"dim": "x"})


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
