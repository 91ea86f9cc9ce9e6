"""Sentence splitters compared: boundary accuracy on the tagged Brown corpus, speed, and the reader's speed.

Gold: ``data/downstream/pos-brown.txt.xz`` (57,340 sentences in 500 files). Each file's sentences
are detokenised (quotes, punctuation attached) and joined with single spaces into one document;
a splitter's boundaries (the start of every sentence but the first) are scored against the gold
ones: precision, recall, F1. Brown's headlines and list items end without punctuation, so no
splitter reaches full recall; that costs every splitter alike.

Speed is CPU time (``time.process_time``) of one process, so a shared machine slows it less than
wall time; compare the numbers of one run with each other. ``--reader`` also times the corpus
reader (read, split with the chosen splitter, tokenise) over the shared corpus as raw documents:
every paragraph of ``FILES`` joined into one line.

    python bench/speed/bench_splitters.py --paragraphs "$CTX2STATIC_SHARED"/corpus/brown.txt.xz \
        --reader "$CTX2STATIC_SHARED"/corpus/*.txt.xz --out bench/results/splitters.md
"""

from __future__ import annotations

import argparse
import itertools
import lzma
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from machine import argv_line, cpu_name

ROOT = Path(__file__).resolve().parents[2]
BROWN = ROOT / "data" / "downstream" / "pos-brown.txt.xz"


def brown_documents() -> list[list[str]]:
    """Each Brown file's sentences, detokenised."""
    docs: dict[str, list[str]] = {}
    with lzma.open(BROWN, "rt", encoding="utf-8") as fh:
        for line in fh:
            name, _, tagged = line.rstrip("\n").partition("\t")
            words = [t.rsplit("/", 1)[0] for t in tagged.split()]
            docs.setdefault(name, []).append(detokenise(words))
    return list(docs.values())


def detokenise(words: list[str]) -> str:
    """Brown's tokens as running text: ``` `` ``/``''`` as quotes, punctuation attached."""
    s = " ".join(words)
    s = re.sub(r"(\w\.) \.", r"\1", s)  # "Jr. ." at a sentence's end
    s = s.replace("`` ", '"').replace(" ''", '"').replace("``", '"').replace("''", '"')
    s = re.sub(r" ([.,;:!?%)\]}])", r"\1", s)
    return re.sub(r"([(\[{$]) ", r"\1", s)


def starts(doc: str, sentences: list[str]) -> set[int]:
    """Offsets in ``doc`` where the splitter's sentences after the first begin."""
    out, pos = set(), 0
    for s in sentences:
        s = s.strip()
        if not s:
            continue
        at = doc.find(s, pos)
        if at < 0:  # a splitter that rewrote the text: anchor on its first word
            at = doc.find(s.split()[0], pos)
        if at > 0:
            out.add(at)
        pos = max(pos, at) + 1
    return out


def gold(sentences: list[str]) -> tuple[str, set[int]]:
    doc, marks, pos = " ".join(sentences), set(), 0
    for s in sentences[:-1]:
        pos += len(s) + 1
        marks.add(pos)
    return doc, marks


def splitters() -> dict[str, Callable[[str], list[str]]]:
    import blingfire
    import pysbd
    import sentencex
    from syntok import segmenter

    seg = pysbd.Segmenter(language="en", clean=False)

    def syntok_split(doc: str) -> list[str]:
        return ["".join(t.spacing + t.value for t in s) for p in segmenter.process(doc) for s in p]

    return {
        "sentencex": lambda d: list(sentencex.segment("en", d)),
        "blingfire": lambda d: blingfire.text_to_sentences(d).split("\n"),
        "syntok": syntok_split,
        "pysbd": seg.segment,
    }


def versions() -> str:
    from importlib.metadata import version

    return ", ".join(f"{p} {version(p)}" for p in ("sentencex", "blingfire", "syntok", "pysbd"))


def accuracy(docs: list[list[str]], limit_words: dict[str, int]) -> list[tuple[str, float, ...]]:
    rows = []
    for name, split in splitters().items():
        tp = fp = fn = words = 0
        cpu = 0.0
        for sents in docs:
            doc, marks = gold(sents)
            t = time.process_time()
            pred = starts(doc, split(doc))
            cpu += time.process_time() - t
            words += len(doc.split())
            tp, fp, fn = tp + len(pred & marks), fp + len(pred - marks), fn + len(marks - pred)
            if words >= limit_words.get(name, 1 << 62):
                break
        p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
        rows.append((name, p, r, 2 * p * r / max(p + r, 1e-9), words / cpu, words))
    return rows


def by_paragraph(docs: list[list[str]], path: str) -> list[list[str]]:
    """The gold sentences regrouped by the paragraphs of ``path`` (the same 57,340 Brown sentences)."""
    flat = [s for d in docs for s in d]
    with lzma.open(path, "rt", encoding="utf-8") as fh:
        sizes = [
            sum(1 for _ in g) for blank, g in itertools.groupby(fh, key=lambda x: not x.strip()) if not blank
        ]
    assert sum(sizes) == len(flat), "not the same sentences"
    bounds = list(itertools.accumulate(sizes, initial=0))
    return [flat[a:b] for a, b in itertools.pairwise(bounds)]


def raw_documents(files: list[str], out: Path) -> int:
    """Write every paragraph of ``files`` as one line of ``out``; return the words written."""
    words = 0
    with out.open("w", encoding="utf-8") as fh:
        for f in files:
            with lzma.open(f, "rt", encoding="utf-8") as src:
                for blank, group in itertools.groupby(src, key=lambda line: not line.strip()):
                    if not blank:
                        para = " ".join(line.strip() for line in group)
                        words += len(para.split())
                        fh.write(para + "\n")
    return words


def paragraphs(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as fh:
        yield from fh


def reader_speed(files: list[str]) -> tuple[int, float, float, int]:
    """(words, CPU seconds of the reader with split=sentences, of splitting alone, sentences)."""
    import sentencex

    from ctx2static.text.corpus import Corpus, CorpusConfig

    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.txt"
        words = raw_documents(files, raw)
        t = time.process_time()
        n = sum(1 for _ in Corpus([raw], CorpusConfig(split="sentences")).sentences())
        reader = time.process_time() - t
        t = time.process_time()
        for doc in paragraphs(raw):
            list(sentencex.segment("en", doc))
        alone = time.process_time() - t
    return words, reader, alone, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--reader", nargs="*", default=[], help="shared corpus files (.txt.xz) to time the reader on"
    )
    ap.add_argument("--paragraphs", help="brown.txt.xz of the shared corpus: also score Brown paragraphs")
    ap.add_argument("--pysbd-words", type=int, default=150_000, help="pysbd is slow: score it on a prefix")
    ap.add_argument("--out", type=Path, help="also write the results file here (splitters.md)")
    args = ap.parse_args()
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    files = brown_documents()
    say(f"gold: {sum(map(len, files)):,} Brown sentences; {versions()}")
    golds = {"file": files}
    if args.paragraphs:
        golds["paragraph"] = by_paragraph(files, args.paragraphs)
    say("")
    say("| document | splitter | precision | recall | F1 | words/s (CPU) | words scored |")
    say("|---|---|---|---|---|---|---|")
    for unit, docs in golds.items():
        for name, p, r, f1, rate, words in accuracy(docs, {"pysbd": args.pysbd_words}):
            row = f"{unit} ({len(docs):,}) | {name} | {p:.3f} | {r:.3f} | {f1:.3f} | {rate:,.0f} | {words:,}"
            say(f"| {row} |")
    if args.reader:
        words, reader, alone, n = reader_speed(args.reader)
        say(
            f"\nreader (read + split + tokenise), {words:,} words as {len(args.reader)} files' paragraphs "
            f"one a line: {words / reader:,.0f} words/s CPU ({n:,} sentences); "
            f"sentencex alone: {words / alone:,.0f} words/s"
        )
    if args.out:
        header = [
            "# Sentence splitters for `--split sentences`, and the corpus reader's speed",
            "",
            f"Command: `python bench/speed/{Path(__file__).name} {argv_line(sys.argv[1:])}`",
            "",
            f"Date: {time.strftime('%Y-%m-%d')}. Machine: {cpu_name()}, {os.cpu_count()} cores, load average "
            f"{os.getloadavg()[0]:.1f} at the end; speeds are CPU time of the one process.",
            "",
        ]
        args.out.write_text("\n".join(header + lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
