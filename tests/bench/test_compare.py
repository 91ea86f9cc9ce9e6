"""bench/peers/compare.py: each row's recipe timings, read from what made the vectors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .loading import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "peers" / "compare.py"


@pytest.fixture(scope="module")
def compare():
    return load_script(SCRIPT)


def _vectors(tmp_path: Path, name: str, meta: dict) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "meta.json").write_text(json.dumps(meta))
    return folder


def test_a_students_rows_are_its_cache_and_its_fit_and_a_combined_table_has_none(compare, tmp_path):
    cache = tmp_path / "caches" / "mpnet"
    cache.parent.mkdir()
    cache.with_name("mpnet.json").write_text(json.dumps({"seconds": 100.0, "peak_rss_mb": 2000}))
    ase = _vectors(tmp_path, "ase", {"student": "ase", "seconds": 5.0, "cache": str(cache)})
    rows = compare.timings_rows([compare.Model("ase", ase, 256)])
    assert rows[2:] == [
        "| ase | extract | 100.0 | 2,000 |",
        "| ase | ase | 5.0 |  |",
        "| ase | total | 105.0 | |",
    ]
    combined = _vectors(tmp_path, "both", {"combine": {"method": "concat"}})  # combine records no time
    assert compare.timings_rows([compare.Model("both", combined, 256)]) == []


def test_a_retrofits_rows_are_its_students_fit_and_its_own_step(compare, tmp_path):
    cache = tmp_path / "caches" / "minilm"
    cache.parent.mkdir()
    cache.with_name("minilm.json").write_text(json.dumps({"seconds": 100.0, "peak_rss_mb": 2000}))
    meta = {
        "student": "x2static",
        "seconds": 40.0,  # the student's fit, kept in the retrofit's meta
        "cache": str(cache),
        "study": {"seconds": 2.0, "peak_rss_mb": 900},  # the study's step: the retrofit
        "retrofit": [{"method": "attract-repel"}],
    }
    rows = compare.timings_rows([compare.Model("x2+ar", _vectors(tmp_path, "x2+ar", meta), 256)])
    assert rows[2:] == [
        "| x2+ar | extract | 100.0 | 2,000 |",
        "| x2+ar | x2static | 40.0 |  |",
        "| x2+ar | attract-repel | 2.0 | 900 |",
        "| x2+ar | total | 142.0 | |",
    ]


def test_the_hand_written_preface_is_kept_and_a_file_without_one_gives_none(compare, tmp_path):
    out = tmp_path / "sentences.md"
    assert compare.preface(out) == ""
    out.write_text("# Title\n\nWhat the rows are.\n\n## Sentence level (2026-01-01)\n\n| old |\n")
    assert compare.preface(out) == "# Title\n\nWhat the rows are.\n\n"
    out.write_text("## Sentence level (2026-01-01)\n\n| old |\n")
    assert compare.preface(out) == ""
    out.write_text("# Title\n\nThe commands.\n")  # written before the first run: all of it is kept
    assert compare.preface(out) == "# Title\n\nThe commands.\n\n"


def test_pair_files_get_their_mean_and_a_retrieval_file_its_two_columns(compare, tmp_path):
    import numpy as np

    from ctx2static.vectors import Vectors

    words = ["cat", "dog", "car", "bus"]
    vectors = Vectors(words, np.array([[1, 0.1], [0.9, 0.2], [0.1, 1], [0.2, 0.9]], dtype=np.float32))
    vectors.save(tmp_path / "v.txt")
    (tmp_path / "sts-a.tsv").write_text("5\tcat\tdog\n0\tcat\tcar\n4\tcar\tbus\n")
    (tmp_path / "sts-b.tsv").write_text("0\tdog\tbus\n5\tbus\tcar\n")
    (tmp_path / "search.tsv").write_text("query\tdocument\ncat\tdog\ncar\tbus\n")
    files = [tmp_path / n for n in ("sts-a.tsv", "sts-b.tsv", "search.tsv")]
    model = compare.Model("v", tmp_path / "v.txt", 0)
    rows = compare.sentence_rows([model], [compare.Weighting.NONE], tmp_path / "s.json", files, bundled=False)
    (scores,) = rows.values()
    assert scores["pairs-mean"].score == pytest.approx((scores["sts-a"].score + scores["sts-b"].score) / 2)
    assert scores["search"].metric == "nDCG@10 (cosine)" and scores["search-mrr"].score == 100.0
    header = compare.sentence_table(rows)[0]
    assert header == "| model | sts-a | sts-b | pairs-mean | search | search-mrr |"
