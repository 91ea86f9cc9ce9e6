"""The teacher stage on a GPU in one call: extract against the bare forward, its fidelity, Ray, memory.

For a GPU machine with no network and only this working tree (no model weights travel): teachers
of the real shapes with random weights (speed depends on the shape, not the weights) are built
from their configs, with a WordPiece tokenizer trained on the demo corpus; then, per teacher and
precision:

- the bare Hugging Face forward and the product's ``Teacher.forward_wanted`` over the same length-sorted
  batches of the same sentences (timed batch by batch in alternating order), and ``extract`` end
  to end on those sentences (``pipeline.extract.extract_with``, the one extract of the command
  line and the API): teacher tokens/s and their share of the bare forward's;
- a cache of a few hundred sentences made on the device against a CPU float32 cache of the same
  model: cosines of the sentence means and of the ``ase`` vectors, word by word;
- in half precision, the bare forward of a copy of the model with its weights cast (no autocast);
- the peak GPU memory of each (``torch.cuda.max_memory_allocated``);
- with ``--profile``, extract under cProfile, in ``bench/speed/profile_extract.py``'s stages;
- ``--engine ray`` with GPU workers (as many as Ray sees GPUs), when Ray is installed.

The project is imported from this tree through a link (the repository root is the package), with
its distribution metadata beside the link where it is not installed; a dependency that is missing
is installed from ``bench/gpu/wheels/`` when a wheel for it lies there (no index, no network).
A step that fails is a line with its error (the traceback goes to stderr) and the next step runs;
steps not begun within ``--budget-s`` are listed as skipped. The results file (``check_cuda.md`` or
``check_cpu.md`` in ``--out``) is rewritten after every step, so a run cut off keeps its rows.

    timeout 540 python3 bench/gpu/check.py --device cuda --profile --out bench/results/gpu
    python bench/gpu/check.py --device cpu --small --out /tmp/gpu-check       # what CI runs

Exit status: 0 every step ran, 1 a step failed, 2 nothing could run (no GPU for --device cuda, or
the package does not import here; one line says why).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import importlib.metadata
import lzma
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
WHEELS = Path(__file__).resolve().parent / "wheels"
MODULES = {
    "torch": "everything",
    "transformers": "the teachers",
    "tokenizers": "the tokenizer built here",
    "numpy": "everything",
    "h5py": "the cache",
    "pyarrow": "the cache",
    "numba": "the students (ase)",
    "scipy": "the API",
    "tqdm": "extract's progress bar",
    "threadpoolctl": "the API's thread limits",
    "sentencex": "extract: the corpus reader, text/split.py, imports it",
    "ray": "the --engine ray row only",
}
"""Modules reported, and what of this check needs each."""
PRODUCT = ("ctx2static.pipeline.extract", "ctx2static.pipeline.teacher", "ctx2static.api")
"""What the check runs through; each must import, or nothing runs."""
PRECISIONS = ("float32", "float16", "bfloat16")
N_GPU = 20_000  # sentences of the demo corpus timed on a GPU: a third of it, ~0.7M teacher tokens


@dataclass(frozen=True)
class Shape:
    """A teacher's architecture, which its speed depends on."""

    label: str
    family: str  # "bert" (BertModel) or "mpnet" (MPNetModel, relative position buckets)
    layers: int
    hidden: int
    heads: int
    intermediate: int
    vocab: int  # the real model's embedding rows (0: the tokenizer's size)


SHAPES = {
    "minilm": Shape("MiniLM-L6 (all-MiniLM-L6-v2)", "bert", 6, 384, 12, 1536, 30522),
    "mpnet": Shape("MPNet-base (all-mpnet-base-v2)", "mpnet", 12, 768, 12, 3072, 30527),
}
SMALL = {
    k: replace(s, label=f"{k} small", layers=2, hidden=64, heads=4, intermediate=128, vocab=0)
    for k, s in SHAPES.items()
}
SMALL_VOCAB = 2000  # WordPiece pieces of the --small tokenizer (the real ones: 30,522)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="folder for the results file (made if missing)")
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    ap.add_argument(
        "--sentences", type=int, help=f"demo corpus sentences timed (default {N_GPU} on a GPU, 300 on a CPU)"
    )
    ap.add_argument("--compare-sentences", type=int, default=300, help="sentences of the fidelity caches")
    ap.add_argument(
        "--precisions",
        nargs="+",
        choices=PRECISIONS,
        help="forward dtypes (default: all three on a GPU, float32 and bfloat16 on a CPU)",
    )
    ap.add_argument("--teachers", nargs="+", choices=sorted(SHAPES), default=list(SHAPES))
    ap.add_argument("--small", action="store_true", help="2-layer 64-d teachers, a 2,000-piece vocabulary")
    ap.add_argument("--no-ray", action="store_true", help="leave out the --engine ray row")
    ap.add_argument(
        "--profile", action="store_true", help="extract under cProfile, per teacher, at the GPU's precision"
    )
    ap.add_argument(
        "--token-budgets",
        nargs="+",
        type=int,
        help="padded teacher tokens per batch: extract's default (4096), and on a GPU 32768 too (the "
        "larger ones at the GPU's default precision, bfloat16, only)",
    )
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    ap.add_argument(
        "--wheels",
        type=Path,
        default=WHEELS,
        help="wheels of missing dependencies (default bench/gpu/wheels)",
    )
    ap.add_argument(
        "--budget-s", type=float, default=420.0, help="begin no step after this many seconds (0 = no limit)"
    )
    args = ap.parse_args(argv)
    cuda = args.device.startswith("cuda")
    args.sentences = args.sentences or (N_GPU if cuda else 300)
    args.precisions = args.precisions or (list(PRECISIONS) if cuda else ["float32", "bfloat16"])
    return args


def fail(line: str) -> int:
    """Nothing can run: one line on stderr, exit status 2."""
    print(f"bench/gpu/check.py: {line}", file=sys.stderr)
    return 2


# --- the project and its dependencies, from this tree and nothing else -------------------------------


def link_tree(tmp: Path) -> str:
    """Import ``ctx2static`` from this tree: a link of that name to the repository root on sys.path.

    extract records ``importlib.metadata.version("ctx2static")`` in the cache identity, so where the
    package is not installed its metadata is written beside the link. PYTHONPATH carries the link to
    the processes started later (Ray's workers).
    """
    site = tmp / "site"
    site.mkdir()
    (site / "ctx2static").symlink_to(ROOT, target_is_directory=True)
    how = "imported from this tree through a link"
    try:
        importlib.metadata.version("ctx2static")
    except importlib.metadata.PackageNotFoundError:
        found = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
        version = found.group(1) if found else "0"
        info = site / f"ctx2static-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: ctx2static\nVersion: {version}\n")
        how += f", not installed (its metadata, version {version}, beside the link)"
    sys.path.insert(0, str(site))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    importlib.invalidate_caches()
    return how


def probe(name: str) -> str | None:
    """The module's version (its distribution's when it states none), or None when it does not import."""
    try:
        module = importlib.import_module(name)
    except Exception:  # ImportError, or a broken install that fails while importing
        return None
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        return str(getattr(module, "__version__", None) or importlib.metadata.version(name))
    return "present"


def install_wheels(missing: list[str], wheels: Path, tmp: Path) -> list[str]:
    """Install the missing modules that have a wheel in ``wheels`` into a folder put on the path.

    pip, no index, no dependencies, into ``tmp`` (the machine's own environment is left as it is);
    pip picks the wheel that fits this Python and platform. Returns lines saying what happened.
    """
    kept = [m for m in missing if any(wheels.glob(f"{m}-*.whl"))]
    if not kept:
        return []
    named = wheels.resolve().relative_to(ROOT) if wheels.resolve().is_relative_to(ROOT) else wheels
    target = tmp / "wheels"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
    done = subprocess.run(
        [*pip, "--target", str(target), "--find-links", str(wheels), *kept], capture_output=True, text=True
    )
    if done.returncode:
        why = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        return [f"- pip could not install {', '.join(kept)} from {named}: {why}"]
    sys.path.insert(0, str(target))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(target), os.environ.get("PYTHONPATH")) if p)
    importlib.invalidate_caches()
    return [f"- installed {', '.join(kept)} from {named} (no index, no dependencies)"]


def product_problem() -> str | None:
    """None when every module of :data:`PRODUCT` imports, else the line that says what is missing."""
    for name in PRODUCT:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            need = MODULES.get(exc.name or "", "")
            return (
                f"{name} does not import: module '{exc.name}' is missing ({need or 'a dependency'}); "
                "install it, or keep its wheel for this Python in bench/gpu/wheels (installed from there "
                "by this script), and run again"
            )
        except Exception as exc:  # a broken dependency: its own first line
            return f"{name} does not import: {type(exc).__name__}: {first_line(exc)}"
    return None


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


# --- the results file ---------------------------------------------------------------------------------


SPEED_NOTE = (
    "Bare forward: the model's own forward over the padded batch (ids to the device, its attention "
    "implementation, autocast to the precision). Teacher.forward_wanted: the product's forward over "
    "the same batches (every hidden state, the layer average, per-word pooling and sentence means; on "
    "a GPU the wanted groups' rows summed by word there, elsewhere copied to the host), on batches "
    "padded beforehand as the feeding processes hand them over, timed batch by batch in alternating "
    "order. Weights cast: the bare forward of a copy of the model whose weights are in the half "
    "precision, without autocast. extract: the teacher tokens/s of its shards (tokenizing, aligning, "
    "the forward, pooling, writing) on the same sentences; all-in adds loading the teacher, the "
    "vocabulary and its per-word tables. Peak GiB: torch.cuda.max_memory_allocated."
)
PROFILE_NOTE = (
    "One extract of the timed sentences with the profiler on (the shares) and one without (the wall "
    "time, in the first row of each teacher). The forward's kernels run while the host goes on: the wait "
    "for them falls where the host first reads a result, the copy to the host in "
    'Teacher.forward_wanted, which the profile counts in "batching and the occurrence rows".'
)
FIDELITY_NOTE = (
    "The weights are random (std 0.02): these cosines show that the device computes what the CPU does, "
    "and likely understate what half precision costs the real teachers, whose hidden states hold a few large "
    "dimensions. Sentence means are stored as float16 in both caches."
)


@dataclass
class Report:
    """The results file's sections, rewritten whole after every step."""

    path: Path
    head: list[str] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    teachers: list[str] = field(default_factory=list)
    speed: list[str] = field(default_factory=list)
    fidelity: list[str] = field(default_factory=list)
    ray: list[str] = field(default_factory=list)
    profile: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def write(self) -> None:
        sections = [
            ("Imports", ["| module | version | needed for |", "|---|---|---|"], self.imports, ""),
            (
                "Teachers (random weights, real shapes)",
                [
                    "| teacher | model | layers x hidden (heads, FFN) | parameters | vocabulary |",
                    "|---|---|---|---:|---|",
                ],
                self.teachers,
                "",
            ),
            (
                "Speed: teacher tokens/s over the same batches",
                [
                    "| teacher | precision | token budget | teacher tokens | bare forward tok/s "
                    "| bare, weights cast tok/s | Teacher.forward_wanted tok/s | % of bare | extract tok/s "
                    "| % of bare | extract all-in s | peak GiB fwd / extract |",
                    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
                ],
                self.speed,
                SPEED_NOTE,
            ),
            (
                "Fidelity: caches on the device against a CPU float32 cache of the same model",
                [
                    "| teacher | precision | sentences | sentence means cos mean / min | ase words "
                    "| ase cos mean / min |",
                    "|---|---|---:|---|---:|---|",
                ],
                self.fidelity,
                FIDELITY_NOTE,
            ),
            (
                "Where extract spends its time: bench/speed/profile_extract.py's stages under cProfile",
                ["| teacher | precision | stage | seconds (profiled) | share |", "|---|---|---|---:|---:|"],
                self.profile,
                PROFILE_NOTE,
            ),
            (
                "Ray: extract --engine ray",
                [
                    "| teacher | precision | workers | extract tok/s | % of local extract | all-in s "
                    "| sentence means cos to the local cache, mean / min |",
                    "|---|---|---:|---:|---:|---:|---|",
                ],
                self.ray,
                "",
            ),
        ]
        lines = [*self.head, ""]
        for title, header, rows, note in sections:
            if rows:
                lines += [f"## {title}", "", *header, *rows, "", *([note, ""] if note else [])]
        if self.notes:
            lines += ["## Notes: failed, skipped, installed", "", *self.notes, ""]
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("\n".join(lines), encoding="utf-8")
        tmp.replace(self.path)


@dataclass
class Steps:
    """Runs each step unless past the time budget; a failure is a note, and the next step runs."""

    report: Report
    budget: float
    start: float = field(default_factory=time.perf_counter)
    failed: bool = False

    def __call__(self, what: str, fn: Callable[[], None]) -> None:
        elapsed = time.perf_counter() - self.start
        if self.budget and elapsed > self.budget:
            self.report.notes.append(f"- skipped (past --budget-s {self.budget:g}): {what}")
            print(f"[{elapsed:5.0f} s] skipped: {what}", flush=True)
        else:
            print(f"[{elapsed:5.0f} s] {what}", flush=True)
            try:
                fn()
            except Exception as exc:  # one step's failure (a UserError, CUDA out of memory...) is a row
                traceback.print_exc()
                self.failed = True
                self.report.notes.append(f"- **failed**: {what}: {type(exc).__name__}: {first_line(exc)}")
                free_device()
        self.report.write()


# --- teachers, corpus, measurements ---------------------------------------------------------------------


def train_wordpiece(lines: list[str], size: int) -> dict[str, int]:
    """A lowercasing WordPiece vocabulary trained on ``lines``: ids 0-4 are the five special tokens."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    trainer = trainers.WordPieceTrainer(vocab_size=size, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(lines, trainer)
    return tok.get_vocab()


def fast_tokenizer(vocab: dict[str, int], family: str) -> Any:
    """BERT's ([CLS] ... [SEP], [PAD] = 0) or MPNet's (<s> ... </s>, <pad> = 1) tokenizer over ``vocab``."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    names = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    if family == "mpnet":  # ids 0-4 as in all-mpnet-base-v2: <s> <pad> </s> <unk>, and the mask
        names = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
        vocab = {**{t: i for t, i in vocab.items() if i > 4}, **{names[i]: i for i in range(5)}}
    pad, unk, cls, sep, mask = (
        names if family == "bert" else (names[1], names[3], names[0], names[2], names[4])
    )
    tok = Tokenizer(models.WordPiece(vocab, unk_token=unk))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])]
    )
    tok.decoder = decoders.WordPiece()
    special = {"pad_token": pad, "unk_token": unk, "cls_token": cls, "sep_token": sep, "mask_token": mask}
    if family == "mpnet":
        special.update(bos_token=cls, eos_token=sep)
    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=512, **special)


def save_teacher(shape: Shape, vocab: dict[str, int], folder: Path) -> tuple[int, int]:
    """Write a random encoder of ``shape`` (no MLM head: as the real sentence-transformers models)
    and its tokenizer to ``folder``; return its parameters and embedding rows."""
    import torch
    from transformers import BertConfig, BertModel, MPNetConfig, MPNetModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tok = fast_tokenizer(vocab, shape.family)
    sizes = {
        "vocab_size": max(shape.vocab, len(tok)),
        "hidden_size": shape.hidden,
        "num_hidden_layers": shape.layers,
        "num_attention_heads": shape.heads,
        "intermediate_size": shape.intermediate,
    }
    torch.manual_seed(0)
    if shape.family == "mpnet":
        ids = {
            "pad_token_id": tok.pad_token_id,
            "bos_token_id": tok.bos_token_id,
            "eos_token_id": tok.eos_token_id,
        }
        config = MPNetConfig(**sizes, max_position_embeddings=514, relative_attention_num_buckets=32, **ids)
        model: Any = MPNetModel(config, add_pooling_layer=False)
    else:
        config = BertConfig(**sizes, max_position_embeddings=512, pad_token_id=tok.pad_token_id)
        model = BertModel(config, add_pooling_layer=False)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return sum(p.numel() for p in model.parameters()), sizes["vocab_size"]


def demo_lines(n: int) -> list[str]:
    """The first ``n`` sentences of the demo corpus (one a line), with its blank lines between addresses."""
    from ctx2static.resources import DEMO_CORPUS

    lines: list[str] = []
    seen = 0
    with lzma.open(DEMO_CORPUS, "rt", encoding="utf-8") as f:
        for line in f:
            if seen == n:
                break
            lines.append(line.rstrip("\n"))
            seen += bool(line.strip())
    return lines


def sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def free_device() -> None:
    """Let go of what a step left on the GPU, so the next one starts from the same place."""
    import gc

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


@contextlib.contextmanager
def peak(device: str, into: list[str]) -> Iterator[None]:
    """Append the peak GPU memory allocated within the block (GiB; "-" on a CPU) to ``into``."""
    import torch

    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    yield
    into.append(f"{torch.cuda.max_memory_allocated(device) / 2**30:.2f}" if cuda else "-")


def cast_model(teacher: Any, precision: str) -> Any:
    """A copy of the teacher's model with its weights in ``precision``: half precision without autocast's
    casts before every product (what ``torch_dtype=`` gives a user of transformers)."""
    import copy

    import torch

    return copy.deepcopy(teacher.model).to(getattr(torch, precision))


def bare(teacher: Any, batch: list[Any], cast: Any = None) -> Any:
    """The model's own forward over the padded batch, ids and mask moved to the device: what any user
    of the model pays (its attention implementation, the teacher's precision, no hidden states kept);
    with ``cast`` that model, its weights already in the precision, runs without autocast."""
    import torch

    t_max = max(len(e.ids) for e in batch)
    ids = torch.full((len(batch), t_max), int(teacher.tokenizer.pad_token_id), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, e in enumerate(batch):
        ids[i, : len(e.ids)] = torch.from_numpy(e.ids)
        mask[i, : len(e.ids)] = 1
    with torch.inference_mode(), teacher.autocast() if cast is None else contextlib.nullcontext():
        out = (cast or teacher.model)(
            input_ids=ids.to(teacher.device), attention_mask=mask.to(teacher.device)
        )
    return out.last_hidden_state


def interleaved(
    ways: dict[str, Callable[[list[Any]], object]], batches: list[list[Any]], device: str
) -> dict:
    """Seconds of each way over the same batches, timed batch by batch, the ways' order alternating."""
    names = list(ways)
    secs = dict.fromkeys(names, 0.0)
    for b, batch in enumerate(batches):
        for name in names[b % len(names) :] + names[: b % len(names)]:
            sync(device)
            t0 = time.perf_counter()
            ways[name](batch)
            sync(device)
            secs[name] += time.perf_counter() - t0
    return secs


def cosines(a: Any, b: Any) -> Any:
    """Row-wise cosines of two [n, d] arrays."""
    import numpy as np

    a, b = a.astype(np.float64), b.astype(np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return (a * b).sum(1) / np.maximum(norms, 1e-30)


def describe(cos: Any) -> str:
    return f"{cos.mean():.6f} / {cos.min():.6f}" if len(cos) else "-"


def sentence_means(folder: Path) -> Any:
    """Every sentence's mean of the teacher layers, from a cache, in corpus order."""
    import numpy as np

    from ctx2static.cache import Cache

    return np.concatenate([s["sent_ctx"] for s in Cache.open(folder).shards(["sent_ctx"])])


def ase_cosines(ref: Path, got: Path) -> Any:
    """Cosines of the two caches' ``ase`` vectors, word by word (the words both hold)."""
    import numpy as np

    from ctx2static.api import fit

    a, b = fit(ref, "ase", compose=False), fit(got, "ase", compose=False)
    both = [w for w in a.words if w in b.index]
    rows = np.asarray([a.index[w] for w in both], dtype=np.int64), np.asarray([b.index[w] for w in both])
    return cosines(a.matrix[rows[0]], b.matrix[rows[1]])


@dataclass
class Check:
    """What the steps share: options, the teachers' folders, the corpora, the caches made so far."""

    args: argparse.Namespace
    report: Report
    tmp: Path
    teachers: dict[str, Path] = field(default_factory=dict)
    corpus: Path | None = None
    compare: Path | None = None
    local: dict[tuple[str, str, int], tuple[float, Path]] = field(default_factory=dict)  # tok/s, cache
    refs: dict[str, Path] = field(default_factory=dict)  # the CPU float32 caches

    @property
    def device(self) -> str:
        return str(self.args.device)

    def extract_config(self, budget: int) -> Any:
        from ctx2static.pipeline.config import ExtractConfig

        return ExtractConfig(token_budget=budget)

    def teacher_config(self, device: str, precision: str) -> Any:
        from ctx2static.pipeline.config import TeacherConfig

        return TeacherConfig(device=device, precision=precision, threads=self.args.threads)

    def extract(
        self,
        key: str,
        corpus: Path,
        out: Path,
        device: str,
        precision: str,
        budget: int,
        engine: Any = None,
    ) -> tuple[dict, float]:
        """extract of ``corpus`` (a sentence a line) with teacher ``key``: its manifest and all-in seconds."""
        from ctx2static.pipeline.extract import extract_with
        from ctx2static.text.corpus import Corpus, CorpusConfig
        from ctx2static.text.split import Split
        from ctx2static.text.vocab import Vocab, VocabConfig

        source = Corpus([corpus], CorpusConfig(split=Split.LINES))
        t0 = time.perf_counter()
        manifest = extract_with(
            str(self.teachers[key]),
            self.teacher_config(device, precision),
            lambda: (source, Vocab.build(source, VocabConfig(min_count=1))),
            out,
            self.extract_config(budget),
            engine,
        )
        return manifest, time.perf_counter() - t0


def build_teachers(check: Check) -> None:
    """The tokenizer (trained on the demo corpus) and a random teacher of each shape asked for."""
    args = check.args
    lines = demo_lines(args.sentences if args.small else 10**9)
    vocab = train_wordpiece(lines, SMALL_VOCAB if args.small else SHAPES["minilm"].vocab)
    for key in args.teachers:
        shape = (SMALL if args.small else SHAPES)[key]
        folder = check.tmp / f"teacher-{key}"
        params, rows = save_teacher(shape, vocab, folder)
        check.teachers[key] = folder
        dims = f"{shape.layers} x {shape.hidden} ({shape.heads}, {shape.intermediate})"
        model = "MPNetModel" if shape.family == "mpnet" else "BertModel"
        check.report.teachers.append(
            f"| {key} | {shape.label}: {model} | {dims} | {params / 1e6:.1f}M "
            f"| WordPiece of {len(vocab):,} pieces trained on the demo corpus; {rows:,} embedding rows |"
        )


def write_corpora(check: Check) -> None:
    """The timed sentences and the fidelity sentences: the demo corpus's first ones, as text files."""
    args = check.args
    check.corpus = check.tmp / "corpus.txt"
    lines = demo_lines(args.sentences)
    check.corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    check.compare = check.tmp / "compare.txt"
    check.compare.write_text("\n".join(demo_lines(args.compare_sentences)) + "\n", encoding="utf-8")
    words = sum(len(line.split()) for line in lines)
    check.report.head += [
        f"Corpus: the first {args.sentences:,} sentences of the demo corpus ({words:,} words) for speed, "
        f"the first {args.compare_sentences:,} for fidelity; one sentence a line; extract's default "
        "signals (sentence means, per-word sums). Teacher tokens per word are lower than the real "
        "tokenizers' (the WordPiece here is trained on this corpus).",
        "",
    ]


def forward_seconds(
    check: Check, key: str, precision: str, budget: int, peaks: list[str]
) -> tuple[int, dict[str, float]]:
    """Teacher tokens, and seconds of the bare forward and of the forward extract runs over the same
    batches of the timed sentences (``Teacher.forward_wanted`` on batches padded beforehand, as the
    feeding processes hand them over); the teacher loaded here is let go on return."""
    import numpy as np

    from ctx2static.pipeline.batching import host_batch, sorted_batches
    from ctx2static.pipeline.shard import sums_on_device
    from ctx2static.pipeline.teacher import Request, Teacher, torch_threads
    from ctx2static.pipeline.word_sums import DeviceSums
    from ctx2static.text.corpus import Corpus, CorpusConfig
    from ctx2static.text.split import Split

    assert check.corpus is not None
    dev, cfg = check.device, check.extract_config(budget)
    words = [w for _, w in Corpus([check.corpus], CorpusConfig(split=Split.LINES)).sentences()]
    with torch_threads(check.args.threads):
        teacher = Teacher.load(str(check.teachers[key]), check.teacher_config(dev, precision))
        encs = teacher.encode(words, cfg.max_length)
        order = list(sorted_batches([len(e.ids) for e in encs], cfg.token_budget))
        batches = [[encs[i] for i in idx] for idx in order]
        request = Request(vectors=True)  # what extract's teacher pass asks for at default signals
        pad = int(teacher.tokenizer.pad_token_id)
        hosted = {id(b): host_batch(b, np.arange(len(b)), pad) for b in batches}  # as the feeders pad them
        add: dict[int, Any] = {id(b): None for b in batches}
        if sums_on_device(teacher, cfg):  # as extract sums the vectors by word: on the device
            ids: dict[str, int] = {}
            slots = [
                [ids.setdefault(w, len(ids)) for w in s[: e.n_groups]]
                for s, e in zip(words, encs, strict=True)
            ]
            sums = DeviceSums(len(ids), teacher.device)
            for b, idx in zip(batches, order, strict=True):
                add[id(b)] = partial(sums.add, np.asarray([w for i in idx for w in slots[i]], np.int64))
        ways: dict[str, Callable[[list[Any]], object]] = {
            "bare": lambda b: bare(teacher, b),
            "forward": lambda b: teacher.forward_wanted(hosted[id(b)], request, add[id(b)]),
        }
        if precision in ("float16", "bfloat16"):
            cast = cast_model(teacher, precision)
            ways["cast"] = lambda b: bare(teacher, b, cast)
        interleaved(ways, batches[:2] + batches[-2:], dev)  # warm-up: the smallest and largest shapes
        with peak(dev, peaks):
            secs = interleaved(ways, batches, dev)
    return sum(len(e.ids) for e in encs), secs


def speed_step(check: Check, key: str, precision: str, budget: int) -> None:
    """Bare forward against the product's forward over the same batches, then extract of those sentences."""
    assert check.corpus is not None
    peaks: list[str] = []
    n_tok, secs = forward_seconds(check, key, precision, budget, peaks)
    free_device()
    out = check.tmp / f"speed-{key}-{precision}-{budget}"
    with peak(check.device, peaks):
        manifest, wall = check.extract(key, check.corpus, out, check.device, precision, budget)
    rate = manifest["run"]["teacher_tokens_per_s"]
    check.local[key, precision, budget] = rate, out
    bare_rate, fwd_rate = n_tok / secs["bare"], n_tok / secs["forward"]
    cast_rate = f"{n_tok / secs['cast']:,.0f}" if "cast" in secs else "-"
    check.report.speed.append(
        f"| {key} | {precision} | {budget} | {n_tok:,} | {bare_rate:,.0f} | {cast_rate} | {fwd_rate:,.0f} "
        f"| {100 * fwd_rate / bare_rate:.0f}% | {rate:,.0f} | {100 * rate / bare_rate:.0f}% | {wall:.1f} "
        f"| {' / '.join(peaks)} |"
    )


def fidelity_step(check: Check, key: str, precision: str) -> None:
    """A cache of the fidelity sentences on the device against the CPU float32 one (made once a teacher)."""
    assert check.compare is not None
    if key not in check.refs:
        check.refs[key] = check.tmp / f"ref-{key}"
        check.extract(key, check.compare, check.refs[key], "cpu", "float32", check.args.token_budgets[0])
    got = check.refs[key]  # on a CPU in float32 the cache is the reference itself
    if check.device != "cpu" or precision != "float32":
        got = check.tmp / f"fidelity-{key}-{precision}"
        check.extract(key, check.compare, got, check.device, precision, check.args.token_budgets[0])
    means = cosines(sentence_means(check.refs[key]), sentence_means(got))
    ase = ase_cosines(check.refs[key], got)
    check.report.fidelity.append(
        f"| {key} | {precision} | {len(means):,} | {describe(means)} | {len(ase):,} | {describe(ase)} |"
    )


def profile_step(check: Check, key: str, precision: str) -> None:
    """extract of the timed sentences under cProfile, split into profile_extract's stages."""
    from ctx2static.pipeline.teacher import Teacher, torch_threads
    from ctx2static.text.corpus import Corpus, CorpusConfig
    from ctx2static.text.split import Split
    from ctx2static.text.vocab import Vocab, VocabConfig

    sys.path.insert(0, str(ROOT / "bench" / "speed"))
    import profile_extract

    assert check.corpus is not None
    corpus = Corpus([check.corpus], CorpusConfig(split=Split.LINES))
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    with torch_threads(check.args.threads):
        teacher = Teacher.load(str(check.teachers[key]), check.teacher_config(check.device, precision))
        plain, profiled, secs = profile_extract.profile(teacher, corpus, vocab)
    check.report.profile.append(
        f"| {key} | {precision} | whole extract, without / with the profiler "
        f"| {plain:.2f} / {profiled:.2f} | |"
    )
    for stage, sec in sorted(secs.items(), key=lambda kv: -kv[1]):
        check.report.profile.append(
            f"| {key} | {precision} | {stage} | {sec:.2f} | {100 * sec / profiled:.1f}% |"
        )


def ray_step(check: Check, key: str, precision: str) -> None:
    """extract on Ray: one worker per GPU (as many as Ray sees), or one CPU worker; against local extract."""
    from ctx2static.pipeline.config import Engine, EngineConfig

    assert check.corpus is not None
    cuda = check.device.startswith("cuda")
    engine = EngineConfig(engine=Engine.RAY, workers=0 if cuda else 1, gpus_per_worker=1.0 if cuda else 0.0)
    out, budget = check.tmp / f"ray-{key}-{precision}", check.args.token_budgets[0]
    manifest, wall = check.extract(key, check.corpus, out, check.device, precision, budget, engine)
    rate = manifest["run"]["teacher_tokens_per_s"]
    local = check.local.get((key, precision, budget))
    share = f"{100 * rate / local[0]:.0f}%" if local else "- (no local run)"
    same = describe(cosines(sentence_means(local[1]), sentence_means(out))) if local else "-"
    workers = "1 per GPU" if cuda else "1 (CPU)"
    check.report.ray.append(
        f"| {key} | {precision} | {workers} | {rate:,.0f} | {share} | {wall:.1f} | {same} |"
    )


# --- the run ---------------------------------------------------------------------------------------------


def machine_lines(args: argparse.Namespace) -> list[str]:
    """The device, the versions and the commit, for the results file's head."""
    import torch
    import transformers

    device = str(args.device)
    if device.startswith("cuda"):
        p = torch.cuda.get_device_properties(device)
        what = (
            f"{torch.cuda.get_device_name(device)} ({p.total_memory / 2**30:.0f} GiB, compute capability "
            f"{p.major}.{p.minor}, bf16 {'yes' if torch.cuda.is_bf16_supported() else 'no'}), "
            f"CUDA {torch.version.cuda}, {os.cpu_count()} CPU cores"
        )
    else:
        from ctx2static.pipeline.bf16 import fast_bf16

        fast = "fast" if fast_bf16(torch.device("cpu")) else "slow (emulated)"
        what = (
            f"CPU {cpu_name()}, {args.threads or torch.get_num_threads()} torch threads, bf16 products {fast}"
        )
    commit = ""
    with contextlib.suppress(OSError):  # no git, or no repository: the tree was copied
        git = ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]
        commit = subprocess.run(git, capture_output=True, text=True).stdout.strip()
        # a tree copied beside an older .git (a device machine's copy) must not pass for that commit
        changed = ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"]
        if commit and subprocess.run(changed, capture_output=True, text=True).stdout.strip():
            commit += " plus changes to tracked files"
    return [
        f"Device: {what}.",
        "",
        f"Python {platform.python_version()}, torch {torch.__version__}, transformers "
        f"{transformers.__version__}; commit {commit or 'unknown (no git here)'}.",
    ]


def cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def prepare(args: argparse.Namespace, report: Report, tmp: Path) -> str | None:
    """The project from this tree, a GPU if asked for, the imports probed (wheels kept here install
    what lacks); None when the run can go on, else the one line saying why not."""
    report.head += [f"Project: {link_tree(tmp)}.", ""]
    if probe("torch") is None:
        return "torch does not import here; nothing to check"
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        return (
            f"--device {args.device}: torch {torch.__version__} (CUDA {torch.version.cuda or 'none'}) "
            "sees no GPU here; run it on a GPU machine, or with --device cpu"
        )
    report.notes += install_wheels([m for m in MODULES if probe(m) is None], args.wheels, tmp)
    for name, need in MODULES.items():
        version = probe(name)
        report.imports.append(f"| {name} | {version or '**missing**'} | {need} |")
        if version is None:
            report.notes.append(f"- {name} is missing: {'skipped the Ray row' if name == 'ray' else need}")
    return product_problem()


def plan(check: Check) -> list[tuple[str, Callable[[], None]]]:
    """The measuring steps, the most wanted first: per teacher speed then fidelity at extract's default
    token budget, then the larger budgets (at bfloat16, a GPU's default precision), then Ray."""
    args = check.args
    first = "bfloat16" if "bfloat16" in args.precisions else args.precisions[0]
    steps: list[tuple[str, Callable[[], None]]] = []
    for key in args.teachers:
        for p in args.precisions:
            steps.append(
                (f"speed: {key} {p}", lambda k=key, p=p: speed_step(check, k, p, args.token_budgets[0]))
            )
        for p in args.precisions:
            steps.append((f"fidelity: {key} {p}", lambda k=key, p=p: fidelity_step(check, k, p)))
    if args.profile:
        for key in args.teachers:
            steps.append((f"profile: {key} {first}", lambda k=key: profile_step(check, k, first)))
    for budget in args.token_budgets[1:]:
        for key in args.teachers:
            steps.append(
                (
                    f"speed: {key} {first} budget {budget}",
                    lambda k=key, b=budget: speed_step(check, k, first, b),
                )
            )
    if args.no_ray:
        check.report.notes.append("- the Ray row was left out (--no-ray)")
    elif probe("ray") is not None:
        key = args.teachers[0]
        steps.append((f"ray: {key} {first}", lambda: ray_step(check, key, first)))
    return steps


def run(args: argparse.Namespace, tmp: Path) -> int:
    if args.out.exists() and not args.out.is_dir():
        return fail(f"--out {args.out}: a file, not a folder; name a folder for the results file")
    report = Report(args.out / f"check_{args.device.split(':')[0]}.md")
    problem = prepare(args, report, tmp)
    if problem:  # the results file of an earlier run stays as it was
        return fail(problem)
    sys.path.insert(0, str(ROOT / "bench" / "speed"))
    from machine import argv_line  # imports ctx2static: only after prepare() has linked this tree

    cmd = "python bench/gpu/check.py " + argv_line(sys.argv[1:])
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    report.head[:0] = [
        "# The teacher stage on a device: bench/gpu/check.py",
        "",
        f"Command: `{cmd}`",
        "",
        f"Date: {now}.",
        "",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    from ctx2static.pipeline.config import ExtractConfig

    default = ExtractConfig().token_budget
    cuda = args.device.startswith("cuda")
    args.token_budgets = args.token_budgets or ([default, 8 * default] if cuda else [default])
    report.head += [*machine_lines(args), ""]
    check = Check(args, report, tmp)
    steps = Steps(report, args.budget_s)
    steps("the teachers and the tokenizer", lambda: build_teachers(check))
    steps("the corpora", lambda: write_corpora(check))
    if not check.teachers or check.corpus is None:
        return 1
    for what, fn in plan(check):
        steps(what, fn)
    seconds = time.perf_counter() - steps.start
    report.head.append(f"Whole check: {seconds:.0f} s.")
    report.write()
    print(f"{report.path}: written in {seconds:.0f} s{'; a step failed' if steps.failed else ''}")
    return 1 if steps.failed else 0


def main() -> int:
    args = parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no network: never wait for the hub
    os.environ.setdefault("TQDM_DISABLE", "1")  # the steps' lines say where the run is; no bars
    with tempfile.TemporaryDirectory(prefix="ctx2static-gpu-check-") as tmp:
        return run(args, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
