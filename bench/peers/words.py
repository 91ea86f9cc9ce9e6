"""A peer's Model2Vec folder as word vectors over a study's vocabulary, for its ``[references.NAME]``.

A Model2Vec model embeds subword tokens; every word of the corpus vocabulary (built as a study
builds it: the same files and min_count) gets ``StaticModel.encode(word)`` (its tokens' pooled
vector), so the peer is evaluated on the study's vocabulary. Runs in ctx2static's environment
(model2vec loads a folder without its distill extra):

    S=../shared/corpus
    python bench/peers/words.py --model runs/peers/model2vec-minilm --min-count 5 \\
        --corpus $S/brown.txt.xz --corpus $S/sotu.txt.xz --corpus $S/gcide.txt.xz \\
        --out runs/peers/model2vec-minilm.bin

The recipe's wall time from ``<model>.timings.json`` becomes ``train_seconds``, which the study's
timings table shows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig
from ctx2static.vectors import Vectors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, type=Path, help="a peer's Model2Vec folder")
    ap.add_argument("--corpus", action="append", required=True, help="the study's corpus files")
    ap.add_argument("--min-count", type=int, default=VocabConfig().min_count)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(str(args.model))
    vocab = Vocab.build(Corpus(args.corpus), VocabConfig(min_count=args.min_count))
    words = list(vocab.words)
    matrix = np.asarray(model.encode(words, batch_size=4096), dtype=np.float32)
    meta = {"student": args.model.name, "source": str(args.model)}
    timings = args.model.with_name(args.model.name + ".timings.json")
    if timings.exists():
        record = json.loads(timings.read_text())
        meta |= {"peer": record["peer"], "train_seconds": record["total_wall_s"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Vectors(words, matrix, vocab.counts.copy(), meta).save(args.out)
    print(f"{args.model.name}: {len(words):,} words -> {args.out}")


if __name__ == "__main__":
    main()
