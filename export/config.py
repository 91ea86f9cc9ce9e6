"""What an export makes of the table: the pooling a folder encodes with, the rows' type, their dims."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ctx2static.export.quantize import Quantize
from ctx2static.export.tokens import Tokens
from ctx2static.options import Rule, opt
from ctx2static.vectors.encoding import EncodeConfig


@dataclass(frozen=True)
class ExportConfig(EncodeConfig):
    """How the exported table is made: :class:`EncodeConfig`'s pooling, the rows' type, their dims."""

    quantize: Quantize = opt(
        Quantize.FLOAT32, "Folders: the rows' type; int8 keeps a float32 scale per row (model2vec only)."
    )
    dims: int = opt(0, "Project the table on its first D principal axes (PCA fitted on it); 0 keeps all.")
    pca_text: str | None = opt(
        None,
        "Fit the --dims axes on the mean vectors of this text's lines (its first 100,000; plain, .gz, "
        ".xz or .bz2), not on the table's rows: sentence-level PCA (Wada et al. 2025), which keeps the "
        "directions along which sentences differ (ties the rows' PCA on classification, +10 on document "
        "similarity; measured: Results page, sentence_pca).",
    )
    pca_drop: int = opt(
        0,
        "Leave out the first N principal axes before the --dims kept (all-but-the-top on the axes the "
        "PCA is fitted on). With --pca-text, 0 and 7 (Wada et al.'s) tied on dev classification and 7 "
        "lifted document similarity 42 -> 52 (Results page, sentence_pca).",
    )
    lexical_dims: int = opt(
        0,
        "Folders: append D lexical dimensions, each word's fixed random vector at its SIF weight (Random "
        "Indexing), so a text's cosine also counts the rare words two texts share, as BM25 does; for "
        "search and similarity (measured: Results page, sentences_lexical); 0 adds none. --weighting, "
        "applied to the whole row after, weighs them again.",
    )
    lexical_weight: float = opt(
        1.5, "The lexical dimensions' scale against the table's (1: a row's median norm; 1.5 chosen on dev)."
    )

    tokens: Tokens = opt(
        Tokens.MARKED,
        "Folders from vectors with a composer: marked (each table word a token between word marks: the "
        "folder encodes as the vectors do, any teacher) or wordpiece (WordPiece teachers such as "
        "MiniLM and MPNet: the table's words join the teacher's vocabulary, as Model2Vec's distill adds "
        "words; encodes at potion-base-8M's speed, 1.28x marked's, 0.3 lower on the dev topic sets; "
        "measured: Results page, encode_speed).",
    )

    def rules(self) -> Iterable[Rule]:
        """Pooling as :class:`EncodeConfig`; dims 0 (keep) or more (at most the table's: on export)."""
        return [
            *super().rules(),
            ("dims", self.dims >= 0, "0 (keep all) or more"),
            ("pca_drop", self.pca_drop >= 0, "0 or more"),
            ("pca_text", self.pca_text is None or self.dims > 0, "given with --dims (the axes it fits)"),
            ("pca_drop", self.pca_drop == 0 or self.dims > 0, "0 unless --dims is given"),
            ("lexical_dims", self.lexical_dims >= 0, "0 (none) or more"),
            ("lexical_weight", self.lexical_weight > 0, "above 0"),
        ]
