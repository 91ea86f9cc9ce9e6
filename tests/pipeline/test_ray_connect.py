"""Joining a Ray cluster is bounded: where none answers, one line within --connect-timeout, never a hang.

Only 127.0.0.1, on ports this test holds or has just freed (nothing else listens there).
"""

import contextlib
import importlib.util
import re
import socket

import pytest

from ctx2static.errors import UserError
from ctx2static.pipeline.config import Engine, EngineConfig

from ..faults import cli_subprocess

pytest.importorskip("ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _silent_port():
    """A port that accepts connections (the kernel's backlog) and never says a word."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield s.getsockname()[1]


def _extract_on_ray(cli_main, tmp_path, teacher, address, timeout):
    """The error lines of extract --engine ray joining ``address`` (in this process).

    The teacher is a real (tiny) model folder: its config is read before the cluster is joined.
    """
    corpus = tmp_path / "c.txt"
    corpus.write_text("one small sentence\n")
    code, _, err = cli_main(
        "extract", "--corpus", corpus, "--teacher", teacher, "--out", tmp_path / "cache", "--min-count", 1,
        "--engine", "ray", "--address", address, "--connect-timeout", timeout,
    )  # fmt: skip
    assert code == 2 and "Traceback" not in err and not (tmp_path / "cache").exists(), err
    return [line for line in err.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_an_address_where_nothing_listens_is_one_line_at_once(scheme, cli_main, tmp_path, tiny_models):
    """The old code: a Ray Client traceback (ray://), or 13 minutes of retries without a line."""
    address = f"{scheme}127.0.0.1:{_free_port()}"
    said = re.escape(f"--address {address}: nothing answers at 127.0.0.1:")  # the probe, not the timeout
    [error] = _extract_on_ray(cli_main, tmp_path, tiny_models["bert"], address, 600)
    assert re.fullmatch(f"error: {said}.*Connection refused.*ray start --head.*", error), error


def test_ray_client_without_its_package_is_one_line(cli_main, tmp_path, tiny_models):
    """ray://HOST:PORT where something listens, without ray[client]: the old code's traceback, now a line."""
    if importlib.util.find_spec("grpc") is not None:
        pytest.skip("ray[client] is installed here")
    with _silent_port() as port:
        [error] = _extract_on_ray(cli_main, tmp_path, tiny_models["bert"], f"ray://127.0.0.1:{port}", 60)
    assert error.startswith(
        f"error: --address ray://127.0.0.1:{port}: Ray did not start (Ray Client requires"
    )


def test_a_port_that_never_answers_ends_at_the_connect_timeout(tmp_path, tiny_models):
    # a real process: the join thread still waiting at the timeout dies with it, not inside pytest
    corpus = tmp_path / "c.txt"
    corpus.write_text("one small sentence\n")
    with _silent_port() as port:
        done = cli_subprocess(
            "extract", "--corpus", corpus, "--teacher", tiny_models["bert"], "--out", tmp_path / "cache",
            "--min-count", 1, "--engine", "ray", "--address", f"127.0.0.1:{port}", "--connect-timeout", 2,
            timeout=120,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: --address 127.0.0.1:{port}: no Ray cluster answered within 2 s; check the address, "
        "start one with 'ray start --head' or leave --address empty for a local one, "
        "or raise --connect-timeout"
    ], done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "cache").exists()


def test_the_connect_timeout_must_be_positive():
    with pytest.raises(UserError, match="--connect-timeout 0.0 must be positive"):
        EngineConfig(engine=Engine.RAY, connect_timeout=0)
