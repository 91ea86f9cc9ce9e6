"""Peers and our vectors side by side: sentence level (each Model2Vec folder encodes the texts with
its own tokenizer and pooling), word level (``cli.py eval`` on word-vectors files), and the
recipes' wall time and peak memory from their ``<folder>.timings.json``.

Runs in ctx2static's environment (model2vec loads a folder without its distill extra). Our side is
a folder from ``cli.py export --format model2vec``; the peers' word vectors come from ``words.py``:

    python cli.py export runs/brown/ase.c2s --format model2vec -o runs/export/ase-brown
    python bench/peers/compare.py \\
        --model model2vec=runs/peers/model2vec-minilm --words model2vec=runs/peers/model2vec-brown.bin \\
        --model tokenlearn=runs/peers/tokenlearn-minilm-brown \\
        --words tokenlearn=runs/peers/tokenlearn-brown.bin \\
        --model ase=runs/export/ase-brown --words ase=runs/brown/ase.c2s \\
        --out bench/results/peers_brown.md

Sentence level: both bundled sentiment sets (data/downstream/), logistic regression on the
embeddings with the downstream probes' classifier and iteration budget (``ProbeConfig``) and fixed
folds (text i in fold i mod 5), mean +- std of the fold accuracies.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ctx2static.eval.downstream.data import SENTIMENT_FILES, read_labelled
from ctx2static.eval.downstream.probes import ProbeConfig, folds
from ctx2static.eval.downstream.tasks import sentiment_fold_accuracy
from ctx2static.resources import DOWNSTREAM_DIR

FOLDS = 5


def named(items: list[str], flag: str) -> dict[str, Path]:
    """``NAME=PATH`` arguments as a dict, in the order given."""
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            sys.exit(f"error: {flag} {item!r}: expected NAME=PATH")
        out[name] = Path(path)
    return out


def sentence_scores(folder: Path, config: ProbeConfig) -> dict[str, tuple[float, float]]:
    """Mean and std (x100) of the fold accuracies on each sentiment set, for one Model2Vec folder."""
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(str(folder))
    scores = {}
    for name in SENTIMENT_FILES:
        data = read_labelled(DOWNSTREAM_DIR / name)
        x = np.asarray(model.encode(data.texts), dtype=np.float32)
        y = np.array(data.labels)
        fold = folds(len(y), FOLDS)
        acc = [100 * sentiment_fold_accuracy(x, y, fold, j, config) for j in range(FOLDS)]
        scores[data.name] = (float(np.mean(acc)), float(np.std(acc)))
    return scores


def word_table(words: dict[str, Path]) -> str:
    """``cli.py eval``'s Markdown table for the word-vectors files (scored on common items)."""
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "words.md"
        cli = Path(__file__).resolve().parents[2] / "cli.py"
        subprocess.run(
            [sys.executable, str(cli), "eval", *map(str, words.values()), "--markdown", str(table)],
            check=True,
        )
        text = table.read_text()
    for name, path in words.items():
        text = text.replace(str(path), name)
    return text


def timings_rows(models: dict[str, Path]) -> list[str]:
    """One row per folder that has ``<folder>.timings.json``: each step's wall time and peak RSS."""
    rows = ["| recipe | step | wall s | peak RSS MiB |", "|---|---|---:|---:|"]
    for name, folder in models.items():
        path = folder.with_name(folder.name + ".timings.json")
        if path.exists():
            record = json.loads(path.read_text())
            for step, t in record["steps"].items():
                rows.append(f"| {name} | {step} | {t['wall_s']} | {t['peak_rss_mib']} |")
            rows.append(f"| {name} | total | {record['total_wall_s']} | |")
    return rows if len(rows) > 2 else []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", action="append", default=[], help="NAME=Model2Vec folder (sentence level)")
    ap.add_argument("--words", action="append", default=[], help="NAME=word-vectors file (word level)")
    ap.add_argument("--out", type=Path, help="write the tables here as Markdown (else print)")
    args = ap.parse_args()
    models, words = named(args.model, "--model"), named(args.words, "--words")
    config = ProbeConfig()
    lines = [f"# Peers side by side ({time.strftime('%Y-%m-%d', time.gmtime())})", ""]
    lines += ["Command: `python " + " ".join(sys.argv) + "`", ""]
    if models:
        scores = {name: sentence_scores(folder, config) for name, folder in models.items()}
        sets = list(next(iter(scores.values())))
        lines += ["## Sentence level: accuracy x100, mean +- std over 5 fixed folds", ""]
        lines += ["| model | " + " | ".join(sets) + " | mean |", "|---|" + "---:|" * (len(sets) + 1)]
        for name, s in scores.items():
            cells = [f"{s[k][0]:.1f} +- {s[k][1]:.1f}" for k in sets]
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {np.mean([s[k][0] for k in sets]):.1f} |")
        lines += [
            "",
            f"Logistic regression C={config.sentiment_c}, max_iter={config.max_iter}, standardised.",
            "",
        ]
    if words:
        lines += ["## Word level (`cli.py eval`)", "", word_table(words), ""]
    timing = timings_rows(models)
    if timing:
        lines += ["## Recipes: wall time and peak memory per step", "", *timing, ""]
    text = "\n".join(lines)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
