"""Griffe extension for the API reference: a parameters table for every documented function.

The docstrings explain their parameters in prose, without Sphinx ``:param:`` fields, so
mkdocstrings would render no table. This adds a field for each parameter the docstring does not
list; mkdocstrings then fills its type and default from the signature. The keyword options
(``**options``) point to the Options page, which lists every field of every configuration.
"""

from __future__ import annotations

from typing import Any

import griffe

_OPTIONS = "keyword options, each a field of a configuration: see [Options](options.md)"


class SignatureParameters(griffe.Extension):
    """Give each function's docstring a ``:param:`` field per parameter it lacks."""

    def on_function_instance(self, *, func: griffe.Function, **_: Any) -> None:
        """Append the missing fields to the docstring text (parsed later, when rendered)."""
        if func.docstring is None:
            return
        text = func.docstring.value
        fields = []
        for p in func.parameters:
            if p.name in ("self", "cls") or f":param {p.name}:" in text:
                continue
            what = _OPTIONS if p.kind is griffe.ParameterKind.var_keyword else ""
            fields.append(f":param {p.name}: {what}".rstrip())
        if fields:
            func.docstring.value = text.rstrip() + "\n\n" + "\n".join(fields)
