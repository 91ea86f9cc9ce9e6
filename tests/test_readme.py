"""The front page's commands: CI installs and tests as it says, and its command-line quickstart runs.

The Python quickstart is run by ``test_api.py``; the corpus examples by ``text/test_corpus_formats.py``.
"""

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _bash_blocks(section: str) -> list[list[str]]:
    """The ``bash`` blocks under the README heading ``## {section}``, one list of lines per block."""
    text = README.read_text()
    assert f"\n## {section}\n" in text, f"README.md lost its section {section!r}"
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [block.strip().splitlines() for block in re.findall(r"```bash\n(.*?)```", body, re.S)]


def _extras(command: str) -> set[str]:
    """The extras of the first ``-e ".[a,b]"`` in a pip command line."""
    found = re.search(r'-e "\.\[([a-z,]+)\]"', command)
    assert found, f"no editable install with extras in {command!r}"
    return set(found.group(1).split(","))


def test_ci_installs_and_tests_as_the_readme_says():
    [[install, test]] = _bash_blocks("Install and run")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test in ci, "CI does not run the README's test command"
    [ci_install] = [ln for ln in ci if "pip install" in ln and "-e " in ln]
    assert "torch==2.13.0" in install and "torch==2.13.0" in ci_install
    assert _extras(install.split("&&")[0]) <= _extras(ci_install)


def test_the_first_install_starts_from_a_clone_and_is_a_part_of_ci():
    [[clone, install]] = _bash_blocks("Try it on your own text")
    assert clone.startswith("git clone ") and clone.endswith("&& cd ctx2static")
    ci_install = next(ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if "-e " in ln)
    assert "torch==2.13.0" in install and _extras(install) <= _extras(ci_install)
    assert not _extras(install) & {"dev", "scale"}, "a user trying the tool needs no dev tools or Ray"


def test_the_command_line_quickstart_runs(cli_main, tiny_models, mini_corpus, tmp_path, monkeypatch):
    [lines] = _bash_blocks("Quickstart")
    commands = [shlex.split(ln.split("#")[0]) for ln in lines]
    assert {c[0] for c in commands} == {"ctx2static"}, "the front page runs the installed command"
    assert [c[1] for c in commands][:2] == ["extract", "fit-student"]
    monkeypatch.chdir(tmp_path)
    tiny = {"corpus.txt.xz": str(mini_corpus), "minilm": str(tiny_models["bert"])}
    for command in commands:
        args = [tiny.get(a, a) for a in command[1:]]
        if args[0] == "extract":
            args += ["--max-sentences", "300", "--threads", "1"]
        code, _, err = cli_main(*args)
        assert code == 0, (args, err)
    assert (tmp_path / "x2static-m2v" / "model.safetensors").is_file()


def test_ci_runs_the_student_side_on_the_core_install_the_readme_names():
    assert "`pip install -e . --config-settings editable_mode=strict` (no extras)" in README.read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert '"$scratch/core/bin/pip" install -q -e . --config-settings editable_mode=strict\n' in ci, (
        "CI does not install the core alone"
    )
    assert ci.index("/core/bin/ctx2static") < ci.index("python -m pytest -q")
