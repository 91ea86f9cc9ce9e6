"""Joining a Ray cluster is bounded: where none answers, one line within --connect-timeout, never a hang.

Only 127.0.0.1, on ports this test holds or has just freed (nothing else listens there).
"""

import contextlib
import importlib.util
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import ctx2static
from ctx2static.errors import UserError
from ctx2static.pipeline.config import Engine, EngineConfig

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


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_an_address_where_nothing_listens_is_one_line_at_once(scheme):
    """The old code: a Ray Client traceback (ray://), or 13 minutes of retries without a line."""
    import ray

    from ctx2static.pipeline.ray_engine import _init

    address = f"{scheme}127.0.0.1:{_free_port()}"
    said = re.escape(f"--address {address}: nothing answers at 127.0.0.1:")  # the probe, not the timeout
    with pytest.raises(UserError, match=f"^{said}.*Connection refused.*ray start --head"):
        _init(ray, EngineConfig(engine=Engine.RAY, address=address, connect_timeout=600))


def test_ray_client_without_its_package_is_one_line():
    """ray://HOST:PORT where something listens, without ray[client]: the old code's traceback, now a line."""
    import ray

    from ctx2static.pipeline.ray_engine import _init

    if importlib.util.find_spec("grpc") is not None:
        pytest.skip("ray[client] is installed here")
    with _silent_port() as port, pytest.raises(UserError) as caught:
        _init(ray, EngineConfig(engine=Engine.RAY, address=f"ray://127.0.0.1:{port}", connect_timeout=60))
    assert str(caught.value).startswith(
        f"--address ray://127.0.0.1:{port}: Ray did not start (Ray Client requires"
    )


def test_a_port_that_never_answers_ends_at_the_connect_timeout(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("one small sentence\n")
    env = {**os.environ, "PYTHONPATH": str(Path(ctx2static.__file__).parent.parent)}
    with _silent_port() as port:
        cmd = [
            sys.executable, str(Path(ctx2static.__file__).parent / "cli.py"), "extract",
            "--corpus", str(corpus), "--teacher", str(tmp_path), "--out", str(tmp_path / "cache"),
            "--min-count", "1", "--engine", "ray", "--address", f"127.0.0.1:{port}",
            "--connect-timeout", "2",
        ]  # fmt: skip
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
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
    with pytest.raises(UserError, match="option connect_timeout=0.0 must be positive"):
        EngineConfig(engine=Engine.RAY, connect_timeout=0)
