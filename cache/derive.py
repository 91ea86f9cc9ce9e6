"""A cache derived from a finished one without the teacher: chosen arrays rewritten, the rest linked.

Benchmarks use it for variants a second extract would take hours to make: a ``--pca`` copy
(bench/speed/pca_cache.py) or another ``--layer`` (bench/probes/layer_cache.py). Every file that
is not rewritten is hard-linked (so ``out`` must be on ``src``'s filesystem); the manifest records
the new digests, so the derived cache verifies as any other.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ctx2static.cache.hdf5 import read_h5, write_h5
from ctx2static.cache.layout import MANIFEST, VOCAB_H5
from ctx2static.cache.reader import REBUILD, read_manifest
from ctx2static.errors import InputError
from ctx2static.fileio.atomic import write_json

Arrays = dict[str, np.ndarray]


def derive_cache(
    src: Path,
    out: Path,
    shard: Callable[[Arrays], Arrays],
    vocab: Callable[[Arrays], Arrays] | None = None,
    drop: Collection[str] = (),
    aux: Callable[[], Mapping[str, Arrays]] | None = None,
    identity: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Write ``out`` from the complete cache ``src``; return its manifest.

    ``shard`` maps each shard's HDF5 arrays, in corpus order, to the arrays written; ``vocab`` does
    the same for vocab.h5 (linked when None); ``drop`` names signals left out (their shard arrays,
    and the attention files for "attention"); ``aux`` gives extra HDF5 files (name -> arrays),
    written after the shards; ``identity`` edits the manifest's identity in place.
    """
    manifest = read_manifest(src)
    if manifest is None or not manifest.get("complete"):
        raise InputError(src, f"{src}: not a complete cache; finish the extract that makes it first")
    out.mkdir(parents=True, exist_ok=False)
    fix = f"delete it and {REBUILD}"
    rewritten = {VOCAB_H5} if vocab is not None else set()
    for record in manifest["shards"]:
        rewritten.update(record["files"])
        kept = {}
        for name, digest in record["files"].items():
            if name.endswith(".h5"):
                arrays = {k: v for k, v in read_h5(src / name, fix).items() if k not in drop}
                kept[name] = write_h5(out / name, shard(arrays))
            elif "attention" not in drop:
                os.link(src / name, out / name, follow_symlinks=False)
                kept[name] = digest
        record["files"] = kept
    for path in src.iterdir():
        if path.name != MANIFEST and path.name not in rewritten:
            os.link(path, out / path.name, follow_symlinks=False)
    if vocab is not None:
        manifest["vocab_files"][VOCAB_H5] = write_h5(out / VOCAB_H5, vocab(read_h5(src / VOCAB_H5, fix)))
    for name, arrays in (aux() if aux is not None else {}).items():
        manifest.setdefault("aux_files", {})[name] = write_h5(out / name, arrays)
    manifest["signals"] = [s for s in manifest["signals"] if s not in drop]
    if identity is not None:
        identity(manifest["identity"])
    write_json(out / MANIFEST, manifest, sort_keys=True)
    return manifest
