"""SIGTERM, SIGHUP and SIGQUIT stop a run as Ctrl-C does; one ignored (``nohup``) stays ignored.

Each case runs in a child process: a signal the code under test failed to handle would end the
test run itself (SIGQUIT dumps core).
"""

import subprocess
import sys

import numpy as np
import pytest

from ctx2static.vectors import Vectors

from .faults import cli_env, default_signals

CAUGHT = """
import os, signal, sys
from ctx2static.interrupts import Terminated, held, sigterm_as_interrupt

sig = signal.Signals[sys.argv[1]]
signal.signal(sig, signal.SIG_IGN if sys.argv[2] == "ignored" else signal.SIG_DFL)
order = []
try:
    with sigterm_as_interrupt():
        with held("done"):
            os.kill(os.getpid(), sig)
            order.append("held")
        order.append("after")
except Terminated as exc:
    order.append(f"{exc.name} {exc.signum == sig} {getattr(exc, 'put_in_place', '')}")
print(*order, signal.getsignal(sig) == (signal.SIG_IGN if sys.argv[2] == "ignored" else signal.SIG_DFL))
"""


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGQUIT"])
def test_each_terminating_signal_waits_for_the_renames_then_stops_the_run(name):
    """The old code handled SIGTERM alone: SIGHUP ended the process mid-renames, SIGQUIT dumped core."""
    done = subprocess.run(
        [sys.executable, "-c", CAUGHT, name, "default"], env=cli_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["held", name, "True", "done", "True"]


@pytest.mark.parametrize("name", ["SIGHUP", "SIGQUIT"])
def test_an_ignored_signal_stays_ignored(name):
    done = subprocess.run(
        [sys.executable, "-c", CAUGHT, name, "ignored"], env=cli_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["held", "after", "True"]


CLI = """
import os, signal, sys
from ctx2static import cli
from ctx2static.retrofit import files

def stopped(*args, **kwargs):
    os.kill(os.getpid(), signal.Signals[sys.argv[1]])
    raise AssertionError("the signal did not stop the run")

files.retrofit_vectors = stopped
cli.main(sys.argv[2:])
"""


@pytest.mark.parametrize(("name", "code"), [("SIGTERM", 143), ("SIGHUP", 129), ("SIGQUIT", 131)])
def test_the_command_line_says_which_signal_stopped_it_and_exits_as_killed_by_it(tmp_path, name, code):
    Vectors(["king", "queen"], np.eye(2, dtype=np.float32)).save(tmp_path / "v.txt")
    (tmp_path / "lex.txt").write_text("king queen\n")
    args = ["retrofit", tmp_path / "v.txt", "-l", tmp_path / "lex.txt", "-o", tmp_path / "r.txt"]
    done = subprocess.run(
        [sys.executable, "-c", CLI, name, *map(str, args)],
        env=cli_env(),
        capture_output=True,
        text=True,
        preexec_fn=default_signals,
    )
    assert done.returncode == code, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"interrupted ({name}): nothing half-written")
    assert "Traceback" not in done.stderr and not (tmp_path / "r.txt").exists()


SWALLOWED = """
import os, signal, sys, time
from ctx2static.interrupts import Terminated, sigterm_as_interrupt

sig = signal.Signals[sys.argv[1]]

class Finalized:
    def __del__(self):
        # the handler runs on the next line, inside __del__: Python ignores what it raises there
        os.kill(os.getpid(), sig)
        sum(range(10))

signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
try:
    with sigterm_as_interrupt():
        Finalized()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            sum(range(1000))
        print("ran on")
except KeyboardInterrupt as exc:
    print(type(exc).__name__, getattr(exc, "name", ""))
"""


@pytest.mark.parametrize(
    ("name", "raised"), [("SIGTERM", "Terminated SIGTERM"), ("SIGINT", "KeyboardInterrupt")]
)
def test_an_interrupt_raised_where_python_ignores_exceptions_still_stops_the_run(name, raised):
    """Raised inside a finalizer (numba's compiler calls back into Python the same way), the interrupt
    was printed as "Exception ignored" and the run went on to exit 0."""
    done = subprocess.run(
        [sys.executable, "-c", SWALLOWED, name], env=cli_env(), capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == raised, done.stderr
    assert "Exception ignored" not in done.stderr
