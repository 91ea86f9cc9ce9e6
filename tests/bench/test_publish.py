"""bench/studies/publish.py: a study's report becomes its results file only from a run of that study."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "studies" / "publish.py"


@pytest.fixture(scope="module")
def publish():
    spec = importlib.util.spec_from_file_location("publish", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.publish


def _run(tmp_path: Path, study_text: str) -> tuple[Path, Path]:
    study, out = tmp_path / "s.toml", tmp_path / "out"
    study.write_text(study_text)
    out.mkdir()
    (out / "study.toml").write_text("[corpus]\n")
    (out / "report.md").write_text("# Study s\n\n| a | b |\n|---|---|\n\n![male/female pairs](pairs.png)\n")
    (out / "pairs.png").write_bytes(b"\x89PNG")
    return study, out


def test_the_results_file_is_the_report_under_both_commands(publish, tmp_path):
    study, out = _run(tmp_path, "[corpus]\n")
    md = tmp_path / "results" / "s.md"
    md.parent.mkdir()
    publish(study, out, md)
    text = md.read_text()
    assert f"python cli.py run {study} --out {out}" in text
    assert f"python bench/studies/publish.py {study} {out} --md {md}" in text
    assert text.index("Commands") < text.index("# Study s") and "| a | b |" in text
    assert "![male/female pairs](s_pairs.png)" in text
    assert (md.parent / "s_pairs.png").read_bytes() == b"\x89PNG"


def test_a_run_of_another_study_is_refused_and_nothing_written(publish, tmp_path):
    study, out = _run(tmp_path, "[corpus]\nmin_count = 5\n")
    md = tmp_path / "s.md"
    with pytest.raises(SystemExit, match="not the study"):
        publish(study, out, md)
    assert not md.exists()


def test_the_hand_written_reading_is_kept_below_a_new_report(publish, tmp_path):
    study, out = _run(tmp_path, "[corpus]\n")
    md = tmp_path / "s.md"
    md.write_text("old header\n\n# Study s\n\n| old |\n\n## What it means\n\n- the reading.\n")
    publish(study, out, md)
    text = md.read_text()
    assert "| old |" not in text and "| a | b |" in text
    assert text.endswith(
        "| a | b |\n|---|---|\n\n![male/female pairs](s_pairs.png)\n\n## What it means\n\n- the reading.\n"
    )


def test_a_figure_an_earlier_run_drew_and_this_one_did_not_is_deleted(publish, tmp_path):
    study, out = _run(tmp_path, "[corpus]\n")  # a report with the pairs and no training curves
    md = tmp_path / "results" / "s.md"
    md.parent.mkdir()
    (md.parent / "s_curves.png").write_bytes(b"\x89PNG")  # drawn by an earlier run
    (md.parent / "s_other.png").write_bytes(b"\x89PNG")  # not a figure of the report: kept
    publish(study, out, md)
    assert sorted(p.name for p in md.parent.iterdir()) == ["s.md", "s_other.png", "s_pairs.png"]
