"""Facts about the machine a benchmark ran on, for its results file."""

from __future__ import annotations

import subprocess


def cpu_name() -> str:
    """The CPU's model name (lscpu)."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")), "?")
