"""SIGKILL at any rename of a word2vec file and its sidecars: the old set, the new set, or one line.

A child process saves a set over another one and dies (``os._exit``, as under ``kill -9``: no
``finally``, no rollback) just before its k-th rename or removal in the output's folder, for every
k. What is left must be the old set whole, the new set whole, or a set that loading refuses in one
line; never a table read with another save's metadata, counts or composer.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ctx2static.errors import InputError
from ctx2static.vectors import Vectors

from ..faults import cli_env
from .test_faults_vector_files import with_composer

SAVE = """
import os, pathlib, sys
from pathlib import Path
from ctx2static.fileio import atomic
from ctx2static.tests.reliability.test_faults_vector_files import with_composer

out, kind, at = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
v = with_composer()
if kind.startswith("new"):
    v.matrix = v.matrix * 2
    v.counts = v.counts + 5
if kind.endswith("bare"):
    v.composer = None
calls = 0

def dying(real):
    def call(*args, **kwargs):
        global calls
        if any(str(a).startswith(str(out.parent)) for a in args):
            calls += 1
            if calls == at:
                os._exit(9)
        return real(*args, **kwargs)
    return call

atomic.os.replace = dying(os.replace)
pathlib.Path.unlink = dying(pathlib.Path.unlink)
v.save(out)
print(calls)
"""

NAMES = ("o.txt", "o.txt.meta.json", "o.txt.subwords.npy", "o.txt.tokenizer.json")


def _save(out: Path, kind: str, at: int = 0) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SAVE, str(out), kind, str(at)], env=cli_env(), capture_output=True, text=True
    )


def _set(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in NAMES if (folder / name).is_file()}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("old", "new"), [("old", "new"), ("old", "new-bare"), ("old-bare", "new"), (None, "new")]
)
def test_a_kill_at_any_rename_leaves_the_old_set_the_new_set_or_a_refused_one(tmp_path, old, new):
    """The old code renamed the sidecar last: killed before it, a new table loaded with the old
    sidecar's counts and metadata (and the old composer) silently."""
    want = {}
    for kind in filter(None, (old, new)):
        (tmp_path / kind).mkdir()
        done = _save(tmp_path / kind / "o.txt", kind)
        assert done.returncode == 0, done.stderr
        want[kind] = _set(tmp_path / kind)
    (tmp_path / "count").mkdir()
    renames = int(_save(tmp_path / "count" / "o.txt", new).stdout)
    assert renames >= 2
    seen = set()
    for at in range(1, renames + 1):
        folder = tmp_path / f"at{at}"
        folder.mkdir()
        if old:
            assert _save(folder / "o.txt", old).returncode == 0
        killed = _save(folder / "o.txt", new, at)
        assert killed.returncode == 9, killed.stderr
        now = _set(folder)
        if now == want[new]:
            seen.add("new")
        elif now == want.get(old, {}):
            seen.add("old")
        else:
            with pytest.raises(InputError) as err:
                Vectors.load(folder / "o.txt")
            said = "the set is mixed" if (folder / "o.txt").exists() else "no such vectors file"
            assert "\n" not in str(err.value) and said in str(err.value), str(err.value)
            seen.add("refused")
        # the next save of the same output puts a whole set in place
        assert _save(folder / "o.txt", new).returncode == 0 and _set(folder) == want[new]
    assert "refused" in seen or not old


def test_a_file_of_another_save_beside_a_sidecar_is_refused_and_the_fix_given_works(tmp_path):
    a, b = with_composer(), with_composer()
    b.matrix, b.composer.rows = b.matrix * 2, b.composer.rows * 2
    a.save(tmp_path / "a.txt")
    b.save(tmp_path / "b.txt")
    for name in ("b.txt.subwords.npy", "b.txt"):  # the composer's rows, then the table, copied alone
        shutil.copy(tmp_path / name, tmp_path / name.replace("b.txt", "a.txt"))
        with pytest.raises(InputError) as err:
            Vectors.load(tmp_path / "a.txt")
        assert str(err.value) == (
            f"{tmp_path / name.replace('b.txt', 'a.txt')}: is not the file a.txt.meta.json was saved with: "
            "the set is mixed (a save stopped between its renames, or a file replaced alone); restore it, "
            "or delete a.txt.meta.json and the composer's files beside it to load the table alone"
        )
    for name in ("a.txt.meta.json", "a.txt.subwords.npy", "a.txt.tokenizer.json"):
        (tmp_path / name).unlink()
    assert np.allclose(Vectors.load(tmp_path / "a.txt").matrix, b.matrix, atol=1e-5)  # text: 6 digits
