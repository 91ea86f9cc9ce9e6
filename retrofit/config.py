"""Retrofitting options: one table of defaults shared by the API and the CLI (no numpy import)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any

from ctx2static.errors import UserError


class Method(str, Enum):
    """Retrofitting method."""

    FARUQUI = "faruqui"  # Faruqui et al. 2015, Eq. 1 update
    GRAPH = "graph"  # Zheng et al. 2022 (Context-to-Vec), Eq. 9-13


@dataclass
class RetrofitConfig:
    """Defaults of the two papers and their reference code.

    ``alpha`` is Faruqui's weight of the original vector (beta_ij = 1/deg(i) is fixed).
    ``a``/``b`` are Context-to-Vec's a_i/b_i (Eq. 9-10); ``nu``/``sigma`` its Student-t kernel
    (Eq. 11). ``sigma = 1`` as the reference code (its ``Dist2prob`` divides the squared
    distance by ``nu`` alone), which works on unit-length vectors: squared distances lie in
    [0, 4], so the kernel weights stay informative. ``normalize`` scales every input vector to
    unit length first, as both reference implementations do on reading.
    """

    method: Method = Method.FARUQUI
    iterations: int = 10
    alpha: float = 1.0
    a: float = 0.5
    b: float = 0.5
    nu: float = 100.0
    sigma: float = 1.0
    normalize: bool = True

    def __post_init__(self) -> None:
        self.method = Method(self.method)
        if self.iterations < 0:
            raise UserError(f"retrofit: iterations must be >= 0, got {self.iterations}")
        for name in ("alpha", "a", "b", "nu", "sigma"):
            if not getattr(self, name) > 0:
                raise UserError(f"retrofit: {name} must be > 0, got {getattr(self, name)}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (for logs and the output's metadata)."""
        return {**asdict(self), "method": self.method.value}
