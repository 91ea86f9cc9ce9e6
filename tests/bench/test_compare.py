"""bench/peers/compare.py: each row's recipe timings, read from what made the vectors."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "peers" / "compare.py"


@pytest.fixture(scope="module")
def compare():
    """The script as it runs: its folder first on the path, so ``words`` is its sibling, not the package's."""
    saved = sys.modules.pop("words", None)
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec = importlib.util.spec_from_file_location("compare", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        sys.modules["compare"] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SCRIPT.parent))
        sys.modules.pop("compare", None)
        sys.modules.pop("words", None)
        if saved is not None:
            sys.modules["words"] = saved
    return module


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
