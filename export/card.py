"""The model card (``README.md`` with the Hugging Face metadata header) written into every exported folder.

It states where the vectors come from (teacher, corpus, student and its options, retrofitting, all
read from the vectors' metadata), how the format treats unknown words, how to load the folder, and
the evaluation table, which the caller computes and passes in (export sits below eval).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ctx2static.export.tokens import TokenTable
from ctx2static.teachers import BY_NAME
from ctx2static.vectors import Vectors, VectorsMeta

USAGE = {
    "model2vec": (
        "from model2vec import StaticModel\n\n"
        'model = StaticModel.from_pretrained("{path}")\n'
        'embeddings = model.encode(["a sentence", "another one"])'
    ),
    "sentence-transformers": (
        "from sentence_transformers import SentenceTransformer\n\n"
        'model = SentenceTransformer("{path}")\n'
        'embeddings = model.encode(["a sentence", "another one"])'
    ),
}


@dataclass
class Card:
    """What the card says: the vectors' provenance and, when evaluated, the results table (Markdown)."""

    meta: VectorsMeta
    n_words: int
    dim: int
    evaluation: str | None = None
    extra_tags: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, vectors: Vectors, evaluation: str | None = None) -> Card:
        """The card of ``vectors`` with an optional evaluation table."""
        return cls(vectors.meta.copy(), len(vectors), vectors.dim, evaluation)

    def teacher(self) -> str | None:
        """The teacher's name as the vectors record it."""
        return self.meta.get("teacher")

    def base_model(self) -> str | None:
        """The teacher's hub id: known for the short names; a name like ``org/model`` is taken as one."""
        name = self.teacher()
        if name in BY_NAME:
            return BY_NAME[name].hub_id
        if name and name.count("/") == 1 and not Path(name).exists():
            return name
        return None

    def license(self) -> str | None:
        """The teacher's licence when the teacher is a known one."""
        known = BY_NAME.get(self.teacher() or "")
        return known.licence if known else None

    def header(self, library: str) -> str:
        """The YAML metadata block (values written as JSON strings, which YAML reads as they are)."""
        lines = ["---", f"library_name: {library}"]
        if self.base_model():
            lines.append(f"base_model: {json.dumps(self.base_model())}")
        if self.license():
            lines += [f"license: {self.license()}", "language:", "- en"]
        tags = ["ctx2static", "static-embeddings", "word-embeddings", library, *self.extra_tags]
        lines += ["tags:", *(f"- {t}" for t in dict.fromkeys(tags))]
        if library == "sentence-transformers":
            lines.append("pipeline_tag: sentence-similarity")
        return "\n".join([*lines, "---"])

    def provenance(self) -> list[tuple[str, str]]:
        """(what, value) rows: teacher, corpus, student and options, retrofitting, size."""
        m = self.meta
        rows = []
        if self.teacher():
            hub = self.base_model()
            rows.append(
                (
                    "teacher",
                    f"`{self.teacher()}`" + (f" ([{hub}](https://huggingface.co/{hub}))" if hub else ""),
                )
            )
        corpus = m.get("corpus")
        if corpus:
            names = ", ".join(Path(str(c)).name for c in corpus)
            lower = (m.get("corpus_config") or {}).get("lowercase")
            rows.append(("corpus", names + (" (lower-cased)" if lower else "")))
        if m.get("student"):
            rows.append(("student", f"`{m['student']}`"))
        if m.get("config"):
            rows.append(("options", f"`{json.dumps(m['config'], sort_keys=True)}`"))
        combined = m.get("combine")
        if combined:
            made = [
                f"`{i.get('student') or Path(str(i.get('path'))).name}`"
                + (f" ({i['teacher']})" if i.get("teacher") else "")
                for i in combined.get("inputs", [])
            ]
            rows.append(("combined", f"{combined.get('method')} of {', '.join(made)}"))
        for step in m.get("retrofit") or []:
            lexicons = ", ".join(Path(str(x)).name for x in step.get("lexicons", []))
            rows.append(("retrofitted", f"{step.get('method')} to {lexicons}"))
        lexical = m.get("lexical")
        if lexical:
            rows.append(
                (
                    "lexical dimensions",
                    f"the last {lexical['dims']} of {self.dim}: each word's fixed random vector at its "
                    f"{lexical.get('weighting', 'sif')} weight (weight {lexical['weight']:g}), so a text's "
                    "cosine also counts the rare words two texts share",
                )
            )
        rows.append(("vocabulary", f"{self.n_words:,} words, {self.dim} dimensions"))
        return rows

    def render(self, library: str, table: TokenTable, path: str) -> str:
        """The whole card for a folder of ``library``'s format."""
        rows = self.provenance()
        teacher = f" from **{self.teacher()}**" if self.teacher() else ""
        parts = [
            self.header(library),
            "",
            f"# {Path(path).name}",
            "",
            f"Static word vectors distilled{teacher} with ctx2static, in the {library} format.",
            "",
            "| | |",
            "|---|---|",
            *(f"| {k} | {v} |" for k, v in rows),
            "",
            "## Use",
            "",
            "```python",
            USAGE[library].format(path=path),
            "```",
            "",
            f"A text's vector is the mean of its tokens' rows ({table.kind} tokens). {table.unknown_words}",
            "",
            "## Evaluation",
            "",
            self.evaluation.rstrip() if self.evaluation else "Not evaluated at export (`--no-eval`).",
            "",
            "## License",
            "",
            f"The teacher's licence ({self.license() or 'see the teacher'}); the vectors also derive "
            "from the corpus, whose terms apply as well.",
        ]
        return "\n".join(parts) + "\n"
