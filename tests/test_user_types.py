"""A user's type checker checks ``distill(...)`` after the README's install, exactly as written.

The install is editable (``-e``); setuptools' default editable mode is an import hook that no
static checker can follow, so the README asks for ``editable_mode=strict`` (links to the clone's
files, on a path the checkers read). Here that install runs in a fresh venv from a copy of the
tracked files (``--no-deps``: the venv sees this interpreter's packages), and mypy checks a user's
script from a folder of its own.
"""

import shlex
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

from tests.test_readme import ROOT, _bash_blocks

pytestmark = pytest.mark.slow

SCRIPT = """\
from ctx2static import distill

v = distill("my_text.txt", teacher="minilm", student="x2static", max_word=100_000)
w = distill("my_text.txt", teacher="minilm", student="x2static", max_words=100_000)
reveal_type(w)
"""


def _copy_of_the_clone(to: Path) -> Path:
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, tracked):
        path = Path(name.decode())
        if (ROOT / path).is_file():
            (to / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, to / path)
    return to


def test_mypy_names_a_wrong_keyword_and_nothing_inside_ctx2static(tmp_path):
    pytest.importorskip("mypy")
    if not (ROOT / ".git").exists():
        pytest.skip("needs the git clone the README installs from")
    [[_, install]] = _bash_blocks("Try it on your own text")
    words = shlex.split(install)
    settings = words[words.index("--config-settings") + 1]
    assert settings == "editable_mode=strict"
    clone = _copy_of_the_clone(tmp_path / "ctx2static")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(clone)]
    done = subprocess.run([*pip, "--config-settings", settings], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    user = tmp_path / "user"
    user.mkdir()
    (user / "script.py").write_text(SCRIPT)
    checked = subprocess.run(
        [str(python), "-m", "mypy", "--no-incremental", "script.py"],
        cwd=user,
        capture_output=True,
        text=True,
        env={"PATH": str(env_dir / "bin"), "HOME": str(tmp_path)},
    )
    out = checked.stdout
    errors = [ln for ln in out.splitlines() if ": error:" in ln]
    assert any('"max_word"' in ln and 'did you mean "max_words"' in ln for ln in errors), out[-3000:]
    assert all(ln.startswith("script.py:3:") for ln in errors), out[-3000:]
    assert 'Revealed type is "ctx2static.vectors.table.Vectors"' in out, out[-3000:]
