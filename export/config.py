"""What an export makes of the table: the pooling a folder encodes with, the rows' type, their dims."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ctx2static.export.quantize import Quantize
from ctx2static.options import Rule, opt
from ctx2static.vectors.encoding import EncodeConfig


@dataclass(frozen=True)
class ExportConfig(EncodeConfig):
    """How the exported table is made: :class:`EncodeConfig`'s pooling, the rows' type, their dims."""

    quantize: Quantize = opt(
        Quantize.FLOAT32, "Folders: the rows' type; int8 keeps a float32 scale per row (model2vec only)."
    )
    dims: int = opt(0, "Project the table on its first D principal axes (PCA fitted on it); 0 keeps all.")

    def rules(self) -> Iterable[Rule]:
        """Pooling as :class:`EncodeConfig`; dims 0 (keep) or more (at most the table's: on export)."""
        return [*super().rules(), ("dims", self.dims >= 0, "0 (keep all) or more")]
