"""bench/README.md lists every bench script with its status and every results file with what made it.

A maintained bench is rerun when the code it measures changes, so an import or an option that the
code no longer has should fail here, not months later by hand; ``--help`` imports the script and
builds its parser without measuring anything.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ctx2static

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
STATUSES = {"maintained bench", "helper"}  # a one-off probe is deleted once its results are written


def _listed() -> dict[str, str]:
    """Script path (relative to bench/) -> status, from the README's table."""
    rows = re.findall(r"^\| `([\w/]+\.py)` \| ([\w -]+?) \|", (BENCH / "README.md").read_text(), re.M)
    return dict(rows)


def test_every_bench_script_is_listed_with_a_status():
    listed = _listed()
    scripts = {str(p.relative_to(BENCH)) for p in BENCH.rglob("*.py")}
    assert scripts == set(listed), f"unlisted: {scripts - set(listed)}; gone: {set(listed) - scripts}"
    assert set(listed.values()) <= STATUSES, set(listed.values()) - STATUSES


def test_no_script_names_a_machine_folder():
    """Paths come from options and $CTX2STATIC_SHARED, so a clone anywhere runs the benches."""
    scripts = [p for p in BENCH.rglob("*") if p.suffix in (".py", ".sh", ".toml")]
    named = {str(p.relative_to(BENCH)) for p in scripts if re.search(r"/work/|/root/|/home/", p.read_text())}
    assert not named


# A folder of the machine a run happened on: the home, scratch and temporary folders, an installed package.
MACHINE_FOLDER = re.compile(r"(?<![\w.$\"])/(work|root|home|Users|tmp|scratch|mnt|opt)/|site-packages")


def _machine_folders(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if MACHINE_FOLDER.search(line)]


def test_no_results_file_names_a_machine_folder():
    """Paths relative to the repository, the shared corpus by $CTX2STATIC_SHARED, a teacher by its name.

    A results file's command is rerun by whoever reads it (``bench/regen.py``); a folder of the
    machine it ran on is one they do not have.
    """
    results = [p for p in (BENCH / "results").rglob("*") if p.suffix in (".md", ".txt", ".json", ".csv")]
    named = {str(p.relative_to(BENCH)): _machine_folders(p.read_text(encoding="utf-8")) for p in results}
    assert not {k: v for k, v in named.items() if v}


def test_the_machine_folder_check_catches_them():
    named = (
        "--out /work/scratch/runs/x",
        "Teacher minilm (/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/m/model, float32)",
        "error: /tmp/tmpc2e8kiry/evil/config.json: ...",
        "--corpus /home/me/shared/corpus/brown.txt.xz",
    )
    kept = ('--corpus "$CTX2STATIC_SHARED"/corpus/x.txt', "--out runs/x", "HOME=W/home/.cache", "TMP/evil")
    assert _machine_folders("\n".join(named)) == list(named)
    assert _machine_folders("\n".join(kept)) == []


def test_every_results_file_says_what_made_it_and_is_on_the_results_page():
    results = {p.name for p in (BENCH / "results").iterdir() if p.is_file()}
    table = (BENCH / "README.md").read_text().split("## Results files", 1)[1]
    index = (ROOT / "docs" / "results.md").read_text().split("## Every results file", 1)[1]
    page = index.split("\n## ", 1)[0]  # the index table alone, not a mention elsewhere on the page
    assert results <= set(re.findall(r"`([\w.-]+)`", table)), "a results file missing from bench/README.md"
    assert {r for r in results if r.endswith(".md")} <= set(re.findall(r"`([\w.-]+\.md)`", page))


MAINTAINED = sorted(s for s, status in _listed().items() if status == "maintained bench")


@pytest.mark.slow
@pytest.mark.parametrize("script", MAINTAINED)
def test_maintained_bench_starts(script):
    env = {**os.environ, "PYTHONPATH": str(Path(ctx2static.__file__).parent.parent)}  # this checkout
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--help"], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout
