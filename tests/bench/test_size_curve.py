"""bench/studies/size_curve.py: ``table`` rewrites the size table and keeps the text written around it."""

from pathlib import Path

from .loading import load_script

CURVE = load_script(Path(__file__).resolve().parents[2] / "bench" / "studies" / "size_curve.py")


def test_the_new_table_replaces_the_old_and_the_hand_text_stays(tmp_path):
    md = tmp_path / "size_curve.md"
    old = "| size | output | avg5 |\n|---|---|---:|\n| 1M | ase | 1.0 |\n"
    md.write_text("# Curve\n\nSetting by hand.\n\n" + old + "\nReading.\n")
    new = "| size | output | avg5 |\n|---|---|---:|\n| 1M | ase | 70.2 |\n| 2M | ase | 70.3 |\n"
    text = CURVE.around_table(md, new)
    assert text == "# Curve\n\nSetting by hand.\n\n" + new + "\nReading.\n"
    assert CURVE.around_table(tmp_path / "absent.md", new) == new
