"""A --pca D copy of a --vectors cache, without running the teacher again (for benchmarks).

Every file but the shards' HDF5 is hard-linked; each shard is rewritten with ``occ_vec`` reduced
by extract's own PCA (``pipeline.shard.fit_pca``, fitted on the first shard's vectors, stored in
pca.h5; occ_vec = (v - mean) @ components.T in float16), and the manifest records the new digests,
``pca = D`` and pca.h5. It differs from ``extract --vectors --pca D`` only in that the PCA sees the
vectors after their float16 rounding; it takes a minute where a second extract takes hours.

    PYTHONPATH=<pkg> python bench/speed/pca_cache.py CACHE OUT --pca 128
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from ctx2static.cache.layout import MANIFEST, PCA_H5
from ctx2static.cache.writer import read_h5, write_h5
from ctx2static.fileio import write_json
from ctx2static.pipeline.shard import fit_pca


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--pca", type=int, required=True)
    args = ap.parse_args()
    manifest = json.loads((args.cache / MANIFEST).read_text())
    if not manifest["complete"] or not manifest["identity"]["options"]["vectors"]:
        raise SystemExit(f"{args.cache}: not a complete cache with per-occurrence vectors")
    args.out.mkdir(parents=True, exist_ok=False)
    for path in args.cache.iterdir():
        if path.name != MANIFEST and not (path.name.startswith("shard_") and path.suffix == ".h5"):
            os.link(path, args.out / path.name)
    pca = None
    for shard in manifest["shards"]:
        name = f"{shard['name']}.h5"
        arrays = read_h5(args.cache / name)
        vec = arrays["occ_vec"].astype(np.float32)
        pca = pca or fit_pca(vec, args.pca)
        arrays["occ_vec"] = ((vec - pca["mean"]) @ pca["components"].T).astype(np.float16)
        shard["files"][name] = write_h5(args.out / name, arrays)
        print(f"{name}: {len(vec):,} vectors", flush=True)
    manifest.setdefault("aux_files", {})[PCA_H5] = write_h5(args.out / PCA_H5, pca)
    manifest["identity"]["options"]["pca"] = args.pca
    write_json(args.out / MANIFEST, manifest, sort_keys=True)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
