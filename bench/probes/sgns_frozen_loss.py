"""sgns's loss per pair, online against frozen, epoch by epoch: does training get worse late on?

    python bench/probes/sgns_frozen_loss.py --corpus data/demo/brown.txt.xz \\
        --out bench/results/sgns_frozen_loss.md

``compute_loss`` reports the loss of each pair as it is trained (online), with the model moving
under it; it rose in the last epochs of a five-epoch run while the learning rate decayed. This
trains sgns with the product's epoch loop and kernel (``word2vec.train``'s setup, the same seed
and schedule), and after every epoch scores the frozen model on one fixed sample of pairs (a pass
of the same loop at learning rate 0, its random stream fixed, so every epoch is scored on the same
windows, subsampling and negatives). If the frozen loss falls while the online one rises, the
rise is the online measure's bias, not training going wrong.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ctx2static.students import sampling, sgns
from ctx2static.students.word2vec import chunk_bounds, chunk_order, epoch_driver
from ctx2static.text.corpus import Corpus
from ctx2static.text.encoded import encode_corpus
from ctx2static.text.vocab import Vocab, VocabConfig
from ctx2static.threads import numba_threads

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import argv_line, write_keeping_reading

SCORING_EPOCH = 1_000_000
"""The epoch number that seeds the frozen passes' random stream: one fixed sample, never trained on."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", nargs="+", required=True)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    cfg = sgns.Config(epochs=args.epochs, threads=args.threads, compute_loss=True)
    t0 = time.perf_counter()
    corpus = Corpus(args.corpus)
    vocab = Vocab.build(corpus, VocabConfig(min_count=args.min_count))
    rows = []
    with tempfile.TemporaryDirectory() as work:
        enc = encode_corpus(corpus, vocab, work)
        ids, starts = np.asarray(enc.ids, np.int32), np.asarray(enc.sent_starts, np.int64)
        n_tokens = int(starts[-1])
        rng = np.random.default_rng(cfg.seed)
        syn0 = ((rng.random((len(vocab), cfg.dim), dtype=np.float32) - 0.5) / cfg.dim).astype(np.float32)
        syn1neg = np.zeros_like(syn0)
        cum_table = sampling.negative_table(vocab.counts, cfg.ns_exponent)
        keep_prob = sampling.keep_probabilities(vocab.counts, cfg.sample)
        bounds = chunk_bounds(starts)
        stats = np.zeros((len(bounds) - 1, 3))
        done = np.zeros(len(bounds) - 1, dtype=np.int64)
        run_epoch = epoch_driver(sgns.sg_centre)
        total = cfg.epochs * n_tokens

        def epoch_pass(lr: float, min_lr: float, before: int, epoch: int) -> float:
            done[:] = 0
            run_epoch(
                ids, starts, bounds, order, syn0, syn1neg, cum_table, keep_prob, cfg.window,
                cfg.negative, lr, min_lr, before, total, cfg.seed, epoch, True, done, stats,
            )  # fmt: skip
            return float(stats[:, 0].sum() / max(stats[:, 1].sum(), 1))

        with numba_threads(cfg.threads) as threads:
            order = chunk_order(len(bounds) - 1, threads)
            rows.append((0, None, epoch_pass(0.0, 0.0, 0, SCORING_EPOCH)))
            for epoch in range(cfg.epochs):
                online = epoch_pass(cfg.lr, cfg.min_lr, epoch * n_tokens, epoch)
                rows.append((epoch + 1, online, epoch_pass(0.0, 0.0, 0, SCORING_EPOCH)))
    lines = [
        "# sgns: online and frozen loss per pair, epoch by epoch",
        "",
        f"Date: {datetime.date.today()}. Command (repository root): `python {argv_line(sys.argv)}` "
        f"({(time.perf_counter() - t0) / 60:.1f} min, {threads} threads).",
        "",
        f"{n_tokens:,} tokens, {len(vocab):,} words (min_count {args.min_count}); sgns at its defaults "
        f"(dim {cfg.dim}, window {cfg.window}, negative {cfg.negative}, lr {cfg.lr} -> {cfg.min_lr}, "
        f"sample {cfg.sample}, seed {cfg.seed}). Online: the mean loss of the epoch's pairs as each was "
        "trained. Frozen: the model after the epoch, scored on one fixed pass of pairs at learning rate 0.",
        "",
        "| after epoch | online loss / pair | frozen loss / pair |",
        "|---:|---:|---:|",
    ]
    lines += [f"| {e} | {'' if o is None else f'{o:.4f}'} | {f:.4f} |" for e, o, f in rows]
    print("\n".join(lines))
    write_keeping_reading(args.out, "\n".join(lines))


if __name__ == "__main__":
    main()
