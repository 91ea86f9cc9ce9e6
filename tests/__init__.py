"""The test suite: a package, so test modules import their helpers relatively (``from .x import y``)."""
