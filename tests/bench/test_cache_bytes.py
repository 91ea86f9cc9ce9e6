"""bench/speed/cache_bytes.py: a cache's bytes per signal measured as `cache info` reads them, then scaled."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..tiny_models import SENTENCES, save_tiny_bert
from .loading import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "speed" / "cache_bytes.py"


@pytest.fixture(scope="module")
def cache_bytes():
    return load_script(SCRIPT)


def test_two_tiny_extracts_give_the_tables_from_their_shapes(cache_bytes, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(SENTENCES * 20) + "\n")
    teacher = str(save_tiny_bert(tmp_path / "bert"))
    ms = cache_bytes.run([str(corpus)], teacher, tmp_path / "scratch", 100, 50, 8)
    vp, pca = ms["vp"], ms["pca"]
    d = vp.widths["sent_ctx"]
    assert vp.sentences == pca.sentences == 100
    # uncompressed fp16 rows: one per occurrence (occ_vec) or per sentence (sent_ctx, para_ctx)
    assert vp.signals["occ_vec"] == vp.occurrences * d * 2
    assert pca.signals["occ_vec"] == pca.occurrences * 8 * 2
    assert vp.signals["para_ctx"] == vp.signals["sent_ctx"] == 100 * d * 2
    assert "para_ctx" not in pca.signals

    text = cache_bytes.render(ms, teacher, "python bench/speed/cache_bytes.py ...")
    ids = sum(v for k, v in vp.signals.items() if k not in cache_bytes.VECTOR_SIGNALS)
    vectors = (ids + vp.signals["sent_ctx"] + vp.signals["occ_vec"]) / vp.tokens
    bert = (ids + (vp.signals["sent_ctx"] + vp.signals["occ_vec"]) * 768 / d) / vp.tokens
    row = next(line for line in text.splitlines() if line.startswith("| `--vectors` |"))
    gb = f"{vectors * 1.28:,.0f} GB | {bert * 1.28:,.0f} GB"
    assert row == f"| `--vectors` | {vectors:,.1f} | {bert:,.1f} | {gb} |"
    assert "| `--vectors --pca 8` |" in text and "1.09M words" in text
