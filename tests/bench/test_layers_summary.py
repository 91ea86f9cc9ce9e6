"""bench/probes/layers_summary.py: summary rows from the sweeps' tables; the hand-written part stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from .loading import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "probes" / "layers_summary.py"
COLUMNS = "| spec | ws353 | avg5 | google add | msr add | sim+ana |\n|---|---:|---:|---:|---:|---:|\n"


@pytest.fixture(scope="module")
def summary():
    return load_script(SCRIPT)


def _sweep(path: Path, teacher: str, rows: dict[str, tuple[float, float]]) -> Path:
    table = "".join(f"| {spec} | 1.0 | {a} | 0.0 | 0.0 | {s} |\n" for spec, (a, s) in rows.items())
    path.write_text(
        f"# Layer choice for `word` and `ase`: {teacher}\n\n"
        "Date: 2026-11-24. Command (repository root): "
        f"`python bench/probes/layer_ase_sweep.py --teacher {teacher}`\n"
        "Corpus: x. Teacher: 5 hidden states, float32. Teacher pass 1 min.\n\n"
        f"## ase\n\n{COLUMNS}{table}| coverage | 50% | 50% | 50% | 50% | |\n\n## word\n\n{COLUMNS}{table}"
    )
    return path


def test_two_sweeps_give_their_summary_rows_and_keep_the_hand_section(summary, tmp_path):
    one = _sweep(
        tmp_path / "layers_a.md",
        "alpha",
        {
            "`0`": (10.0, 11.0),
            "`1`": (30.0, 20.0),
            "`2`  z": (25.0, 40.0),
            "`4`": (5.0, 6.0),
            "`1:` all but the embeddings z": (20.0, 21.0),
            "`1:2` first half": (22.0, 23.0),
            "`2:3` middle third; auto for causal": (12.0, 13.0),
        },
    )
    two = _sweep(tmp_path / "layers_b.md", "beta", {"`0`": (50.0, 51.0), "`1:`": (40.0, 41.0)})
    out = tmp_path / "summary.md"
    out.write_text("old tables\n\n## What it means\n\nWritten by hand.\n")
    sweeps = [summary.read_sweep(one), summary.read_sweep(two)]
    text = summary.render(sweeps, "cmd", summary.hand_section(out))
    rows = [line for line in text.splitlines() if line.startswith("| alpha") or line.startswith("| beta")]
    assert rows[0] == (
        "| alpha z-scored (5) | 10.0 / 11.0 | 20.0 / 21.0 z | 22.0 / 23.0 | 12.0 / 13.0 | 5.0 / 6.0 "
        "| `1`: 30.0 / 20.0 | `1`: 30.0 / 20.0 | `2` z: 25.0 / 40.0 |"
    )
    assert (
        rows[1]
        == "| beta (5) | 50.0 / 51.0 | 40.0 / 41.0 |  |  |  |  | `0`: 50.0 / 51.0 | `0`: 50.0 / 51.0 |"
    )
    assert len(rows) == 4  # the ase and the word table
    assert text.endswith("## What it means\n\nWritten by hand.\n") and "old tables" not in text
