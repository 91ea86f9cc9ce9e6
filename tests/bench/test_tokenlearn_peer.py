"""bench/peers/tokenlearn_peer.py: distill gets a teacher whose tokenizer pads nothing."""

from __future__ import annotations

import json
from pathlib import Path

from .loading import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "peers" / "tokenlearn_peer.py"


def test_a_fixed_padding_is_dropped_in_a_linked_copy_and_the_teacher_left_as_it_was(tmp_path):
    unpadded = load_script(SCRIPT).unpadded
    teacher = tmp_path / "teacher"
    teacher.mkdir()
    spec = {"padding": {"strategy": {"Fixed": 128}}, "truncation": {"max_length": 128}, "model": {"x": 1}}
    (teacher / "tokenizer.json").write_text(json.dumps(spec))
    (teacher / "config.json").write_text("{}")
    copy = Path(unpadded(str(teacher), tmp_path / "copy"))
    assert copy != teacher
    assert json.loads((copy / "tokenizer.json").read_text()) == {**spec, "padding": None}
    assert (copy / "config.json").resolve() == (teacher / "config.json").resolve()
    assert json.loads((teacher / "tokenizer.json").read_text()) == spec  # the user's folder untouched
    (teacher / "tokenizer.json").write_text(json.dumps({**spec, "padding": None}))
    assert unpadded(str(teacher), tmp_path / "copy2") == str(teacher)
    assert not (tmp_path / "copy2").exists()
