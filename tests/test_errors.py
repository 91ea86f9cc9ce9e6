"""Errors speak to their caller: an option as the command line, a study file or a Python call writes it.

Every user error the sources make is read: none outside the command line's own code
names a ``--flag`` in its text (command examples excepted); each goes through ``spell``. The
entry points are then driven to a few of those sites, once per style.
"""

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from ctx2static import api
from ctx2static.errors import (
    MissingSignalError,
    OptionError,
    Style,
    did_you_mean,
    speaking_to,
    spell,
)

ROOT = Path(__file__).resolve().parents[1]
FLAG = re.compile(r"(?<![\w-])--[a-z]")
EXAMPLE = re.compile(r"ctx2static [a-z-]+ [^;)]*|pip install [^;)]*")
CLI_ONLY = {
    ("cli.py", None),  # the command line's own messages
    ("students/registry.py", "command_overrides"),  # parses --set KEY=VALUE and the shortcut flags
    ("students/registry.py", "shortcut_overrides"),
}
ERRORS = {
    "UserError",
    "OptionError",
    "PathError",
    "InputError",
    "OutputError",
    "MissingSignalError",
    "TeacherUnavailableError",
}
NOT_A_PATH = {"value", "names", "checkpoint"}  # a value given, a list of names, an option's clash


def _raise_sites():
    """(file, enclosing function or None, call) of every user error the product makes."""
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.split("/")[0] in ("tests", "bench", "docs", "build", "runs") or rel.startswith("."):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        enclosing = {}  # the innermost function: ast.walk reaches an inner one after its outer one
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                for node in ast.walk(fn):
                    enclosing[node] = fn.name
        for node in ast.walk(tree):  # raised where made, or made by a helper that returns it
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", "")) in ERRORS
            ):
                yield rel, enclosing.get(node), node


def _literal_text(call: ast.Call) -> str:
    """The literal parts of a raise's arguments, an f-string's values as ``x`` (``f"--{key}"``: ``--x``)."""
    parts = []
    for arg in call.args:
        for node in ast.walk(arg):
            if isinstance(node, ast.JoinedStr):
                parts.append("".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                parts.append(node.value)  # an f-string's pieces come here too, each alone
    return " ".join(parts)


def test_no_message_outside_the_command_line_names_a_flag_in_its_text():
    sites = list(_raise_sites())
    assert len(sites) > 250  # every raise of the product is read
    flagged = []
    for rel, fn, node in sites:
        if (rel, None) in CLI_ONLY or (rel, fn) in CLI_ONLY:
            continue
        text = EXAMPLE.sub("", _literal_text(node))
        if FLAG.search(text):
            flagged.append(f"{rel}:{node.lineno}: {text[:80]}")
    assert not flagged, "spell the option (ctx2static.errors.spell) instead:\n" + "\n".join(flagged)


def test_a_message_that_starts_with_a_path_is_a_path_error():
    """``f"{path}: ..."`` names the file to fix: the error says which, as ``.path``, to a caller."""
    plain = []
    for rel, _, node in _raise_sites():
        first = node.args[0] if node.args else None
        if not (isinstance(first, ast.JoinedStr) and len(first.values) > 1):
            continue
        head, after = first.values[0], first.values[1]
        if not (isinstance(head, ast.FormattedValue) and isinstance(after, ast.Constant)):
            continue
        what = ast.unparse(head.value)
        if after.value.startswith(":") and getattr(node.func, "id", "") == "UserError":
            if what not in NOT_A_PATH and "join(" not in what:
                plain.append(f"{rel}:{node.lineno}: {what}")
    assert not plain, "raise InputError(path, ...) or OutputError(path, ...):\n" + "\n".join(plain)


def test_a_path_error_carries_its_path(tmp_path):
    from ctx2static.errors import InputError, OutputError, PathError
    from ctx2static.eval.similarity import read_similarity
    from ctx2static.fileio.outputs import check_writable

    bad = tmp_path / "pairs.tsv"
    bad.write_text("a b\n")
    with pytest.raises(InputError) as read:
        read_similarity(bad)
    (tmp_path / "taken").mkdir()
    with pytest.raises(OutputError) as written:
        check_writable(tmp_path / "taken", folder=False)
    for caught, path in ((read.value, bad), (written.value, tmp_path / "taken")):
        assert (
            isinstance(caught, PathError) and caught.path == str(path) and str(caught).startswith(f"{path}: ")
        )


@pytest.mark.parametrize(
    ("style", "want"),
    [
        (Style.FLAG, ["--dim 100", "--vectors", "--no-vectors", "--cache DIR", "--set init=random", "--pca"]),
        (
            Style.KEY,
            ["dim = 100", "vectors = true", "vectors = false", "cache = DIR", 'init = "random"', "pca"],
        ),
        (Style.KEYWORD, ["dim=100", "vectors=True", "vectors=False", "cache=DIR", "init='random'", "pca="]),
    ],
)
def test_an_option_is_spelled_as_its_user_writes_it(style, want):
    with speaking_to(style):
        got = [
            spell("dim", 100),
            spell("vectors", True),
            spell("vectors", False),
            spell("cache", "DIR"),
            spell("init", "random", via_set=True),
            spell("pca"),
        ]
    assert got == want


def test_the_command_line_is_the_default_and_a_block_restores_the_style():
    assert spell("min_count", 5) == "--min-count 5"
    with speaking_to(Style.KEYWORD):
        with speaking_to(Style.KEY):
            assert spell("min_count", 5) == "min_count = 5"
        assert spell("min_count", 5) == "min_count=5"
    assert spell("min_count", 5) == "--min-count 5"


def test_the_api_answers_with_keywords(tmp_path):
    """The same raise site as the command line's below (export's format check), called from Python."""
    from ctx2static.vectors import Vectors

    vectors = Vectors(["a", "b"], np.eye(2, dtype=np.float32))
    with pytest.raises(OptionError, match=r"fmt='sentence-transformers' holds float32 or float16 rows"):
        api.export(vectors, "sentence-transformers", tmp_path / "st", score=False, quantize="int8")


def test_the_command_line_answers_with_flags_though_it_runs_the_api(cli_main, tmp_path):
    from ctx2static.vectors import Vectors

    Vectors(["a", "b"], np.eye(2, dtype=np.float32)).save(tmp_path / "v")
    args = ["export", tmp_path / "v", "--format", "sentence-transformers", "--quantize", "int8", "--no-eval"]
    code, _, err = cli_main(*args, "--out", tmp_path / "st")
    assert code == 2
    assert "error: --format sentence-transformers holds float32 or float16 rows" in err
    assert "int8 is for --format model2vec" in err


def test_a_study_answers_with_its_keys_and_the_api_with_keywords(tmp_path):
    """A missing signal, from a study file and from ``distill``: each names the option its own way."""
    from ctx2static.students.registry import check_signals, student_config

    config = student_config("bert-sg", {})
    with speaking_to(Style.KEY), pytest.raises(MissingSignalError, match="set vectors = true in") as study:
        check_signals("bert-sg", config, [], "study.toml: students.b", "set {} in [teachers.t]")
    with speaking_to(Style.KEYWORD), pytest.raises(MissingSignalError, match="pass vectors=True") as call:
        check_signals("bert-sg", config, [], "distill(student='bert-sg')", "pass {}")
    assert study.value.signals == call.value.signals == ("occ_vec",)


def test_an_option_error_records_its_options_and_style():
    with speaking_to(Style.KEYWORD):
        err = OptionError(f"{spell('pca', 900)}: too wide", "pca")
    assert err.options == ("pca",) and err.style is Style.KEYWORD and str(err) == "pca=900: too wide"


def test_a_bad_value_or_an_unknown_option_is_an_option_error_naming_it():
    from ctx2static.options import configure
    from ctx2static.pipeline.config import parse_layers
    from ctx2static.students import x2static

    cases = [
        (lambda: configure(x2static.Config, {"epochs": "x"}), "epochs", "--set epochs=x is not"),
        (lambda: configure(x2static.Config, {"epoch": 2}), "epoch", "x2static has no option 'epoch'"),
        (lambda: x2static.Config(epochs=0), "epochs", "--epochs 0 must be"),
        (lambda: parse_layers("9", 5, "word_layer"), "word_layer", "--word-layer 9: names no hidden state"),
    ]
    for make, option, start in cases:
        with pytest.raises(OptionError) as caught:
            make()
        assert caught.value.options == (option,) and str(caught.value).startswith(start)


def test_did_you_mean_names_the_closest_choice():
    assert did_you_mean("x2statc", ["x2static", "ase"]) == " (did you mean 'x2static'?)"


def test_did_you_mean_stays_quiet_when_nothing_is_close():
    assert did_you_mean("qqqq", ["x2static", "ase"]) == ""
