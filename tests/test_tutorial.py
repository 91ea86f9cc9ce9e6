"""The tutorial's commands and code, run in its order from ``docs/tutorial.md`` itself, so they cannot drift.

The page's ``bash`` and ``python`` blocks are run as written, with three swaps a tiny test needs: the
user's file becomes the mini corpus, MiniLM the tiny random BERT (16-d, so ``--dims 256`` becomes 8)
and ``--min-count 2`` lets the mini corpus's few kings into the table.
"""

import re
import shlex
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "tutorial.md"


def _blocks() -> list[tuple[str, str]]:
    """Every ``bash`` and ``python`` block of the page in order, as (language, code)."""
    return re.findall(r"^```(bash|python)\n(.*?)^```", PAGE.read_text(), re.S | re.M)


def test_the_tutorial_names_each_stage_in_order():
    commands = [shlex.split(ln)[2] for lang, code in _blocks() if lang == "bash" for ln in code.splitlines()]
    firsts = [c for i, c in enumerate(commands) if c not in commands[:i]]
    assert firsts == ["extract", "fit-student", "eval", "neighbours", "export"]


@pytest.mark.timeout(300)
def test_the_tutorial_runs(cli_main, tiny_models, mini_corpus, tmp_path, monkeypatch):
    pytest.importorskip("gensim")
    pytest.importorskip("model2vec")
    pytest.importorskip("sklearn")
    monkeypatch.chdir(tmp_path)
    tiny = {"my_text.txt": str(mini_corpus), "minilm": str(tiny_models["bert"]), "256": "8"}
    for lang, code in _blocks():
        if lang == "python":
            exec(compile(code, f"{PAGE.name} block", "exec"), {})
            continue
        for line in code.splitlines():
            command = shlex.split(line)
            assert command[:2] == ["python", "cli.py"], line
            args = [tiny.get(a, a) for a in command[2:]]
            if args[0] == "extract":
                args += ["--min-count", "2", "--threads", "1"]
            code_, out, err = cli_main(*args)
            assert code_ == 0, (line, err)
            if args[0] == "neighbours":
                assert "king" in out and "woman" in out
    assert (tmp_path / "ase-m2v" / "model.safetensors").is_file()
    assert "unbelievableness" in (tmp_path / "ase+words.txt").read_text()
