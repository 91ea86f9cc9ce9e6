"""A --pca D copy of a --vectors cache, without running the teacher again (for benchmarks).

Applies extract's own PCA (``pipeline.extract._pca``: fitted on the first shard, signs fixed,
stored in pca.h5; occ_vec = (v - mean) @ components.T in float16) to the cached vectors and writes
the result through the cache writer. It differs from ``extract --vectors --pca D`` only in that
the PCA sees the vectors after their float16 rounding (one more rounding); on a shared 2-core
machine it takes a minute where a second extract takes hours.

    PYTHONPATH=<pkg> python bench/speed/pca_cache.py CACHE OUT --pca 128
"""

from __future__ import annotations

import argparse
import copy

import numpy as np

from ctx2static.cache import Cache
from ctx2static.cache.writer import CacheWriter
from ctx2static.pipeline.extract import _pca


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache")
    ap.add_argument("out")
    ap.add_argument("--pca", type=int, required=True)
    args = ap.parse_args()
    src = Cache.open(args.cache)
    identity = copy.deepcopy(src.manifest["identity"])
    identity.pop("format", None)
    identity["options"]["pca"] = args.pca
    identity["derived_from"] = {"cache": args.cache, "by": "bench/speed/pca_cache.py"}
    writer = CacheWriter.open(args.out, identity, src.vocab)
    pca = None
    for i, entry in enumerate(src.manifest["shards"]):
        shard = src.shard(i)
        vec = shard["occ_vec"].astype(np.float32)
        pca = pca or _pca(writer, vec, args.pca)
        arrays = dict(shard.arrays)
        arrays["occ_vec"] = ((vec - pca["mean"]) @ pca["components"].T).astype(np.float16)
        writer.add_shard(arrays, None, {k: v for k, v in entry.items() if k.startswith("n_")})
        print(f"shard {i}: {len(vec):,} vectors", flush=True)
    writer.finish(src.vocab_arrays(), src.teacher_tokens())
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
