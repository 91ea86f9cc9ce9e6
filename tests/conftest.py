import os
from pathlib import Path

import pytest

os.environ.setdefault("NUMBA_NUM_THREADS", "2")

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def mini_corpus() -> Path:
    """../shared/corpus/mini.txt when present, else a slice of the bundled demo corpus."""
    p = SHARED / "corpus" / "mini.txt"
    if p.is_file():
        return p
    from ctx2static.resources import DEMO_CORPUS

    return DEMO_CORPUS
