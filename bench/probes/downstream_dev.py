"""Choose the downstream probes' hyper-parameters once, on development data, with SGNS vectors.

    python bench/probes/downstream_dev.py /tmp/sgns.bin > bench/results/downstream_dev.md

POS: window tagger trained on Brown training fold 0 (every pos_stride-th sentence), scored on the
development files (NN mod 5 = 1), never on the test files. NER: fold 0 of the k folds. Sentiment:
fold 0 of each set. Grid: C in {0.001, 0.01, 0.1, 1} (C in {0.1, 1, 10} for sentiment) x max_iter
in {30, 50}; other options at their defaults. Prints a Markdown table; the chosen values are the
ProbeConfig defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numpy as np

from ctx2static.eval.downstream.data import Task
from ctx2static.eval.downstream.probes import ProbeConfig, encode, folds
from ctx2static.eval.downstream.tagsets import brown_universal
from ctx2static.eval.downstream.tasks import (
    _token_index,
    brown_split,
    load_downstream,
    ner_fold_f1,
    pos_accuracy,
    sentiment_features,
    sentiment_fold_accuracy,
    train_pos,
)
from ctx2static.threads import blas_threads
from ctx2static.vectors import Vectors

TAGGER_C = (0.001, 0.01, 0.1, 1.0)
SENTIMENT_C = (0.1, 1.0, 10.0)
ITERS = (30, 50)


def row(task: str, c: float, it: int, score: float, start: float) -> None:
    print(f"| {task} | {c} | {it} | {100 * score:.2f} | {time.process_time() - start:.1f} |", flush=True)


def main(path: str) -> None:
    vectors = Vectors.load(path)
    pos, ner, *sentiment = load_downstream(tuple(Task))
    base = ProbeConfig()
    enc = encode(vectors, pos.brown.words)
    gold = np.array([brown_universal(t) for s in pos.brown.tags for t in s])
    part = brown_split(pos.brown.docs)
    dev = _token_index(enc.sent, part == -2)
    ner_enc = encode(vectors, ner.data.words)
    ner_gold = np.array([t for s in ner.data.tags for t in s])
    ner_fold = folds(len(ner.data.words), base.ner_folds)
    sent = [(sentiment_features(vectors, t.data)[1], np.array(t.data.labels)) for t in sentiment]
    print(f"vectors: {path} ({len(vectors):,} x {vectors.dim}); load average {os.getloadavg()[0]:.1f}\n")
    print("| task | C | max_iter | dev score x100 | CPU s |")
    print("|---|---:|---:|---:|---:|")
    with blas_threads(1):
        for it in ITERS:
            for c in TAGGER_C:
                cfg = dataclasses.replace(base, pos_c=c, ner_c=c, max_iter=it)
                start = time.process_time()
                acc = pos_accuracy(train_pos(enc, gold, part, 0, cfg), enc, gold, dev, cfg)
                row("POS (Brown dev files)", c, it, acc, start)
                start = time.process_time()
                f1 = ner_fold_f1(ner_enc, ner_gold, ner_fold, 0, cfg)
                row("NER (fold 0)", c, it, f1, start)
            for c in SENTIMENT_C:
                cfg = dataclasses.replace(base, sentiment_c=c, max_iter=it)
                start = time.process_time()
                acc = np.mean(
                    [
                        sentiment_fold_accuracy(x, y, folds(len(y), cfg.sentiment_folds), 0, cfg)
                        for x, y in sent
                    ]
                )
                row("sentiment (fold 0, mean of 2 sets)", c, it, acc, start)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("vectors", help="SGNS vectors (any format Vectors.load reads).")
    main(ap.parse_args().vectors)
