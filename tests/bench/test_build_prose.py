"""bench/data/build_prose.py: its sentence regex, its document cuts, and nested size-curve samples."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import lzma
import sys
import tarfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "data" / "build_prose.py"


@pytest.fixture(scope="module")
def bp():
    sys.path.insert(0, str(SCRIPT.parent))  # the script imports its neighbour archives.py
    spec = importlib.util.spec_from_file_location("build_prose", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    sys.path.remove(str(SCRIPT.parent))


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


def write_inputs(bp, shared, prose, docs):
    shared.mkdir(exist_ok=True)
    prose.mkdir(exist_ok=True)
    for name in bp.SHARED:
        paragraphs = [f"{name} para {i} has words .\nA second line ." for i in range(30)]
        with lzma.open(shared / f"{name}.txt.xz", "wt") as f:
            f.write("\n\n".join(paragraphs) + "\n")
    with lzma.open(prose / "prose.jsonl.xz", "wt") as f:
        for source, i in docs:
            text = f"Doc {source} {i} starts here. It goes on.\n\nA second paragraph {i}."
            f.write(json.dumps({"source": source, "title": str(i), "text": text}) + "\n")


def test_added_sources_leave_the_earlier_samples_unchanged(bp, tmp_path, monkeypatch):
    monkeypatch.setattr(bp, "SIZES", {"small": 200, "large": 600})
    added = sorted(bp.ADDED)[0]
    old = [("gutenberg", i) for i in range(40)]
    write_inputs(bp, tmp_path / "shared", tmp_path / "p1", old)
    write_inputs(
        bp, tmp_path / "shared", tmp_path / "p2", old[:20] + [(added, i) for i in range(25)] + old[20:]
    )
    bp.build_samples(tmp_path / "p1", tmp_path / "shared", tmp_path / "o1", seed=1)
    bp.build_samples(tmp_path / "p2", tmp_path / "shared", tmp_path / "o2", seed=1)
    for name in ("small", "large"):
        for ext in ("txt.xz", "jsonl.xz"):
            f = f"combined-{name}.{ext}"
            assert (tmp_path / "o1" / f).read_bytes() == (tmp_path / "o2" / f).read_bytes(), f

    def raw(out):
        with lzma.open(out / "combined-all.jsonl.xz", "rt") as f:
            return [json.loads(x)["source"] for x in f]

    before, after = raw(tmp_path / "o1"), raw(tmp_path / "o2")
    assert after[: len(before)] == before and after[len(before) :] == [added] * 25


def deb(members: dict[str, bytes]) -> bytes:
    """A minimal Debian package: an ar archive whose data.tar.gz holds `members`."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"./{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    body = buf.getvalue()
    header = f"{'data.tar.gz':<16}{0:<12}{0:<6}{0:<6}{644:<8}{len(body):<10}`\n".encode()
    return b"!<arch>\n" + header + body + b"\n" * (len(body) % 2)


def test_manual_pages_give_prose_paragraphs_once(bp, tmp_path, monkeypatch):
    prose = "This paragraph explains in plain words what the function does and why."
    page = (
        f"<html><body><p>{prose}</p><pre><p>x = compute(1, 2) + other(3)</p></pre>"
        "<table><tr><td><p>a cell of a table that holds many words of text</p></td></tr></table>"
        "<p>Changed in version 3.6: Accepts a path-like object and many more things now.</p>"
        "<div class='para'>A DocBook paragraph with <code>code</code> inside it reads on "
        "(Contributed by A. Person in bpo-1.)<br> to its end.</div><p>x = f(a, b) ; y = g(c, d) ; z = [1]</p>"
        "</body></html>"
    )
    root = "usr/share/doc/manual/"
    members = {
        f"{root}a.html": page.encode(),
        f"{root}b.html": f"<p>{prose}</p><p>Another page has its own long enough sentence here.</p>".encode(),
        f"{root}genindex.html": f"<p>{prose} but this index page is left out entirely.</p>".encode(),
    }
    (tmp_path / "m.deb").write_bytes(deb(members))
    digest = hashlib.sha256((tmp_path / "m.deb").read_bytes()).hexdigest()
    monkeypatch.setitem(bp.ARCHIVES, "m.deb", digest)
    monkeypatch.setitem(bp.MANUALS, "m", ("m.deb", root, bp.re.compile(r"^genindex")))
    docs = list(bp.manual(tmp_path, "m"))
    assert [(d.title, d.paragraphs) for d in docs] == [
        ("a", [prose, "A DocBook paragraph with code inside it reads on to its end."]),
        ("b", ["Another page has its own long enough sentence here."]),
    ]
