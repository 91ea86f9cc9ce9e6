"""A replacement never leaves a gap: a signal (or an error) at any rename of combine, retrofit,
fit-student and export leaves the old output whole at its path, or the new one whole there, with its
sidecars, no temp beside it, and the line says which.

Each rename the second run makes is hit in turn (``os.replace``, ``os.rename`` and the one-step
exchange): either an interrupt raised in its place before it happens, or a real SIGINT or SIGTERM
sent to this process just before it runs (held until the renames are done).
"""

import os
import re
import signal
from pathlib import Path

import numpy as np
import pytest

from ctx2static.fileio import atomic
from ctx2static.vectors import Vectors

from ..synthetic_cache import write_cache
from .test_faults_vector_files import with_composer


@pytest.fixture(autouse=True)
def default_signals():
    """SIGTERM and SIGINT as a command line in a terminal starts with them: a Ray driver started by
    an earlier test leaves its own SIGTERM handler, which the command keeps
    (``interrupts.sigterm_as_interrupt``), and a test run started in the background by a shell
    inherits SIGINT ignored, so Python never turns it into ``KeyboardInterrupt``."""
    before = (
        signal.signal(signal.SIGTERM, signal.SIG_DFL),
        signal.signal(signal.SIGINT, signal.default_int_handler),
    )
    yield
    signal.signal(signal.SIGTERM, before[0])
    signal.signal(signal.SIGINT, before[1])


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    words = ["king", "queen", "man", "woman", "past", "former"]
    for name in ("a", "b"):
        Vectors(words, rng.normal(size=(6, 4)).astype(np.float32)).save(root / f"{name}.txt")
    with_composer().save(root / "wc.txt")
    (root / "lex.txt").write_text("king queen\npast former\n")
    sents = [list(rng.integers(0, 6, size=5)) for _ in range(8)]
    write_cache(root / "cache", words, sents, 4, rng.normal(size=(8, 4)).astype(np.float32))
    return root


def _cases(i: Path) -> dict[str, tuple[list, list, str]]:
    """command -> (the first run's arguments, the second's, the output's name)."""
    retro = ["retrofit", i / "a.txt", "-l", i / "lex.txt"]
    student = ["fit-student", "-s", "x2static", "--cache", i / "cache", "--set", "epochs=1"]
    return {
        "combine folder": (["combine", i / "a.txt", i / "b.txt"], ["--weights", "2,1"], "out"),
        "combine file": (["combine", i / "a.txt", i / "b.txt"], ["--weights", "2,1"], "out.txt"),
        "retrofit": ([*retro, "--iterations", "1"], ["--iterations", "3"], "r.txt"),
        "fit-student": ([*student, "--seed", "1"], ["--seed", "2"], "fs"),
        "export": (["export", i / "wc.txt", "--format", "word2vec"], ["--dims", "2"], "o.txt"),
    }


def _snapshot(out: Path) -> dict[str, bytes]:
    """The output and the files written beside it (its sidecars, any temp), by name; timings left out."""
    files = sorted(out.rglob("*")) if out.is_dir() else sorted(out.parent.glob(f"*{out.name}*"))
    base = out if out.is_dir() else out.parent
    return {
        str(p.relative_to(base)): re.sub(rb'("\w*second\w*": )[0-9.e+-]+', rb"\1", p.read_bytes())
        for p in files
        if p.is_file()
    }


class _Renames:
    """Counts the renames a run makes in ``folder`` (where its output is); at the ``at``-th, raises or
    signals instead (0: never). Renames elsewhere (a compiled function's cache, written once) are
    not the output's, and would make the count depend on what ran before."""

    def __init__(self, monkeypatch, folder: Path, at: int = 0, how: str = "raise") -> None:
        self.calls, self.at, self.how, self.folder = 0, at, how, str(folder)
        for module, name in ((os, "replace"), (os, "rename"), (atomic, "_exchange")):
            monkeypatch.setattr(module, name, self._wrap(getattr(module, name)))

    def _wrap(self, real):
        def call(*args):
            if not any(str(a).startswith(self.folder) for a in args):
                return real(*args)
            self.calls += 1
            if self.calls == self.at:
                if self.how == "raise":
                    raise KeyboardInterrupt
                os.kill(os.getpid(), signal.SIGTERM if self.how == "SIGTERM" else signal.SIGINT)
            return real(*args)

        return call


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two renames"])
@pytest.mark.parametrize("case", ["combine folder", "combine file", "retrofit", "fit-student", "export"])
def test_a_signal_at_any_rename_leaves_the_old_output_or_the_new_one_whole(
    inputs, tmp_path, cli_main, monkeypatch, case, exchange
):
    if not exchange:  # a system or filesystem without renameat2's exchange: the old folder moves aside
        monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    first, extra, name = _cases(inputs)[case]
    clean = tmp_path / "clean"
    clean.mkdir()
    for args in (first, first + extra):
        code, _, err = cli_main("-q", *args, "-o", clean / name)
        assert code == 0, err
    new = _snapshot(clean / name)
    with monkeypatch.context() as m:
        counted = _Renames(m, clean)
        cli_main("-q", *first, *extra, "-o", clean / name)
    assert counted.calls >= 1 and _snapshot(clean / name) == new
    seen = set()
    for at in range(1, counted.calls + 1):
        for how in ("raise", "SIGINT" if at % 2 else "SIGTERM"):
            where = tmp_path / f"{at}-{how}"
            where.mkdir()
            code, _, err = cli_main("-q", *first, "-o", where / name)
            assert code == 0, err
            old = _snapshot(where / name)
            assert old != new
            with monkeypatch.context() as m:
                _Renames(m, where, at, how)
                code, _, err = cli_main("-q", *first, *extra, "-o", where / name)
            now = _snapshot(where / name)
            line = err.strip().splitlines()[-1] if err.strip() else ""
            assert now in (old, new), f"rename {at} ({how}): {sorted(now)} is neither whole output"
            assert code == (143 if how == "SIGTERM" else 130), err
            if now == new:
                assert "is in place, whole" in line, line
            else:
                assert "an earlier output is as it was" in line, line
            assert not [p for p in where.rglob(".*.tmp")], f"rename {at} ({how}) left a temp"
            seen.add("new" if now == new else "old")
    assert seen == {"old", "new"}  # the renames were hit on both sides of the replacement
