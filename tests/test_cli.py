import subprocess
import sys

import pytest


def run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "ctx2static.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


def test_help_lists_every_stage():
    out = run("--help")
    assert out.returncode == 0
    for command in ("extract", "cache", "fit-student", "retrofit", "eval", "run", "export"):
        assert command in out.stdout


@pytest.mark.parametrize(
    "setup,args,message",
    [
        (
            None,
            ["fit-student", "-s", "sgns", "--corpus", "missing.txt", "-o", "v.txt"],
            "missing.txt: no such file",
        ),
        (
            "empty",
            ["fit-student", "-s", "sgns", "--corpus", "c.txt", "-o", "v.txt"],
            "c.txt: the corpus has no tokens",
        ),
        (
            "binary",
            ["fit-student", "-s", "sgns", "--corpus", "c.txt", "-o", "v.txt"],
            "c.txt: line 1 holds a NUL byte",
        ),
        (
            "latin1",
            ["fit-student", "-s", "sgns", "--corpus", "c.txt", "-o", "v.txt"],
            "c.txt: line 2 is not valid UTF-8",
        ),
        ("ragged", ["eval", "v.txt"], "v.txt: line 3 has 1 values, expected 2"),
        (None, ["eval", "nothing.txt"], "nothing.txt: no such vectors file"),
        (
            "empty",
            ["fit-student", "-s", "nope", "--corpus", "c.txt", "-o", "v.txt"],
            "unknown student 'nope'",
        ),
        (
            "empty",
            ["fit-student", "-s", "sgns", "--corpus", "c.txt", "-o", "v.txt", "--set", "dimm=3"],
            "no option 'dimm'",
        ),
    ],
)
def test_bad_input_is_one_line_without_traceback(tmp_path, setup, args, message):
    if setup == "empty":
        (tmp_path / "c.txt").write_text("\n\n")
    elif setup == "binary":
        (tmp_path / "c.txt").write_bytes(b"\x00\x01\x02garbage\n")
    elif setup == "latin1":
        (tmp_path / "c.txt").write_bytes("fine line\ncaf\xe9\n".encode("latin1"))
    elif setup == "ragged":
        (tmp_path / "v.txt").write_text("2 2\na 1 2\nb 1\n")
    out = run(*args, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert not (tmp_path / "v.txt").exists() or setup == "ragged"
