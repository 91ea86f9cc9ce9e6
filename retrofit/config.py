"""Retrofitting options: one table of defaults shared by the API, the CLI and studies (no numpy)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from ctx2static.options import Options, Rule, opt


class Method(str, Enum):
    """Retrofitting method."""

    FARUQUI = "faruqui"  # Faruqui et al. 2015, Eq. 1 update
    GRAPH = "graph"  # Zheng et al. 2022 (Context-to-Vec), Eq. 9-13


@dataclass(frozen=True)
class RetrofitConfig(Options):
    """Defaults of the two papers and their reference code.

    ``alpha`` is Faruqui's weight of the original vector (beta_ij = 1/deg(i) is fixed).
    ``a``/``b`` are Context-to-Vec's a_i/b_i (Eq. 9-10); ``nu``/``sigma`` its Student-t kernel
    (Eq. 11). ``sigma = 1`` as the reference code (its ``Dist2prob`` divides the squared
    distance by ``nu`` alone), which works on unit-length vectors: squared distances lie in
    [0, 4], so the kernel weights stay informative. ``normalize`` scales every input vector to
    unit length first, as both reference implementations do on reading.
    """

    method: Method = opt(Method.FARUQUI, "faruqui (Faruqui et al. 2015) or graph (Context-to-Vec Eq. 9-13).")
    iterations: int = opt(10, "Update sweeps.")
    alpha: float = opt(1.0, "faruqui: weight of the original vector.")
    a: float = opt(0.5, "graph: a_i, weight of the original vector (Eq. 9).")
    b: float = opt(0.5, "graph: b_i, weight of the neighbours (Eq. 9).")
    nu: float = opt(100.0, "graph: Student-t degrees of freedom (Eq. 11).")
    sigma: float = opt(1.0, "graph: kernel scale.")
    normalize: bool = opt(True, "Scale input vectors to unit length first (as both reference codes do).")

    def rules(self) -> Iterable[Rule]:
        """Weights positive, iterations a count."""
        return [("iterations", self.iterations >= 0, ">= 0")] + [
            (name, getattr(self, name) > 0, "> 0") for name in ("alpha", "a", "b", "nu", "sigma")
        ]
