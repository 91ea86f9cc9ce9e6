"""Do fp16 sentence/paragraph means move the students? A float32-means cache against its fp16 copy.

    python bench/probes/fp16_means.py CACHE COPY

CACHE must be extracted with ``--float32-means``. COPY gets hard links of every file but the
shards' HDF5, which are rewritten with ``sent_ctx`` (and ``para_ctx``) cast to float16 exactly as
``extract`` stores them by default; the manifest records the new digests and
``float32_means = false``. Then train x2static on both with ``cli.py fit-student`` (its students
read only these means and the per-word sums, which both caches share) and compare with ``cli.py
eval``; see bench/results/fp16_means.md for the commands and the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from ctx2static.cache.hdf5 import read_h5, write_h5
from ctx2static.cache.layout import MANIFEST
from ctx2static.fileio import write_json

MEANS = ("sent_ctx", "para_ctx")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cache", type=Path)
    ap.add_argument("copy", type=Path)
    args = ap.parse_args()
    manifest = json.loads((args.cache / MANIFEST).read_text())
    if not manifest["identity"]["options"]["float32_means"]:
        raise SystemExit(f"{args.cache}: its means are already fp16 (extract it with --float32-means)")
    args.copy.mkdir(parents=True, exist_ok=False)
    for path in args.cache.iterdir():
        if path.name != MANIFEST and not (path.name.startswith("shard_") and path.suffix == ".h5"):
            os.link(path, args.copy / path.name)
    worst = 0.0
    for shard in manifest["shards"]:
        for name in shard["files"]:
            if not name.endswith(".h5"):
                continue
            arrays = read_h5(args.cache / name, "re-extract it")
            for key in MEANS:
                if key in arrays:
                    half = arrays[key].astype(np.float16)
                    worst = max(worst, float(np.abs(half.astype(np.float32) - arrays[key]).max()))
                    arrays[key] = half
            shard["files"][name] = write_h5(args.copy / name, arrays)
    manifest["identity"]["options"]["float32_means"] = False
    write_json(args.copy / MANIFEST, manifest, sort_keys=True)
    print(f"{args.copy}: {len(manifest['shards'])} shards, largest rounding error {worst:.2e}")


if __name__ == "__main__":
    main()
