"""A cache at another ``--layer`` from a last-layer cache and the layer probe's saved arrays.

x2static, ``ase`` and ``word`` read only the layer-dependent arrays that
``layer_ase_sweep.py --save`` keeps for every hidden state (sentence means, per-word sums, the
``word`` table), and averaging layers commutes with every mean the cache holds. So a cache at a
layer spec is the last-layer cache with ``sent_ctx`` and vocab.h5's ``occ_sum``/``word_emb``
replaced by their averages over the spec's hidden states. The copy keeps the default signals only
(per-occurrence vectors and attention rows belong to the last layer and are left out); every
other file is hard-linked and the manifest records the new digests and the layer. It takes a
minute where a second extract of the full corpus takes an hour.

    PYTHONPATH=<pkg> python bench/probes/layer_cache.py CACHE SAVED OUT --layer 1:
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from ctx2static.cache.layout import MANIFEST, VOCAB_H5
from ctx2static.cache.writer import read_h5, write_h5
from ctx2static.fileio import write_json
from ctx2static.pipeline.config import parse_layers

DROPPED = ("occ_vec", "attention")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache", type=Path, help="a complete cache made at the last layer")
    ap.add_argument("saved", type=Path, help="the --save folder of layer_ase_sweep.py on the same corpus")
    ap.add_argument("out", type=Path)
    ap.add_argument("--layer", required=True, help="a layer spec as extract --layer takes it")
    args = ap.parse_args()
    manifest = json.loads((args.cache / MANIFEST).read_text())
    means = np.load(args.saved / "sent_means.npy", mmap_mode="r")
    pick = list(parse_layers(args.layer, means.shape[1]))
    if not manifest["complete"] or manifest["totals"]["n_sentences"] != len(means):
        raise SystemExit(f"{args.cache}: not a complete cache of the {len(means):,} sentences of --save")
    args.out.mkdir(parents=True, exist_ok=False)
    rewritten = {VOCAB_H5} | {f"{s['name']}.h5" for s in manifest["shards"]}
    for path in args.cache.iterdir():
        if path.name != MANIFEST and path.name not in rewritten and ".attn." not in path.name:
            os.link(path, args.out / path.name)
    vocab = read_h5(args.cache / VOCAB_H5)
    if not np.array_equal(vocab["occ_count"], np.load(args.saved / "occ_count.npy")):
        raise SystemExit(f"{args.saved}: its occurrence counts differ from {args.cache}'s")
    for key in ("occ_sum", "word_emb"):
        layers = np.load(args.saved / f"{key}.npy", mmap_mode="r")
        vocab[key] = layers[:, pick].mean(1).astype(vocab[key].dtype)
    manifest["vocab_files"][VOCAB_H5] = write_h5(args.out / VOCAB_H5, vocab)
    first = 0
    for shard in manifest["shards"]:
        name = f"{shard['name']}.h5"
        arrays = {k: v for k, v in read_h5(args.cache / name).items() if k not in DROPPED}
        n = len(arrays["sent_ctx"])
        arrays["sent_ctx"] = means[first : first + n, pick].mean(1).astype(arrays["sent_ctx"].dtype)
        shard["files"] = {name: write_h5(args.out / name, arrays)}
        first += n
        print(f"{name}: {n:,} sentences", flush=True)
    manifest["signals"] = [s for s in manifest["signals"] if s not in DROPPED]
    manifest["identity"]["options"].update(vectors=False, attention=0)
    manifest["identity"]["teacher"]["layer"] = pick if len(pick) > 1 else pick[0]
    write_json(args.out / MANIFEST, manifest, sort_keys=True)
    print(f"wrote {args.out} (--layer {args.layer}: hidden states {pick})")


if __name__ == "__main__":
    main()
