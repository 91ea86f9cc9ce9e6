"""Shared fixtures: a small real-text corpus, tiny random teachers, synthetic caches, the CLI in-process."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

os.environ.setdefault("NUMBA_NUM_THREADS", "2")

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def mini_corpus() -> Path:
    """2,000 sentences of Brown and State of the Union text (tests/data/README.md)."""
    return DATA / "mini.txt.xz"


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Folders of tiny random teachers (BERT with an MLM head, RoBERTa, GPT-2, Llama, a bare encoder)."""
    from . import tiny_models as tm

    root = tmp_path_factory.mktemp("teachers")
    return {
        "bert": tm.save_tiny_bert(root / "bert"),
        "roberta": tm.save_tiny_roberta(root / "roberta"),
        "gpt2": tm.save_tiny_gpt2(root / "gpt2"),
        "encoder": tm.save_tiny_encoder(root / "encoder"),
        "llama": tm.save_tiny_llama(root / "llama"),
    }


@pytest.fixture
def cli_main(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run the console entry point in-process: returns (exit code, stdout, stderr)."""
    from ctx2static.cli import main

    def run(*args: object) -> tuple[int, str, str]:
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
