"""bench/README.md lists every bench script with its status, and each maintained bench still starts.

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
STATUSES = {"maintained bench", "one-off probe", "helper", "archived"}


def _listed() -> dict[str, str]:
    """Script path (relative to bench/) -> status, from the README's table."""
    rows = re.findall(r"^\| `([\w/]+\.py)` \| ([\w -]+?) \|", (BENCH / "README.md").read_text(), re.M)
    return dict(rows)


def test_every_bench_script_is_listed_with_a_status():
    listed = _listed()
    scripts = {str(p.relative_to(BENCH)) for p in BENCH.rglob("*.py")}
    assert scripts == set(listed), f"unlisted: {scripts - set(listed)}; gone: {set(listed) - scripts}"
    assert set(listed.values()) <= STATUSES
    assert all(s.startswith("archive/") == (status == "archived") for s, status in listed.items())


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
