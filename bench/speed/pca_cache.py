"""A --pca D copy of a --vectors cache, without running the teacher again (for benchmarks).

Through ``cache.derive``: each shard is rewritten with ``occ_vec`` reduced by extract's own PCA
(``pipeline.shard.fit_pca``, fitted on the first shard's vectors, stored in pca.h5; occ_vec =
(v - mean) @ components.T in float16), every other file hard-linked, and the manifest records
``pca = D``. It differs from ``extract --vectors --pca D`` only in that the PCA sees the vectors
after their float16 rounding; it takes a minute where a second extract takes hours.

    PYTHONPATH=<pkg> python bench/speed/pca_cache.py CACHE OUT --pca 128
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ctx2static.cache.derive import Arrays, derive_cache
from ctx2static.cache.layout import PCA_H5
from ctx2static.cache.reader import Cache
from ctx2static.pipeline.shard import fit_pca


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--pca", type=int, required=True)
    args = ap.parse_args()
    if not Cache.open(args.cache).manifest["identity"]["options"]["vectors"]:
        raise SystemExit(f"{args.cache}: not a cache with per-occurrence vectors (extract --vectors)")
    pca: Arrays = {}

    def reduce(arrays: Arrays) -> Arrays:
        vec = arrays["occ_vec"].astype(np.float32)
        pca.update(pca or fit_pca(vec, args.pca))
        print(f"{len(vec):,} vectors", flush=True)
        return arrays | {"occ_vec": ((vec - pca["mean"]) @ pca["components"].T).astype(np.float16)}

    derive_cache(
        args.cache, args.out, reduce, aux=lambda: {PCA_H5: pca},
        identity=lambda ident: ident["options"].update(pca=args.pca),
    )  # fmt: skip
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
