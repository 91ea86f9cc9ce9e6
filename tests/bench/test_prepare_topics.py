"""bench/data/prepare_topics.py: which texts make a topic set, and how it is halved."""

from __future__ import annotations

import hashlib
import importlib.util
import lzma
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "data" / "prepare_topics.py"


@pytest.fixture(scope="module")
def pt():
    spec = importlib.util.spec_from_file_location("prepare_topics", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)  # it puts bench/data on sys.path for its neighbours
    yield module
    sys.path.remove(str(SCRIPT.parent))


def test_figures_and_addresses_are_left_out_and_long_sentences_cut(pt):
    assert pt.sentence_sized("100 million cu m (2014 est.)") is None
    assert pt.sentence_sized("1024 Wisconsin Avenue NW, Suite 401, Washington, DC 20007") is None
    assert pt.sentence_sized("ALL CAPS HEADLINE WITH SEVEN WORDS IN IT") is None
    kept = "The French administered the area   as Syria until granting it independence in 1946."
    assert pt.sentence_sized(kept) == " ".join(kept.split())
    assert pt.sentence_sized(" ".join(["word"] * 80)) == " ".join(["word"] * pt.MAX_WORDS)


def test_a_set_keeps_each_text_once_drops_ambiguous_ones_and_small_labels(pt, monkeypatch):
    monkeypatch.setattr(pt, "MIN_TEXTS", 3)
    monkeypatch.setattr(pt, "CAP", 4)
    items = [("a", f"text {i}") for i in range(6)] + [("b", f"other {i}") for i in range(3)]
    items += [("a", "TEXT 0"), ("b", "text 1"), ("c", "rare one"), ("c", "rare two")]
    got = pt.labelled_set(items, seed=1)
    assert sorted(got) == ["a", "b"]  # c has 2 texts, under MIN_TEXTS
    assert len(got["a"]) == 4 and "text 1" not in got["a"] and "TEXT 0" not in got["a"]
    assert sorted(got["b"]) == ["other 0", "other 1", "other 2"]  # "text 1" was under both labels
    assert got == pt.labelled_set(items, seed=1)


def test_halves_split_each_label_in_two_and_share_no_text(pt):
    by_label = {"a": [f"a{i}" for i in range(7)], "b": [f"b{i}" for i in range(4)]}
    dev, report = pt.halves(by_label, seed=3)
    assert sorted(dev) == sorted([*(f"a\ta{i}" for i in range(4)), "b\tb0", "b\tb1"])
    assert not set(dev) & set(report) and len(dev) + len(report) == 11
    assert (dev, report) == pt.halves(by_label, seed=3)


PACKAGES = """Package: foo
Source: foo-src
Section: games
Description: a puzzle game of falling blocks
Description-md5: m1

Package: foo-src
Section: games
Description: Puzzle game of falling blocks with many levels
Description-md5: m2

Package: bar
Section: perl
Description: Perl module to parse things in many ways
Description-md5: m3

Package: baz
Section: mail
Description: transitional dummy package for the mail reader
Description-md5: m4
"""
TRANSLATION = """Package: foo-src
Description-md5: m2
Description-en: Puzzle game of falling blocks with many levels
 Foo drops blocks into a well. You clear lines
 to score points.
 .
 It has a second paragraph.
"""


def test_debian_texts_are_one_per_source_and_section_from_the_checked_index(pt, tmp_path, monkeypatch):
    for name, text in (("Packages.xz", PACKAGES), ("Translation-en.xz", TRANSLATION)):
        (tmp_path / name).write_bytes(lzma.compress(text.encode()))
    digests = {
        "binary-amd64_Packages": hashlib.sha256(PACKAGES.encode()).hexdigest(),
        "i18n_Translation-en": hashlib.sha256(TRANSLATION.encode()).hexdigest(),
    }
    monkeypatch.setattr(pt, "DEBIAN", digests)
    assert list(pt.debian(tmp_path)) == [
        ("games", "Puzzle game of falling blocks with many levels. Foo drops blocks into a well.")
    ]  # bar is in a language section, baz a transitional package; foo-src stands for its source
    monkeypatch.setitem(digests, "i18n_Translation-en", "0" * 64)
    with pytest.raises(SystemExit, match=r"Translation-en.xz: sha256 \w+ of its text is not Debian 12.15's"):
        list(pt.debian(tmp_path))
