"""Numba loops compiled with a student's own per-centre update inlined, cached on disk per student.

A shared loop (word2vec's Hogwild epoch, the contextual students' batch step) calls a global named
``centre_update``; :func:`bind_update` compiles a copy of the loop with that name bound to one
student's ``@njit`` update, so the update is inlined as if written in the loop.
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import types
from collections.abc import Callable
from typing import Any

from numba import njit

from ctx2static.students import losses, sampling


def centre_update(*args: Any) -> Any:
    """Placeholder for a student's per-centre update; :func:`bind_update` binds the real one."""
    raise NotImplementedError("bind_update binds the student's centre update")


_BOUND: dict[tuple[Callable[..., Any], Any], Callable[..., Any]] = {}


def bind_update(template: Callable[..., Any], update: Any, **jit_options: bool) -> Callable[..., Any]:
    """``template`` (a plain function calling ``centre_update``) compiled with ``update`` bound.

    Numba cannot cache a function that takes another as an argument (the cache misses in every
    new process), so each (loop, student) pair gets its own copy of the loop. Numba's on-disk
    cache only checks the stamp of the file that holds the cached function (the template's), so
    the copy is named after a hash of the student's module source and of :mod:`sampling`'s and
    :mod:`losses`'s: an edit to any of them recompiles it, an edit to the template's file
    invalidates it by its stamp. So an update should call only these modules and its own; updates
    themselves are not cached, so they never hold stale copies of these kernels. Compiled
    ``cache`` and ``fastmath``, with ``jit_options`` (e.g. ``parallel=True``, ``nogil=True``).
    """
    key = (template, update)
    if key not in _BOUND:
        module = sys.modules[update.py_func.__module__]
        try:
            source = "".join(inspect.getsource(m) for m in (module, sampling, losses)).encode()
        except OSError:  # installed without sources: hash the bytecode instead
            source = update.py_func.__code__.co_code
        digest = hashlib.sha1(source).hexdigest()[:10]
        tag = f"{template.__name__}_{module.__name__.rsplit('.', 1)[-1]}_{update.__name__}_{digest}"
        fn = types.FunctionType(template.__code__, {**template.__globals__, "centre_update": update}, tag)
        fn.__qualname__ = tag
        # numba's stubs list its options by name, so a mapping of them matches no overload
        _BOUND[key] = njit(cache=True, fastmath=True, **jit_options)(fn)  # type: ignore[call-overload]
    return _BOUND[key]
