"""How this process starts another Python: one that imports and runs only what this one would.

Every Python child the product starts (the feeding processes, ``pip download`` in ``fetch``) goes
through :func:`python_argv`, because the obvious commands each run foreign code:

- ``python -c`` and ``python -m`` put the working folder first on the child's path, so a ``numpy.py``
  or a ``pip/`` folder downloaded where the user runs the command would run in the child;
- a child started without this process's interpreter options reads ``PYTHONPATH`` (and its
  ``sitecustomize.py``) where this process was told with ``-E`` or ``-I`` not to, and the user site
  where it was told ``-s``.

So a child gets this process's options (:func:`interpreter_flags`) and, before it imports
anything, this process's ``sys.path`` less ``""`` (:func:`child_path`): it finds each module where
this process finds it. A module is run through :mod:`runpy` from that path (:func:`module_argv`),
never with ``-m``.
"""

from __future__ import annotations

import sys


def interpreter_flags() -> list[str]:
    """The interpreter options of this process that decide what a child Python reads and runs.

    From ``sys.flags``, ``sys.warnoptions`` and ``sys._xoptions``: ``-I`` (isolated), ``-E`` (no
    ``PYTHON*`` variables), ``-s`` (no user site), ``-S`` (no site), ``-P`` (no unsafe first path),
    ``-B``, ``-O``, ``-W`` and ``-X``: what multiprocessing passes on to the processes it starts,
    for the same reason.
    """
    f = sys.flags
    named = {
        "-I": f.isolated,
        "-E": f.ignore_environment,
        "-s": f.no_user_site,
        "-S": f.no_site,
        "-P": getattr(f, "safe_path", False),  # Python 3.11+
        "-B": f.dont_write_bytecode,
    }
    flags = [flag for flag, on in named.items() if on]
    flags += ["-O"] * f.optimize
    flags += [f"-W{w}" for w in sys.warnoptions]
    flags += [f"-X{k}" if v is True else f"-X{k}={v}" for k, v in sys._xoptions.items()]
    return flags


def child_path() -> list[str]:
    """The ``sys.path`` a child gets: this process's, less ``""`` (the working folder at each import).

    ``""`` (put there by ``python -c`` or an interactive session) found this process's modules in
    the folder it started in; in a child it would find whatever the folder holds at that moment.
    """
    return [p for p in sys.path if p]


def python_argv(code: str, *args: str) -> list[str]:
    """The command that runs ``code`` in a child Python with ``sys.argv[1:] == args`` and this process's path.

    The path travels on the command line ahead of ``args`` and is taken off ``sys.argv`` before
    ``code`` runs, so nothing is imported from the child's own first path entry.
    """
    path = child_path()
    n = len(path) + 1
    head = f"import sys; sys.path[:] = sys.argv[1:{n}]; del sys.argv[1:{n}]; "
    return [sys.executable, *interpreter_flags(), "-c", head + code, *path, *args]


def module_argv(module: str, *args: str) -> list[str]:
    """The command that runs ``python -m module args`` as :func:`python_argv` does: the module on our path."""
    run = f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
    code = f"import runpy; sys.argv[0] = {module!r}; {run}"
    return python_argv(code, *args)
