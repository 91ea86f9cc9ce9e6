"""Static models' encode speed on the same texts, side by side in one run: texts a second on a CPU.

    python bench/speed/encode_speed.py --model potion-base-8M=runs/peers/potion-base-8M \\
        --model eg_ase-256=runs/v/eg_ase-256 --out bench/results/encode_speed.md

Each ``--model NAME=FOLDER`` is a Model2Vec folder (a peer's, or ``cli.py export --format
model2vec``), loaded by ``model2vec.StaticModel`` and timed on ``StaticModel.encode`` of the same
texts: the bundled sentence sets' texts (all of them, in their order), or the lines of ``--texts``
files. Every model encodes them ``--repeats`` times, the models taking turns (A B A B ...) so a
change of the machine's load falls on all alike; a model's time is its fastest round. The ratio
column is texts a second against the first row's. ``encode`` runs at its defaults, as a user's call
does (above 10,000 texts a pool of processes, one a core; each text cut at the model's
``max_length`` tokens' worth of characters). Beside each round the tokenizer alone,
``StaticModel.tokenize`` of the whole texts in this one process, is timed: the work that differs
between folders (a table lookup and a mean are the rest). Run it on a quiet machine: the load
average before the first round is in the header.
"""

from __future__ import annotations

import argparse
import datetime
import lzma
import os
import sys
import time
from pathlib import Path

from machine import argv_line, cpu_name, write_keeping_reading


def texts_of(files: list[Path]) -> list[str]:
    """The bundled sentence sets' texts, or the non-empty lines (last tab field) of ``files``."""
    if not files:
        from ctx2static.eval.sentences import PairSet, load_sentences

        texts: list[str] = []
        for data in load_sentences():
            texts += [*data.first, *data.second] if isinstance(data, PairSet) else list(data.texts)
        return texts
    out: list[str] = []
    for f in files:
        opener = lzma.open if f.suffix == ".xz" else open
        with opener(f, "rt", encoding="utf-8") as fh:
            out += [line.rstrip("\n").split("\t")[-1] for line in fh if line.strip()]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--model", action="append", required=True, help="NAME=FOLDER (a Model2Vec folder); repeat"
    )
    ap.add_argument(
        "--texts", action="append", type=Path, default=[], help="text files (default: bundled sets)"
    )
    ap.add_argument("--repeats", type=int, default=3, help="rounds per model; the fastest counts")
    ap.add_argument("--out", required=True, type=Path, help="the Markdown file to write")
    args = ap.parse_args()
    from model2vec import StaticModel

    named = [m.split("=", 1) for m in args.model]
    if any(len(m) != 2 for m in named):
        sys.exit("error: --model takes NAME=FOLDER")
    texts = texts_of(args.texts)
    models = {name: StaticModel.from_pretrained(folder) for name, folder in named}
    load = os.getloadavg()[0]
    best = {name: float("inf") for name in models}
    tokenizing = dict(best)
    for _ in range(args.repeats):
        for name, model in models.items():
            start = time.perf_counter()
            model.encode(texts)
            best[name] = min(best[name], time.perf_counter() - start)
            start = time.perf_counter()
            model.tokenize(texts)
            tokenizing[name] = min(tokenizing[name], time.perf_counter() - start)
    words = sum(len(t.split()) for t in texts)
    base = len(texts) / best[named[0][0]]
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Static models' encode speed, side by side",
        "",
        f"Date: {stamp}. Machine: {cpu_name()}, {os.cpu_count()} cores, load average {load:.2f} before "
        f"the first round. Command (repository root): `{argv_line(['python', *sys.argv])}`.",
        "",
        f"{len(texts):,} texts ({words:,} words split on spaces), `StaticModel.encode` of all of them, "
        f"fastest of {args.repeats} rounds taken in turns; the ratio is texts a second against the first "
        "row's (`encode` at its defaults: a pool of processes above 10,000 texts). The tokenizer alone: "
        "`StaticModel.tokenize` of the whole texts in one process, fastest of as many rounds, its ratio "
        "the first row's seconds over the row's.",
        "",
        "| model | rows | dims | texts/s | ratio | seconds | tokenizer s | tokenizer ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, model in models.items():
        rows, dims = model.embedding.shape
        rate = len(texts) / best[name]
        alone = tokenizing[named[0][0]] / tokenizing[name]
        lines.append(
            f"| {name} | {rows:,} | {dims} | {rate:,.0f} | {rate / base:.2f} | {best[name]:.2f} "
            f"| {tokenizing[name]:.2f} | {alone:.2f} |"
        )
        print(f"{name}: {rate:,.0f} texts/s", flush=True)
    write_keeping_reading(args.out, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
