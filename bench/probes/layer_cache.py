"""A cache at another ``--layer`` from a last-layer cache and the layer probe's saved arrays.

x2static, ``ase`` and ``word`` read only the layer-dependent arrays that
``layer_ase_sweep.py --save`` keeps for every hidden state (sentence means, per-word sums, the
``word`` table), and averaging layers commutes with every mean the cache holds. So a cache at a
layer spec is the last-layer cache with ``sent_ctx`` and vocab.h5's ``occ_sum``/``word_emb``
replaced by their averages over the spec's hidden states (through ``cache.derive``: every other
file hard-linked). The copy keeps the default signals only (per-occurrence vectors and attention
rows belong to the last layer and are left out). It takes a minute where a second extract of the
full corpus takes an hour.

    PYTHONPATH=<pkg> python bench/probes/layer_cache.py CACHE SAVED OUT --layer=1:
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ctx2static.cache.derive import Arrays, derive_cache
from ctx2static.cache.reader import Cache
from ctx2static.pipeline.config import parse_layers

DROPPED = ("occ_vec", "attention")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache", type=Path, help="a complete cache made at the last layer")
    ap.add_argument("saved", type=Path, help="the --save folder of layer_ase_sweep.py on the same corpus")
    ap.add_argument("out", type=Path)
    ap.add_argument("--layer", required=True, help="a layer spec as extract --layer takes it")
    args = ap.parse_args()
    means = np.load(args.saved / "sent_means.npy", mmap_mode="r")
    pick = list(parse_layers(args.layer, means.shape[1]))
    cache = Cache.open(args.cache)
    if cache.totals("n_sentences") != len(means):
        raise SystemExit(f"{args.cache}: not a cache of the {len(means):,} sentences of --save")
    if not np.array_equal(cache.vocab_arrays()["occ_count"], np.load(args.saved / "occ_count.npy")):
        raise SystemExit(f"{args.saved}: its occurrence counts differ from {args.cache}'s")
    first = [0]

    def sent_ctx(arrays: Arrays) -> Arrays:
        n = len(arrays["sent_ctx"])
        rows = means[first[0] : first[0] + n, pick].mean(1).astype(arrays["sent_ctx"].dtype)
        first[0] += n
        print(f"{n:,} sentences", flush=True)
        return arrays | {"sent_ctx": rows}

    def tables(vocab: Arrays) -> Arrays:
        for key in ("occ_sum", "word_emb"):
            layers = np.load(args.saved / f"{key}.npy", mmap_mode="r")
            vocab[key] = layers[:, pick].mean(1).astype(vocab[key].dtype)
        return vocab

    def identity(ident: dict) -> None:
        ident["options"].update(vectors=False, attention=0)
        ident["teacher"]["layer"] = pick if len(pick) > 1 else pick[0]

    derive_cache(args.cache, args.out, sent_ctx, tables, DROPPED, identity=identity)
    print(f"wrote {args.out} (--layer {args.layer}: hidden states {pick})")


if __name__ == "__main__":
    main()
