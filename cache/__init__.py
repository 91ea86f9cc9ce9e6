"""The teacher cache: sharded HDF5 + Parquet with a manifest (readable without torch)."""

from ctx2static.cache.store import Cache, Shard

__all__ = ["Cache", "Shard"]
