"""The teachers table is the one place a short name is defined: everything else reads it."""

from pathlib import Path

import pytest

from ctx2static.errors import UserError
from ctx2static.export.card import Card
from ctx2static.pipeline.models import ASSEMBLERS, read_config, resolve
from ctx2static.teachers import TEACHERS, markdown_table, teacher_hint

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_shows_the_table_the_registry_makes():
    assert markdown_table() in (ROOT / "README.md").read_text(encoding="utf-8"), (
        "the README's teachers table is stale: paste the output of `python -m ctx2static.teachers`"
    )


@pytest.mark.parametrize("t", TEACHERS, ids=lambda t: t.name)
def test_every_row_can_be_assembled_and_carded(t):
    assert t.assemble == "hub" or t.assemble in ASSEMBLERS
    assert bool(t.install) == (t.assemble != "hub")  # an installable teacher names its command
    card = Card({"teacher": t.name}, 3, 2)
    assert (card.base_model(), card.license()) == (t.hub_id, t.licence)


def test_a_hub_row_loads_its_hub_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve("roberta-base") == "FacebookAI/roberta-base"


def test_a_mistyped_short_name_is_one_line_with_the_closest_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match=r"^--teacher minlm: not a short name \(did you mean 'minilm'\?\)"):
        read_config("minlm", resolve("minlm"))


def test_a_teacher_named_by_its_model_gets_its_short_name():
    assert teacher_hint("MiniLM-L6") == " (did you mean 'minilm'?)"  # a fragment of its hub id
    assert teacher_hint("sentence-transformers/all-MiniLM-L6-v2") == " (did you mean 'minilm'?)"
    assert teacher_hint("bert") == " (did you mean 'bert-base' or 'roberta-base'?)"
    assert teacher_hint("minlm") == " (did you mean 'minilm'?)"  # a typo: the closest short name
    assert teacher_hint("qqqq") == teacher_hint("l6") == ""
    assert teacher_hint("google-bert/bert-base-uncased", [t for t in TEACHERS if t.install]) == ""
