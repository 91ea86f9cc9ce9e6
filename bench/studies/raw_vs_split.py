"""Same results from raw text: the shared corpus as shipped (one sentence a line) against the same text
as raw paragraphs that the reader splits (``--split sentences``), in the students' scores and in counts.

Usage (from the repository root; the studies take hours on 2 CPU cores, the rest minutes):

    python bench/studies/raw_vs_split.py prepare --out runs/raw_vs_split
    python cli.py run runs/raw_vs_split/lines.toml --out runs/raw_vs_split/lines
    python cli.py run runs/raw_vs_split/sentences.toml --out runs/raw_vs_split/sentences
    python bench/studies/raw_vs_split.py count --out runs/raw_vs_split --md bench/results/raw_vs_split.md
    python bench/studies/raw_vs_split.py table --out runs/raw_vs_split --md bench/results/raw_vs_split.md
    python bench/studies/raw_vs_split.py speed --out runs/raw_vs_split --md bench/results/raw_vs_split.md

``prepare`` writes OUT/raw.jsonl.xz: one row ``{"source", "text"}`` per paragraph of brown, sotu and
gcide (a Brown paragraph, a whole SOTU address, a GCIDE entry) with its lines joined by single
spaces, so the sentence boundaries are gone and the splitter must find them again. Brown's text is
already tokenised (punctuation set apart, quotes written `` and ''), so on Brown this tests the
splitter on tokenised text, not on text as printed. It also writes two studies that differ only in
their corpus: OUT/lines.toml reads the three .txt.xz as they are (``split = "lines"``),
OUT/sentences.toml reads raw.jsonl.xz (``split = "sentences"``). Both: MiniLM at int8 (within 0.1
avg5 of float32, bench/results/teachers_brown.md), 2 threads, the default signals plus paragraph
means; ase and x2static with the sentence and with the paragraph context; similarity and analogy.

``count`` reads both corpora with the studies' own corpus settings through the reader extract uses
(:class:`ctx2static.text.corpus.Corpus`, bounds included, so the sentences counted are the ones the
caches hold) and writes per source: sentences and tokens each way, how many of the shipped
sentences the splitter gives back word for word, and how many sentences exceed the reader's word
bound (each is cut into pieces, counted as the pieces). ``table`` sets the two studies' scores side
by side (each output on the items it covers). ``speed`` times the reader alone (read, split,
tokenise) over raw.jsonl.xz in this one single-threaded process: words/s against the goal of 1M
a core. Its timings mean something only on an otherwise idle machine.

Each subcommand with ``--md`` rewrites its own section of the results file, with its command.
"""

from __future__ import annotations

import argparse
import itertools
import json
import lzma
import os
import platform
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from ctx2static.study.layout import StudyLayout
from ctx2static.study.loader import load_study
from ctx2static.text.corpus import Bounds, Corpus, CorpusConfig
from ctx2static.text.split import Split

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import SHARED_CORPUS, argv_line, cpu_name

SOURCES = ("brown", "sotu", "gcide")
RAW = "raw.jsonl.xz"
SPLITS = ("lines", "sentences")  # the two studies: OUT/SPLIT.toml, run into OUT/SPLIT
STUDENTS = {
    "ase": ("ase", None),
    "x2static-sent": ("x2static", "sent"),
    "x2static-para": ("x2static", "para"),
}
TITLE = "Same results from raw text: pre-split lines against `--split sentences`"


def shared_files(shared: Path) -> list[Path]:
    """The shared corpus's three files, or an exit naming what is missing."""
    files = [(shared / f"{name}.txt.xz").resolve() for name in SOURCES]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        sys.exit(f"{', '.join(missing)}: missing; pass --shared the folder holding brown/sotu/gcide .txt.xz")
    return files


def write_raw(files: list[Path], path: Path) -> Counter[str]:
    """Each paragraph of ``files``, as the reader sees them one sentence a line, as a row of raw text.

    Reading the paragraphs with the product's own reader makes row ``i`` the paragraph id ``i`` of
    the lines study, which is what lets ``count`` match the two readings paragraph by paragraph.
    """
    rows: Counter[str] = Counter()
    part = path.with_name(path.name + ".part")
    with lzma.open(part, "wt", encoding="utf-8", preset=1) as out:
        for name, file in zip(SOURCES, files, strict=True):
            for para in Corpus([file], CorpusConfig(split=Split.LINES)).paragraphs():
                text = " ".join(s.strip() for s in para)
                out.write(json.dumps({"source": name, "text": text}, ensure_ascii=False) + "\n")
                rows[name] += 1
    part.replace(path)
    return rows


def study_text(files: list[Path], split: str) -> str:
    """The TOML of one of the two studies; they differ only in ``[corpus]``."""
    lines = [
        f"# The shared corpus read with split = {split} (bench/studies/raw_vs_split.py writes this file).",
        "",
        "[corpus]",
        "files = [" + ", ".join(json.dumps(str(f)) for f in files) + "]",
        f'split = "{split}"',
        "min_count = 5",
        "",
        "[teachers.minilm]",
        'model = "minilm"',
        "threads = 2",
        'precision = "int8"',
        "paragraph = true",
        "",
    ]
    for name, (student, context) in STUDENTS.items():
        lines += [f"[students.{name}]", f'student = "{student}"', 'teacher = "minilm"']
        if context:
            lines.append(f'options = {{ context = "{context}" }}')
        lines.append("")
    lines += ["[eval]", 'families = ["similarity", "analogy"]', ""]
    return "\n".join(lines)


def prepare(args: argparse.Namespace) -> None:
    """Write raw.jsonl.xz and the two study files into --out."""
    files = shared_files(args.shared)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = write_raw(files, args.out / RAW)
    print(f"{args.out / RAW}: " + ", ".join(f"{n:,} {name} paragraphs" for name, n in rows.items()))
    inputs = {"lines": files, "sentences": [(args.out / RAW).resolve()]}
    for split in SPLITS:
        toml = args.out / f"{split}.toml"
        toml.write_text(study_text(inputs[split], split), encoding="utf-8")
        print(f"{toml}: run it with  python cli.py run {toml} --out {args.out / split}")


def study_corpus(toml: Path, bounds: Bounds | None = None) -> Corpus:
    """The corpus as ``cli.py run`` reads it for extract: the study's files and corpus settings."""
    if not toml.is_file():
        sys.exit(f"{toml}: missing; run the prepare subcommand first")
    spec = load_study(toml).corpus
    return Corpus(list(spec.files), spec.text, bounds or Bounds())


def row_sources(raw: Path) -> list[str]:
    """The source of every row of raw.jsonl.xz: row i is paragraph i of both studies."""
    with lzma.open(raw, "rt", encoding="utf-8") as f:
        return [json.loads(line)["source"] for line in f]


def paragraphs(corpus: Corpus) -> Iterator[tuple[int, list[list[str]]]]:
    """``(paragraph id, its sentences' tokens)`` in corpus order."""
    for pid, group in itertools.groupby(corpus.sentences(), key=lambda s: s[0]):
        yield pid, [toks for _, toks in group]


@dataclass
class Tally:
    """One source read one way: what the cache holds, and what the word bound cut."""

    sentences: int = 0
    tokens: int = 0
    long: int = 0  # sentences over the word bound, before the cut

    def add(self, sents: list[list[str]], uncut: list[list[str]], limit: int) -> None:
        """Count one paragraph: its sentences as cut by the bound, and as they were before."""
        self.sentences += len(sents)
        self.tokens += sum(map(len, sents))
        self.long += sum(len(s) > limit for s in uncut)


@dataclass
class SourceCount:
    """One source both ways, and the shipped sentences the splitter gave back word for word."""

    paragraphs: int = 0
    lines: Tally = field(default_factory=Tally)
    split: Tally = field(default_factory=Tally)
    same: int = 0
    shipped: int = 0  # the shipped sentences before the word bound (``same`` is out of these)


def total(counts: Iterable[SourceCount]) -> SourceCount:
    """The sum of ``counts``, field by field."""
    out = SourceCount()
    for c in counts:
        out.paragraphs += c.paragraphs
        out.same += c.same
        out.shipped += c.shipped
        for mine, theirs in ((out.lines, c.lines), (out.split, c.split)):
            mine.sentences += theirs.sentences
            mine.tokens += theirs.tokens
            mine.long += theirs.long
    return out


def count_sources(out: Path) -> dict[str, SourceCount]:
    """Per source, both studies' corpora as the caches see them (one pass, paragraph by paragraph).

    Each corpus is read twice at once: with the reader's bounds (the counts the cache sees) and
    without the word bound (the sentences before a long one is cut, to count those and to compare
    whole sentences).
    """
    owner = row_sources(out / RAW)
    limit = Bounds().words
    uncut = Bounds(words=1 << 62)  # no sentence is that long: none is cut
    corpora = [study_corpus(out / f"{split}.toml", b) for b in (Bounds(), uncut) for split in SPLITS]
    counts = {name: SourceCount() for name in SOURCES}
    for row, groups in enumerate(itertools.zip_longest(*map(paragraphs, corpora), fillvalue=(None, []))):
        if {pid for pid, _ in groups} != {row} or row >= len(owner):
            sys.exit(
                f"paragraph {row}: the readings do not match each other or row {row} of {RAW}; rerun prepare"
            )
        (_, lines), (_, split), (_, lines_whole), (_, split_whole) = groups
        c = counts[owner[row]]
        c.paragraphs += 1
        c.lines.add(lines, lines_whole, limit)
        c.split.add(split, split_whole, limit)
        shipped = Counter(map(tuple, lines_whole))
        c.same += sum((shipped & Counter(map(tuple, split_whole))).values())
        c.shipped += len(lines_whole)
    if sum(c.paragraphs for c in counts.values()) != len(owner):
        sys.exit(f"fewer paragraphs read than the {len(owner):,} rows of {RAW}; rerun prepare")
    return counts


def percent(new: int, old: int) -> str:
    return f"{(new - old) / old:+.2%}" if old else "n/a"


def count_table(counts: dict[str, SourceCount]) -> str:
    """The Markdown table of :func:`count_sources`, one row per source and their total."""
    rows = [
        "| source | paragraphs | sentences: lines | sentences: split | difference | shipped sentences "
        "given back whole | tokens: lines | tokens: split | difference | words a sentence: lines / split "
        f"| over {Bounds().words} words, cut: lines / split |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, c in [*counts.items(), ("all", total(counts.values()))]:
        a, b = c.lines, c.split
        rows.append(
            f"| {name} | {c.paragraphs:,} | {a.sentences:,} | {b.sentences:,} | "
            f"{b.sentences - a.sentences:+,} ({percent(b.sentences, a.sentences)}) | "
            f"{c.same / max(c.shipped, 1):.1%} | {a.tokens:,} | {b.tokens:,} | "
            f"{b.tokens - a.tokens:+,} ({percent(b.tokens, a.tokens)}) | "
            f"{a.tokens / max(a.sentences, 1):.1f} / {b.tokens / max(b.sentences, 1):.1f} | "
            f"{a.long} / {b.long} |"
        )
    return "\n".join(rows) + "\n"


def count(args: argparse.Namespace) -> None:
    """Print (and with --md record) the sentences and tokens of both readings, per source."""
    text = count_table(count_sources(args.out))
    print(text)
    if args.md:
        notes = (
            "Both corpora read as the caches read them (the studies' corpus settings, the reader's "
            "bounds: a sentence over the word bound counts as its pieces); tokens are the tool's own "
            "(lower-cased, punctuation split off). *Given back whole*: shipped sentences (before the "
            "word bound) that the split reading has word for word in the same paragraph."
        )
        write_section(args.md, "Sentences and tokens", f"{command()}\n{notes}\n\n{text}")


def scores(folder: Path, name: str) -> dict[tuple[str, str], float | None]:
    """``(benchmark, metric) -> score`` of output ``name`` of the study run into ``folder``."""
    record = StudyLayout(folder).scores(name)
    if not record.is_file():
        sys.exit(f"{record}: missing; run the study first (the module docstring has the command)")
    return {(s["benchmark"], s["metric"]): s["score"] for s in json.loads(record.read_text())["scores"]}


def avg5(scores: dict[tuple[str, str], float | None]) -> float | None:
    return next((v for (benchmark, _), v in scores.items() if benchmark == "avg5"), None)


def cell(score: float | None) -> str:
    return "n/a" if score is None else f"{score:.1f}"


def delta(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or b is None else f"{b - a:+.1f}"


def score_tables(out: Path) -> str:
    """avg5 per output both ways with the difference, then every benchmark's row the same way."""
    runs = {name: [scores(out / split, name) for split in SPLITS] for name in STUDENTS}
    head = [
        "| output | avg5: lines | avg5: split | difference |",
        "|---|---:|---:|---:|",
    ]
    for name, (a, b) in runs.items():
        x, y = avg5(a), avg5(b)
        head.append(f"| {name} | {cell(x)} | {cell(y)} | {delta(x, y)} |")
    keys = list(dict.fromkeys(k for a, b in runs.values() for k in (*a, *b)))
    body = [
        "| benchmark | metric | " + " | ".join(f"{n}: lines | {n}: split | difference" for n in runs) + " |",
        "|---|---|" + "---:|---:|---:|" * len(runs),
    ]
    for key in keys:
        cells = [
            f"{cell(a.get(key))} | {cell(b.get(key))} | {delta(a.get(key), b.get(key))}"
            for a, b in runs.values()
        ]
        body.append(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")
    return "\n".join(head) + "\n\n" + "\n".join(body) + "\n"


def table(args: argparse.Namespace) -> None:
    """Print (and with --md record) the two studies' scores side by side."""
    text = score_tables(args.out)
    print(text)
    if args.md:
        notes = "Scores x100, each output on the items it covers (`eval/NAME.json` of each study)."
        write_section(args.md, "Scores", f"{command()}\n{notes}\n\n{text}")


def timed(corpus: Corpus) -> tuple[float, float, int, int]:
    """One pass of the reader: wall seconds, CPU seconds of this process, sentences, tokens."""
    wall, cpu = time.perf_counter(), time.process_time()
    n = tokens = 0
    for _, toks in corpus.sentences():
        n += 1
        tokens += len(toks)
    return time.perf_counter() - wall, time.process_time() - cpu, n, tokens


def speed(args: argparse.Namespace) -> None:
    """Time the reader (read, split, tokenise) over raw.jsonl.xz in this process; best of --repeat."""
    with lzma.open(args.out / RAW, "rt", encoding="utf-8") as f:
        words = sum(len(json.loads(line)["text"].split()) for line in f)
    corpus = study_corpus(args.out / "sentences.toml")
    load = os.getloadavg()
    wall, cpu, n, tokens = min(timed(corpus) for _ in range(max(args.repeat, 1)))
    after = os.getloadavg()
    text = (
        f"Date {date.today()}; {cpu_name()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average (1 min) {load[0]:.2f} before, {after[0]:.2f} after.\n\n"
        f"Reader + splitter + tokeniser (`Corpus.sentences()` with `split = sentences`), one process, "
        f"best of {args.repeat}: {words:,} whitespace words ({tokens:,} tokens, {n:,} sentences) in "
        f"{wall:.1f} s wall, {cpu:.1f} s CPU: **{words / wall:,.0f} words/s wall**, "
        f"{words / cpu:,.0f} words/s CPU, {tokens / wall:,.0f} tokens/s wall.\n"
    )
    print(text)
    if args.md:
        write_section(args.md, "Reader speed on raw.jsonl.xz", f"{command()}\n{text}")


def command() -> str:
    """The command that ran, as a fenced block for the results file."""
    return f"```\npython {argv_line(sys.argv)}\n```\n"


def write_section(md: Path, title: str, body: str) -> None:
    """Replace (or append) the section ``## title`` of ``md``: each subcommand owns one section."""
    text = md.read_text(encoding="utf-8") if md.is_file() else f"# {TITLE}\n"
    head = f"## {title}\n"
    start = text.find(head)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + head + "\n" + body
    else:
        end = text.find("\n## ", start + len(head))
        text = text[:start] + head + "\n" + body + (text[end:] if end >= 0 else "")
    md.write_text(text, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="write raw.jsonl.xz and the two study files")
    p.add_argument("--shared", type=Path, default=SHARED_CORPUS, help="folder of brown/sotu/gcide .txt.xz")
    for name, what in (("count", "sentences and tokens each way"), ("table", "the two studies' scores"),
                       ("speed", "the reader's words/s on raw.jsonl.xz")):  # fmt: skip
        s = sub.add_parser(name, help=what)
        s.add_argument("--md", type=Path, help="also write this section of the results file")
        if name == "speed":
            s.add_argument("--repeat", type=int, default=3, help="passes timed; the best is reported")
    for s in sub.choices.values():
        s.add_argument("--out", type=Path, required=True, help="the folder prepare writes")
    args = ap.parse_args()
    {"prepare": prepare, "count": count, "table": table, "speed": speed}[args.command](args)


if __name__ == "__main__":
    main()
