"""bench/probes/sentence_ridge.py: the ridge chosen on held-out sentences, through the student's own solve."""

import sys
from pathlib import Path

import numpy as np

from ..synthetic_cache import write_cache
from .loading import load_script

PROBE = load_script(Path(__file__).resolve().parents[2] / "bench" / "probes" / "sentence_ridge.py")


def _rows(text: str) -> dict[str, list[str]]:
    """The table's rows by their first cell."""
    return {
        c[0]: c[1:]
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith(("| ridge", "|---"))
        for c in [[x.strip() for x in line.strip("|").split("|")]]
    }


def test_a_small_ridge_recovers_the_held_out_sentences_and_a_large_one_keeps_the_start(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    truth = rng.normal(size=(10, 6))
    sents = [list(rng.integers(0, 10, size=rng.integers(3, 8))) for _ in range(400)]  # 7 shards of 64
    sent_ctx = np.array([truth[s].mean(0) for s in sents])
    occ = np.concatenate([truth[s] + rng.normal(size=(len(s), 6)) for s in sents])
    cache = write_cache(tmp_path / "c", [f"w{i}" for i in range(10)], sents, 64, sent_ctx, occ_vec=occ)
    out = tmp_path / "ridge.md"
    out.write_text("# old\n\n| ridge |\n\n## What it means\n\nRead by hand.\n")
    ridges = ["--ridge", "1e-6", "--ridge", "1e6"]
    monkeypatch.setattr(sys, "argv", ["sentence_ridge.py", "--cache", str(cache), *ridges, "--out", str(out)])
    PROBE.main()
    text = out.read_text()
    rows = _rows(text)
    start_held, small_held, large_held = (float(rows[r][2]) for r in ("ase start", "1e-06", "1e+06"))
    assert small_held < 1e-3 < start_held  # the means of the true rows are the (float16) targets
    assert abs(large_held - start_held) < 1e-3 * start_held  # the ridge pulls every row to its start
    assert text.startswith("# The `sentence` student's ridge") and text.rstrip().endswith("Read by hand.")
