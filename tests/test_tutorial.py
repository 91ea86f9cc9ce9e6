"""The tutorial's commands and code, run in its order from ``docs/tutorial.md`` itself, so they cannot drift.

The page's ``bash`` and ``python`` blocks are run as written, in the folder the page makes (its
``mkdir``/``cd``, with ``~`` a temporary home), with three swaps a tiny test needs: the user's file
is the mini corpus copied there, MiniLM the tiny random BERT (16-d, so ``--dims 256`` becomes 8)
and ``--min-count 2`` lets the mini corpus's few kings into the table. The package folder is left as
it was.
"""

import lzma
import os
import re
import shlex
from pathlib import Path

import pytest

from ctx2static.resources import PACKAGE_DIR

PAGE = Path(__file__).resolve().parents[1] / "docs" / "tutorial.md"


def _blocks() -> list[tuple[str, str]]:
    """Every ``bash`` and ``python`` block of the page in order, as (language, code)."""
    return re.findall(r"^```(bash|python)\n(.*?)^```", PAGE.read_text(), re.S | re.M)


def _commands() -> list[list[str]]:
    """Every shell command of the page's ``bash`` blocks in order (``a && b`` is two)."""
    lines = [ln for lang, code in _blocks() if lang == "bash" for ln in code.splitlines()]
    return [shlex.split(part) for ln in lines for part in ln.split("&&")]


def test_the_tutorial_makes_its_folder_then_names_each_stage_in_order():
    commands = _commands()
    assert [c[0] for c in commands[:2]] == ["mkdir", "cd"] and commands[0][-1] == commands[1][1]
    stages = [c[1] for c in commands[2:]]
    firsts = [c for i, c in enumerate(stages) if c not in stages[:i]]
    assert firsts == ["extract", "fit-student", "eval", "neighbours", "export"]


def _shell(command: list[str], home: Path) -> None:
    """The page's ``mkdir -p DIR`` and ``cd DIR``, with ``~`` the test's home."""
    folder = Path(command[-1].replace("~", str(home), 1))
    if command[0] == "mkdir":
        folder.mkdir(parents=True, exist_ok=True)
    else:
        os.chdir(folder)


@pytest.mark.timeout(300)
def test_the_tutorial_runs(cli_main, tiny_models, mini_corpus, tmp_path, monkeypatch):
    pytest.importorskip("gensim")
    pytest.importorskip("model2vec")
    pytest.importorskip("sklearn")
    monkeypatch.chdir(tmp_path)  # restored at the end: the page's own cd moves on from here
    before = sorted(p.name for p in PACKAGE_DIR.iterdir())
    tiny = {"minilm": str(tiny_models["bert"]), "256": "8"}
    for lang, code in _blocks():
        if lang == "python":
            exec(compile(code, f"{PAGE.name} block", "exec"), {})
            continue
        for command in (shlex.split(part) for ln in code.splitlines() for part in ln.split("&&")):
            if command[0] in ("mkdir", "cd"):
                _shell(command, tmp_path)
                if command[0] == "cd":  # the page: "copy your text file into the folder"
                    Path("my_text.txt").write_bytes(lzma.decompress(mini_corpus.read_bytes()))
                continue
            assert command[0] == "ctx2static", command
            args = [tiny.get(a, a) for a in command[1:]]
            if args[0] == "extract":
                args += ["--min-count", "2", "--threads", "1"]
            code_, out, err = cli_main(*args)
            assert code_ == 0, (command, err)
            if args[0] == "neighbours":
                assert "king" in out and "woman" in out
    work = Path.cwd()
    assert work == tmp_path / "my-vectors"
    assert (work / "ase-m2v" / "model.safetensors").is_file()
    assert "unbelievableness" in (work / "ase+words.txt").read_text()
    assert sorted(p.name for p in PACKAGE_DIR.iterdir()) == before
