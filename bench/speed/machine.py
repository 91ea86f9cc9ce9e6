"""Facts about the machine a benchmark ran on, for its results file, and where its shared corpora lie."""

from __future__ import annotations

import subprocess
from pathlib import Path

# ../shared/corpus from the repository root (brown, sotu, gcide, mini; README.md there)
SHARED_CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"


def cpu_name() -> str:
    """The CPU's model name (lscpu)."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")), "?")
