"""Model2Vec (pip model2vec[distill], its defaults: PCA 256) distilled from a teacher, for a study's
``[references.NAME]``.

Model2Vec's static model embeds subword tokens; every word of the corpus vocabulary (built as a
study builds it: the same files and min_count) gets ``StaticModel.encode(word)`` (its tokens'
mean), so the peer is evaluated on the study's vocabulary:

    S=../shared/corpus
    python bench/peers/model2vec_peer.py --teacher minilm --min-count 5 \
        --corpus $S/brown.txt.xz --corpus $S/sotu.txt.xz --corpus $S/gcide.txt.xz \
        --out runs/peers/model2vec-minilm.bin

Distilling MiniLM took 233 s on 2 CPU cores (recorded as ``train_seconds``, which the study's
timings table shows).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from ctx2static.pipeline.models import resolve
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig
from ctx2static.vectors import Vectors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teacher", default="minilm", help="as for `cli.py extract --teacher`")
    ap.add_argument("--corpus", action="append", required=True, help="the study's corpus files")
    ap.add_argument("--min-count", type=int, default=VocabConfig().min_count)
    ap.add_argument("--pca-dims", type=int, default=256)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    from model2vec.distill import distill

    source = resolve(args.teacher)
    vocab = Vocab.build(Corpus(args.corpus), VocabConfig(min_count=args.min_count))
    start = time.perf_counter()
    model = distill(model_name=source, pca_dims=args.pca_dims)
    seconds = time.perf_counter() - start
    words = list(vocab.words)
    matrix = np.asarray(model.encode(words, batch_size=4096), dtype=np.float32)
    meta = {"student": "model2vec", "teacher": args.teacher, "source": source}
    meta["train_seconds"] = round(seconds, 2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Vectors(words, matrix, vocab.counts.copy(), meta).save(args.out)
    print(f"model2vec: distilled {source} in {seconds:.1f} s; {len(words):,} words -> {args.out}")


if __name__ == "__main__":
    main()
