"""The teacher cache, the contract between the teacher stage and the students (no torch needed).

``layout`` holds the file names and the one table of signals, ``writer`` writes a cache (extract
and the tests' synthetic caches), ``reader`` opens it for the students, ``info`` describes it;
``validate`` checks the manifest and the arrays, ``hdf5`` opens only self-contained HDF5 files.
"""

from ctx2static.cache.reader import Cache, Shard

__all__ = ["Cache", "Shard"]
