"""The ``ase`` table of several corpora together, from one teacher pass over each (the data step of
``sentences_mpnet_full_*.md``: how much more text adds, without a third pass over all of it).

    python bench/probes/pooled_ase.py runs/sentences_mpnet_full/caches/mpnet \\
        runs/sentences_prose/caches/mpnet -o runs/v/mpnet_pooled_ase

ASE is a per-word mean, ``v_w = (1/|occ(w)|) sum o_i`` (students/ase.py), and every cache holds the
per-word sums and counts of its own corpus, so the mean over all the corpora is their pooled sums
over their pooled counts: the table one pass over the concatenated text would give, but for a word
that is below extract's ``min_count`` in each corpus and above it in their sum (left out here). The
caches must come from one teacher at one layer and precision (checked: their identities' teacher
entries must agree). The composer for words outside the table is fitted from the first cache's
token table (the teacher's input embeddings: the same in every cache of that teacher).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ctx2static.cache import Cache
from ctx2static.cache.compose import fit_composer
from ctx2static.students.cache_input import occurrence_means
from ctx2static.vectors import Vectors


def pooled(caches: list[Cache]) -> Vectors:
    """Per word: the sum of its contextual vectors over every cache, over its count in all of them."""
    index: dict[str, int] = {}
    for cache in caches:
        for w in cache.vocab.words:
            index.setdefault(w, len(index))
    dim = caches[0].word_sums()[0].shape[1]
    sums = np.zeros((len(index), dim), dtype=np.float64)
    seen = np.zeros(len(index), dtype=np.int64)
    counts = np.zeros(len(index), dtype=np.int64)
    for cache in caches:
        means, n = occurrence_means(cache)
        rows = np.array([index[w] for w in cache.vocab.words])
        sums[rows] += means.astype(np.float64) * n[:, None]
        seen[rows] += n
        counts[rows] += cache.vocab.counts
    keep = np.flatnonzero(seen > 0)
    order = keep[np.argsort(-counts[keep], kind="stable")]  # most frequent first, as a table is
    words = list(index)
    table = (sums[order] / seen[order, None]).astype(np.float32)
    meta = {
        "student": "ase",
        "teacher": caches[0].manifest["identity"].get("teacher", {}).get("name"),
        "corpus": [c["path"] for cache in caches for c in cache.manifest["identity"].get("corpus", [])],
        "train": {"occurrences": int(seen.sum()), "pooled_caches": len(caches)},
    }
    return Vectors([words[i] for i in order], table, counts[order], meta)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("caches", nargs="+", type=Path, help="teacher caches of one teacher (2 or more)")
    ap.add_argument("-o", "--out", required=True, type=Path, help="the vectors folder to write")
    args = ap.parse_args()
    if len(args.caches) < 2:
        sys.exit("error: give two caches or more (one cache: cli.py fit-student -s ase)")
    if args.out.exists():
        sys.exit(f"error: {args.out} exists; choose a new --out")
    caches = [Cache.open(c) for c in args.caches]
    teachers = {repr(c.manifest["identity"].get("teacher")) for c in caches}
    if len(teachers) != 1:
        sys.exit(
            f"error: the caches come from different teachers, layers or precisions: {' / '.join(teachers)}"
        )
    vectors = pooled(caches)
    vectors.composer = fit_composer(caches[0], vectors)
    vectors.save(args.out)
    occurrences = vectors.meta["train"]["occurrences"]
    print(f"{args.out}: {len(vectors):,} words from {len(caches)} caches ({occurrences:,} occurrences)")


if __name__ == "__main__":
    main()
