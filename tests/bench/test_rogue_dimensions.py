"""bench/probes/rogue_dimensions.py: the statistic of ``standardize=auto`` per cache, written to its file."""

import sys
from pathlib import Path

import numpy as np

from ..synthetic_cache import write_cache
from .loading import load_script

PROBE = load_script(Path(__file__).resolve().parents[2] / "bench" / "probes" / "rogue_dimensions.py")


def test_a_cache_with_one_huge_dimension_is_rogue_and_a_plain_one_is_not(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(20)]
    sents = [list(rng.integers(0, 20, size=5)) for _ in range(100)]
    tables = {"word_emb": rng.normal(size=(20, 8)), "token_emb": rng.normal(size=(20, 8))}
    plain = write_cache(tmp_path / "plain", words, sents, 50, rng.normal(size=(100, 8)), vocab_tables=tables)
    ctx = rng.normal(size=(100, 8))
    ctx[:, 3] *= 100  # energy 10,000 times the others': over the 1,000 of auto
    rogue = write_cache(tmp_path / "rogue", words, sents, 50, ctx, vocab_tables=tables)
    out = tmp_path / "ratios.md"
    out.write_text("# old\n\n## What it means\n\nRead by hand.\n")
    argv = ["rogue_dimensions.py", f"plain={plain}", f"rogue={rogue}", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    PROBE.main()
    text = out.read_text()
    cells = [[x.strip() for x in ln.strip("|").split("|")] for ln in text.splitlines() if ln.startswith("| ")]
    rows = {c[0]: c[1:] for c in cells}
    assert rows["plain"][-1] == "none" and float(rows["plain"][1].replace(",", "")) < 10
    assert rows["rogue"][-1] == "sent_ctx, ase"  # ase's rows are means of the sentences' contexts
    assert float(rows["rogue"][1].replace(",", "")) > 1000
    assert text.startswith("# Rogue dimensions") and text.rstrip().endswith("Read by hand.")
