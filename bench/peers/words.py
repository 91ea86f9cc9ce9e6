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


def vocab_words(model: Path, vocab: Vocab) -> Vectors:
    """Each word of ``vocab`` as the Model2Vec folder ``model`` encodes it (its tokens' pooled vector)."""
    from model2vec import StaticModel

    words = list(vocab.words)
    matrix = np.asarray(StaticModel.from_pretrained(str(model)).encode(words, batch_size=4096), np.float32)
    meta = {"student": model.name, "source": str(model)}
    timings = model.with_name(model.name + ".timings.json")
    if timings.exists():
        record = json.loads(timings.read_text())
        meta |= {"peer": record["peer"], "train_seconds": record["total_wall_s"]}
    return Vectors(words, matrix, vocab.counts.copy(), meta)


def study_vocab(corpus: list[str], min_count: int) -> Vocab:
    """The vocabulary a study builds from ``corpus`` at ``min_count``."""
    return Vocab.build(Corpus(corpus), VocabConfig(min_count=min_count))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, type=Path, help="a peer's Model2Vec folder")
    ap.add_argument("--corpus", action="append", required=True, help="the study's corpus files")
    ap.add_argument("--min-count", type=int, default=VocabConfig().min_count)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    vectors = vocab_words(args.model, study_vocab(args.corpus, args.min_count))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    vectors.save(args.out)
    print(f"{args.model.name}: {len(vectors):,} words -> {args.out}")


if __name__ == "__main__":
    main()
