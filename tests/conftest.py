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
    """Folders of tiny random teachers (BERT with an MLM head, RoBERTa, GPT-2, Llama, bare encoders: BERT
    and MPNet, Gemma 3, an EmbeddingGemma sentence-transformers folder)."""
    from . import tiny_models as tm

    root = tmp_path_factory.mktemp("teachers")
    return {
        "bert": tm.save_tiny_bert(root / "bert"),
        "roberta": tm.save_tiny_roberta(root / "roberta"),
        "gpt2": tm.save_tiny_gpt2(root / "gpt2"),
        "encoder": tm.save_tiny_encoder(root / "encoder"),
        "llama": tm.save_tiny_llama(root / "llama"),
        "mpnet": tm.save_tiny_mpnet(root / "mpnet"),
        "gemma3": tm.save_tiny_gemma3(root / "gemma3"),
        "embeddinggemma": tm.save_tiny_embeddinggemma(root / "embeddinggemma"),
    }


@pytest.fixture(scope="session")
def tiny_caches(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]) -> dict[str, Path]:
    """Finished caches (with --vectors) of the tiny BERT (WordPiece) and GPT-2 (byte-level BPE) teachers
    over ``tiny_models.SENTENCES`` four times, every word in the vocabulary (min_count 1)."""
    from ctx2static.pipeline.config import ExtractConfig
    from ctx2static.pipeline.extract import extract
    from ctx2static.pipeline.teacher import Teacher
    from ctx2static.text.corpus import Corpus
    from ctx2static.text.vocab import Vocab, VocabConfig

    from . import tiny_models as tm

    root = tmp_path_factory.mktemp("tiny_caches")
    corpus_file = root / "corpus.txt"
    corpus_file.write_text("\n".join(tm.SENTENCES * 4) + "\n")
    corpus = Corpus([corpus_file])
    out = {}
    for name in ("bert", "gpt2"):
        teacher = Teacher.load(str(tiny_models[name]))
        vocab = Vocab.build(corpus, VocabConfig(min_count=1))
        extract(corpus, vocab, teacher, root / name, ExtractConfig(vectors=True))
        out[name] = root / name
    return out


@pytest.fixture
def cli_main(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run the console entry point in-process: returns (exit code, stdout, stderr).

    The one way tests run the CLI; only where a real process is the point (kill -9, a hang, blocked
    imports, a fresh interpreter) do they use ``faults.cli_command`` or ``faults.cli_subprocess``.
    """
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
