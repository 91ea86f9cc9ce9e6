"""What the peer scripts share: the corpus as the peers read it, and each step of a recipe run in a
child process so that its wall time and peak memory are its own.

A step runs as ``python SCRIPT --step NAME ...`` in a child; ``os.wait4`` gives that child's own
``ru_maxrss``, where ``RUSAGE_CHILDREN`` would report the largest of all children so far. The
timings go to ``<out>.timings.json`` beside the peer's Model2Vec folder.
"""

from __future__ import annotations

import gzip
import json
import lzma
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def corpus_texts(paths: list[str], limit: int | None = None) -> Iterator[str]:
    """Yield the corpus files' non-empty lines (one sentence or paragraph each), at most ``limit``."""
    n = 0
    for path in paths:
        opener = lzma.open if path.endswith(".xz") else gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            for line in f:
                text = line.strip()
                if not text:
                    continue
                if limit is not None and n >= limit:
                    return
                n += 1
                yield text


def timings_path(out: Path) -> Path:
    """The timings JSON beside a peer's output folder."""
    return out.with_name(out.name + ".timings.json")


def refuse_existing(out: Path) -> None:
    """Stop before a run would overwrite an earlier peer folder or its timings."""
    for path in (out, timings_path(out)):
        if path.exists():
            sys.exit(f"error: {path} exists; remove it or pick another --out")


def run_step(name: str, argv: list[str], python: str = sys.executable) -> dict:
    """Run one step as a child process of ``python``; return its wall seconds and peak RSS (MiB)."""
    start = time.perf_counter()
    child = subprocess.Popen([python, *argv])
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    if child.returncode != 0:
        sys.exit(f"error: step {name} failed (exit {child.returncode})")
    # Linux reports ru_maxrss in KiB.
    step = {"wall_s": round(seconds, 1), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}
    print(f"{name}: {step['wall_s']} s, peak RSS {step['peak_rss_mib']} MiB", flush=True)
    return step


def write_timings(out: Path, peer: str, args: dict, steps: dict[str, dict]) -> Path:
    """Record the steps' timings with what produced them: command, versions, machine, load."""
    packages = ("torch", "transformers", "sentence-transformers", "model2vec", "tokenlearn")
    record = {
        "peer": peer,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "args": args,
        "steps": steps,
        "total_wall_s": round(sum(s["wall_s"] for s in steps.values()), 1),
        "versions": {p: _version(p) for p in packages},
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
        "load_avg_at_end": [round(x, 2) for x in os.getloadavg()],
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = timings_path(out)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None
