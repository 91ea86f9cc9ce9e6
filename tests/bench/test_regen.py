"""bench/regen.py: the command that makes a results file, read from the file, or why it cannot be rerun."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from .loading import load_script

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


@pytest.fixture(scope="module")
def regen():
    return load_script(ROOT / "bench" / "regen.py")


def test_dry_prints_a_results_files_own_command(regen, capsys):
    assert regen.main([str(RESULTS / "verify.md"), "--dry"]) == 0
    assert (
        capsys.readouterr().out
        == "python bench/speed/bench_verify.py --shards 7 --out bench/results/verify.md\n"
    )


def test_a_command_block_after_its_label_is_read_whole(regen, tmp_path):
    made = tmp_path / "study.md"
    made.write_text(
        "# A study\n\nCommands (repository root;\n`S` the corpus):\n\n```\n"
        "python cli.py run a.toml --out runs/a \\\n    --threads 2\n"
        "python bench/studies/publish.py a.toml runs/a\n```\n"
    )
    assert regen.regen(made).commands == [
        "python cli.py run a.toml --out runs/a --threads 2\npython bench/studies/publish.py a.toml runs/a"
    ]


def test_this_checkout_is_the_editable_install(regen, tmp_path):
    made = tmp_path / "x.md"
    made.write_text("Command: `PYTHONPATH=<pkg> python bench/speed/bench_topk.py --n 400`\n")
    assert regen.regen(made).commands == ["python bench/speed/bench_topk.py --n 400"]


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("downstream_dev.md", "made by a deleted script"),
        ("gpu/0fb2aee/check_cuda.md", "needs a CUDA GPU"),
        ("sentences_mpnet_brown.md", "placeholder to fill in: <words_brown study>"),
    ],
)
def test_says_why_a_file_cannot_be_rerun_and_runs_nothing(regen, capsys, name, why):
    assert regen.main([str(RESULTS / name), "--run"]) == 1
    assert why in capsys.readouterr().err


def test_run_runs_the_command_from_the_repository_root_once_the_user_types_yes(
    regen, tmp_path, capfd, monkeypatch
):
    made = tmp_path / "x.md"
    made.write_text('Command: `python -c "import os; print(os.getcwd())"`\n')
    monkeypatch.setattr("sys.stdin", io.StringIO("yes\n"))
    assert regen.main([str(made), "--run"]) == 0
    out = capfd.readouterr().out
    assert out.startswith('python -c "import os; print(os.getcwd())"\n') and out.splitlines()[-1] == str(ROOT)


@pytest.mark.parametrize("answer", ["", "y\n", "no\n", "yes please\n"])
def test_run_shows_the_command_and_runs_nothing_without_a_yes(regen, tmp_path, capfd, monkeypatch, answer):
    """The old code ran a file's command through bash unseen: an edited file ran what it said."""
    made = tmp_path / "x.md"
    marker = tmp_path / "ran"
    made.write_text(f"Command: `python -c 1; touch {marker}`\n")
    monkeypatch.setattr("sys.stdin", io.StringIO(answer))  # "": no input at all (end of file)
    assert regen.main([str(made), "--run"]) == 1
    out, err = capfd.readouterr()
    assert out.startswith(f"python -c 1; touch {marker}\n") and "not run (only yes runs it)" in err
    assert not marker.exists()


@pytest.mark.parametrize("hidden", ["\x1b[8m", "\u202e", "\x08"])
def test_a_command_with_a_hidden_character_is_shown_escaped_and_never_run(
    regen, tmp_path, capfd, monkeypatch, hidden
):
    made = tmp_path / "x.md"
    marker = tmp_path / "ran"
    made.write_text(f"Command: `python -c 1{hidden}; touch {marker}`\n")
    monkeypatch.setattr("sys.stdin", io.StringIO("yes\n"))
    assert regen.main([str(made), "--run"]) == 1
    out, err = capfd.readouterr()
    assert hidden not in out and hidden.encode("unicode_escape").decode() in out
    assert "a control or invisible character" in err and not marker.exists()


def test_every_results_file_gives_its_command_or_why_not(regen):
    """A command regen cannot find is one a reader cannot find either: the file or the README names it."""
    unfound = [
        str(p.relative_to(RESULTS))
        for p in sorted(RESULTS.rglob("*.md"))
        if p.name != "README.md" and not regen.regen(p).commands
    ]
    assert not unfound


def test_a_recorded_command_names_no_folder_of_this_machine():
    """What a script records of its own call: the shared folder by its variable, the checkout relative."""
    machine = load_script(ROOT / "bench" / "speed" / "machine.py")
    argv = [
        str(ROOT / "bench" / "probes" / "words_split.py"),
        f"--corpus={machine.SHARED.resolve()}/corpus/brown.txt.xz",
        str(ROOT / "runs" / "a"),
        "--prompted",
        "nomic=meaning: {w}",
    ]
    line = machine.argv_line(argv)
    assert line == (
        "bench/probes/words_split.py "
        '--corpus="$CTX2STATIC_SHARED"/corpus/brown.txt.xz runs/a '
        "--prompted 'nomic=meaning: {w}'"
    )
