"""ctx2static: distil contextual language models into static word vectors.

    from ctx2static import distill
    vectors = distill(["corpus.txt"], teacher="minilm", student="x2static")

The API (:mod:`ctx2static.api`) loads on first use, so ``import ctx2static`` stays light. Its
``retrofit`` and ``export`` are imported from :mod:`ctx2static.api`: at the root those names are
the subpackages ``ctx2static.retrofit`` and ``ctx2static.export``.
"""

import os
from typing import TYPE_CHECKING, Any

# numba colours its compiler messages through colorama, whose exit handler then writes ESC[0m to the
# terminal after every run that compiled a kernel; the tool's own messages are plain text.
os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")

__version__ = "0.1.0"
__all__ = ["Vectors", "combine", "distill", "evaluate", "extract", "fit"]

if TYPE_CHECKING:  # what a type checker reads; at run time __getattr__ loads the API on first use
    from ctx2static.api import Vectors, combine, distill, evaluate, extract, fit


def __getattr__(name: str) -> Any:
    if name in __all__:
        from importlib import import_module

        return getattr(import_module("ctx2static.api"), name)
    raise AttributeError(f"module 'ctx2static' has no attribute {name!r}")
