"""Facts about the machine a benchmark ran on, for its results file, and where its shared corpora lie."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# The shared folder (corpus/: brown, sotu, gcide, mini; lexicons/; README.md there) is the one path
# the benches read from the environment, so a clone anywhere finds it: $CTX2STATIC_SHARED, else
# ../shared from the repository root (the layout the study files' relative paths assume).
SHARED = Path(os.environ.get("CTX2STATIC_SHARED") or Path(__file__).resolve().parents[2].parent / "shared")
SHARED_CORPUS = SHARED / "corpus"
SHARED_LEXICONS = SHARED / "lexicons"


def cpu_name() -> str:
    """The CPU's model name (lscpu)."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")), "?")
