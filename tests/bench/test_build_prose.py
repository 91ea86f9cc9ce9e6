"""bench/data/build_prose.py: its sentence regex, its document cuts, and nested size-curve samples."""

from __future__ import annotations

import importlib.util
import json
import lzma
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "data" / "build_prose.py"


@pytest.fixture(scope="module")
def bp():
    spec = importlib.util.spec_from_file_location("build_prose", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_sentences_keep_abbreviations_initials_and_acronyms(bp):
    text = 'Mr. Smith met J. R. Hart in the U.S. Army. "Go!" he said. It cost 3.5 dollars. Done'
    assert bp.sentences(text) == [
        "Mr. Smith met J. R. Hart in the U.S. Army.",
        '"Go!" he said.',
        "It cost 3.5 dollars.",
        "Done",
    ]


def test_long_texts_are_cut_at_paragraphs(bp, monkeypatch):
    monkeypatch.setattr(bp, "MAX_WORDS", 5)
    docs = list(bp.chunks("s", "t", ["a b c", "d e", "f g h i j k"]))
    assert [d.paragraphs for d in docs] == [["a b c", "d e"], ["f g h i j k"]]
    assert [d.title for d in docs] == ["t", "t (2)"]


def test_book_drops_headings_and_verse_numbers(bp):
    lines = ["CHAPTER I", "", "It was a dark", "night.", "", "CHAPTER II", "", "Morning came."]
    assert [d.paragraphs for d in bp.book("b", "B", lines)] == [["It was a dark night."], ["Morning came."]]
    kjv = ["1:1 In the beginning.", "", "1:2 And the earth. 2:1 Thus the heavens."]
    assert [d.paragraphs for d in bp.book("b", "K", kjv, verses=True)] == [
        ["In the beginning.", "And the earth."],
        ["Thus the heavens."],
    ]


def test_samples_are_nested(bp, tmp_path, monkeypatch):
    shared, prose, out = tmp_path / "shared", tmp_path / "prose", tmp_path / "out"
    shared.mkdir()
    prose.mkdir()
    for name in bp.SHARED:
        paragraphs = [f"{name} para {i} has words .\nA second line ." for i in range(30)]
        with lzma.open(shared / f"{name}.txt.xz", "wt") as f:
            f.write("\n\n".join(paragraphs) + "\n")
    with lzma.open(prose / "prose.jsonl.xz", "wt") as f:
        for i in range(40):
            text = f"Doc {i} starts here. It goes on.\n\nA second paragraph {i}."
            f.write(json.dumps({"source": "new", "title": str(i), "text": text}) + "\n")
    monkeypatch.setattr(bp, "SIZES", {"small": 200, "large": 600})
    bp.build_samples(prose, shared, out, seed=1)

    def read(name):
        with lzma.open(out / name, "rt") as f:
            return f.read()

    small, large, whole = (read(f"combined-{s}.txt.xz") for s in ("small", "large", "all"))
    assert small and large.startswith(small) and whole.startswith(large) and len(small) < len(large)
    assert "Doc" in whole and "\nIt goes on.\n" in whole  # prose split one sentence a line
    raw = [json.loads(x) for x in read("combined-large.jsonl.xz").splitlines()]
    assert len(raw) == large.count("\n\n") - sum(r["text"].count("\n\n") for r in raw)
    assert "| small |" in (out / "samples.md").read_text()
