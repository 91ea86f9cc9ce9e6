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

With ``--sentence`` the table is then the ``sentence`` student's (students/sentence.py, (S1)-(S2))
over every cache's sentences, from that pooled start at the student's defaults: the design matrix
X of each shard is written over the pooled words, so (S2) sums over all the corpora's sentences, as
one pass over their concatenation would. A teacher with a rogue dimension (the student's
``standardize`` would z-score) is refused: the caches' statistics are not pooled here.

    python bench/probes/pooled_ase.py --sentence runs/sentences_mpnet_full/caches/mpnet \\
        runs/sentences_prose/caches/mpnet -o runs/v/mpnet_pooled_sentence

With ``--kd`` it is the ``sentence-kd`` student's (students/sentence_kd.py, (K2)) at its defaults:
the affine start map fitted over every cache's sentences, then each epoch visits the shards of all
the caches in one drawn order, each cache's word ids mapped to the pooled rows (its ``Source``).

    python bench/probes/pooled_ase.py --kd runs/sentences_mpnet_full/caches/mpnet \\
        runs/sentences_prose/caches/mpnet -o runs/v/mpnet_pooled_kd

``--epochs N`` sets the sentence-kd student's epochs (its default otherwise).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ctx2static.cache import Cache
from ctx2static.cache.compose import fit_composer
from ctx2static.students import sentence, sentence_kd
from ctx2static.students.cache_input import context_stats, occurrence_means
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


def pooled_sentence(caches: list[Cache], start: Vectors) -> Vectors:
    """The sentence student's (S2) over every cache's sentences, X's columns the rows of ``start``."""
    config = sentence.Config()
    row = {w: i for i, w in enumerate(start.words)}
    systems = []
    for cache in caches:
        stats = context_stats(cache, "sent_ctx", config.standardize, "sentence")
        if stats is not None and stats.wanted(config.standardize):
            sys.exit(f"error: {cache.folder}: a rogue dimension; the student would z-score, not pooled here")
        columns = np.array([row.get(w, -1) for w in cache.vocab.words], dtype=np.int64)
        systems.append(sentence.read_system(cache, len(start), None, columns))
    blocks = [X for system in systems for X in system.X]
    xt_t = sum(system.xt_t for system in systems)
    energy = sum(system.t_energy for system in systems)
    n_sent = sum(system.n_sentences for system in systems)
    R0 = start.matrix.astype(np.float64)
    R, iterations, residual = sentence.solve(
        blocks, xt_t + config.ridge * R0, R0, config.ridge, config.iterations, config.tolerance
    )
    before = sentence.objective(blocks, xt_t, energy, R0, R0, config.ridge) / max(n_sent, 1)
    after = sentence.objective(blocks, xt_t, energy, R, R0, config.ridge) / max(n_sent, 1)
    print(f"sentence: {n_sent:,} sentences, {iterations} CG iterations (residual {residual:.1e}), "
          f"objective a sentence {before:.4f} at the pooled start, {after:.4f} fitted")  # fmt: skip
    train = {**start.meta["train"], "sentences": n_sent, "cg_iterations": iterations, "objective": after}
    meta = {**start.meta, "student": "sentence", "train": train}
    return Vectors(list(start.words), R.astype(np.float32), start.counts.copy(), meta)


def pooled_kd(caches: list[Cache], start: Vectors, epochs: int | None = None) -> Vectors:
    """The sentence-kd student over every cache's sentences, its rows those of ``start``."""
    row = {w: i for i, w in enumerate(start.words)}
    sources = [
        sentence_kd.Source(cache, np.array([row.get(w, -1) for w in cache.vocab.words], dtype=np.int64))
        for cache in caches
    ]
    config = sentence_kd.Config() if epochs is None else sentence_kd.Config(epochs=epochs)
    R, train = sentence_kd.train_rows(sources, start.matrix, config)
    print(f"sentence-kd: {train['adam_steps']:,} Adam steps, loss a batch {train['loss_per_epoch']}")
    meta = {**start.meta, "student": "sentence-kd", "train": {**start.meta["train"], **train}}
    return Vectors(list(start.words), R, start.counts.copy(), meta)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("caches", nargs="+", type=Path, help="teacher caches of one teacher (2 or more)")
    then = ap.add_mutually_exclusive_group()
    then.add_argument("--sentence", action="store_true", help="then the sentence student over all of them")
    then.add_argument("--kd", action="store_true", help="then the sentence-kd student over all of them")
    ap.add_argument("--epochs", type=int, help="--kd: the student's epochs (default: its own)")
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
    if args.sentence:
        vectors = pooled_sentence(caches, vectors)
    elif args.kd:
        vectors = pooled_kd(caches, vectors, args.epochs)
    vectors.composer = fit_composer(caches[0], vectors)
    vectors.save(args.out)
    occurrences = vectors.meta["train"]["occurrences"]
    print(f"{args.out}: {len(vectors):,} words from {len(caches)} caches ({occurrences:,} occurrences)")


if __name__ == "__main__":
    main()
