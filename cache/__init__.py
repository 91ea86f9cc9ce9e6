"""The teacher cache: sharded HDF5 + Parquet with a manifest."""
