"""Peers and our vectors side by side: sentence level under the ``sentences`` family's protocol, word
level (``cli.py eval``), folder sizes, and each recipe's wall time and peak memory.

Runs in ctx2static's environment (model2vec loads a folder without its distill extra). A ``--model``
is a folder that encodes texts with its own tokenizer and pooling (``words.py``): a Model2Vec folder
(a peer's, or our ``cli.py export --format model2vec``) or a sentence-transformers folder (the
teacher itself: the ceiling a static table distils towards); or it is our vectors (a native folder
or a file), which encode with :meth:`Vectors.encode` once per ``--weighting``, after PCA to
``--dims`` (:meth:`Vectors.reduced`) when they are wider:

    python bench/peers/compare.py --corpus "$CTX2STATIC_SHARED"/corpus/brown.txt.xz --dims 256 \\
        --weighting none --weighting sif --weighting zipf \\
        --model model2vec=runs/peers/model2vec-minilm --model tokenlearn=runs/peers/tokenlearn-minilm-brown \\
        --model ase=runs/brown/vectors/ase --model ase-int8=runs/export/ase-int8-256 \\
        --out bench/results/sentences_brown.md

Sentence level: the family's sets, subsample, stratified folds and logistic regression
(:func:`~ctx2static.eval.sentences.score_encoder`, the code ``cli.py eval --family sentences``
runs), so a row of ours here equals that command's on the same table and weighting. Word level:
``cli.py eval`` on the items every row covers; a folder that encodes itself is scored on the
vocabulary a study builds from ``--corpus``, each word encoded alone (``words.py``), our vectors at
``--dims``. Timings: a peer folder's ``<folder>.timings.json`` (``peerrun.py``); for our vectors,
the extraction from the cache's ``<cache>.json`` and the student from its ``meta.json``, both as
the study recorded them.
Sentence scores are kept in ``--scores`` (``<out>.scores.json``), so a rerun with more rows scores only
the new ones.

A hand-written preface of ``--out`` (everything above its "## Sentence level" line: what the rows
are, the commands that made them) is kept when the file is written again; a file without that line
yet is all preface (a header written before the first run).

``--sentence-set FILE`` (repeat) adds a labelled or pair file of one's own (``cli.py eval --sentences
FILE``'s forms: labelled, pair or retrieval), scored under the same protocol and named after the
file; ``--no-bundled-sentences`` leaves the bundled sets out. The labelled files' mean accuracy is
the column ``sets-mean`` (the bundled sets' is ``sentences-mean``), the pair files' mean Spearman
(the STS sets) ``pairs-mean``; a retrieval file gives nDCG@10 and MRR columns.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import split_at

from ctx2static.errors import UserError
from ctx2static.eval.downstream.data import LabelledTexts
from ctx2static.eval.results import Score, summary
from ctx2static.eval.sentences import (
    PAIRS_MEAN,
    PairSet,
    SentenceConfig,
    SentenceSet,
    evaluate_sentences,
    load_sentences,
    mean_accuracy,
    mean_spearman,
    protocol,
    read_sentence_file,
    score_encoder,
)
from ctx2static.fileio.atomic import atomic_write, write_json
from ctx2static.fileio.outputs import check_writable
from ctx2static.fileio.reading import read_json
from ctx2static.text.vocab import VocabConfig
from ctx2static.vectors import Vectors
from ctx2static.vectors.encoding import Weighting
from words import encodes_itself, folder_encoder, study_vocab, vocab_words

MEAN = "sentences-mean"
SETS_MEAN = "sets-mean"


@dataclass(frozen=True)
class Model:
    """A row source: a folder that encodes itself, or our vectors (PCA to ``dims`` when wider; 0: keep)."""

    name: str
    path: Path
    dims: int

    @property
    def folder(self) -> bool:
        """Whether the row encodes with the folder's own tokenizer and pooling (``words.py``)."""
        return encodes_itself(self.path)

    def vectors(self) -> Vectors:
        """Our vectors, on their first ``dims`` principal axes when they have more."""
        vectors = Vectors.load(self.path)
        return vectors.reduced(self.dims) if 0 < self.dims < vectors.dim else vectors


def named(items: list[str], dims: int) -> list[Model]:
    """``NAME=PATH`` arguments as models, in the order given."""
    out = []
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path or not Path(path).exists():
            sys.exit(f"error: --model {item!r}: expected NAME=PATH of an existing folder or file")
        out.append(Model(name, Path(path), dims))
    return out


def sentence_sets(files: list[Path], bundled: bool) -> tuple[list[SentenceSet], str]:
    """The bundled sets (unless not ``bundled``) and the ``files``, and what the scores' cache key adds.

    A file is keyed by its path and modification time, so an edited file is scored again.
    """
    sets = [*(load_sentences() if bundled else []), *(read_sentence_file(path) for path in files)]
    names = [s.name for s in sets]
    clash = next((name for name in names if names.count(name) > 1), None)
    if clash is not None:
        raise UserError(f"two sentence sets are named {clash!r}; rename a --sentence-set file")
    extra = [f"{path.resolve()}@{path.stat().st_mtime}" for path in files]
    return sets, "" if bundled and not files else "|" + ";".join(["bundled"] * bundled + extra)


def sets_mean(scores: list[Score], files: list[SentenceSet]) -> Score | None:
    """The mean accuracy over the labelled ``files`` (None without any)."""
    names = [s.name for s in files if isinstance(s, LabelledTexts)]
    picked = [s for s in scores if s.benchmark in names and s.metric == "accuracy"]
    return summary(picked, SETS_MEAN, f"mean accuracy ({', '.join(names)})") if picked else None


def sentence_rows(
    models: list[Model], weightings: list[Weighting], store: Path, files: list[Path], bundled: bool = True
) -> dict[str, dict[str, Score]]:
    """Row name -> set -> score; a folder that encodes itself is one row, our vectors one per weighting."""
    cached = read_json(store, "delete it (its rows are scored again)") if store.exists() else {}
    sets, sets_key = sentence_sets(files, bundled)
    own = sets[len(sets) - len(files) :]
    rows = {}
    for model in models:
        variants = [None] if model.folder else weightings
        loaded = None
        for weighting in variants:
            name = model.name if weighting is None else f"{model.name} ({weighting.value})"
            key = f"{model.path.resolve()}|{model.path.stat().st_mtime}|{model.dims}|{weighting}{sets_key}"
            if key not in cached:
                if loaded is None:
                    loaded = _encoder_source(model)
                start = time.perf_counter()
                if weighting is None:
                    scores = [s for data in sets for s in score_encoder(loaded, data)]
                else:
                    config = SentenceConfig(weighting=weighting)
                    scores = [s for data in sets for s in evaluate_sentences(loaded, data, config)]
                cached[key] = [s.to_json() for s in scores]
                write_json(store, cached)
                print(f"{name}: sentences in {time.perf_counter() - start:.0f} s", flush=True)
            scores = [Score.from_json(d) for d in cached[key]]
            pair_files = [s.name for s in own if isinstance(s, PairSet)]
            means = [mean_accuracy(scores), sets_mean(scores, own), mean_spearman(scores, pair_files)]
            rows[name] = {s.benchmark: s for s in [*scores, *means] if s is not None}
    return rows


def _encoder_source(model: Model):
    """A folder's own ``encode`` (its tokenizer and pooling), or our (reduced) vectors."""
    return folder_encoder(model.path) if model.folder else model.vectors()


def sentence_table(rows: dict[str, dict[str, Score]]) -> list[str]:
    """Markdown: one row per model, one column per set: the labelled sets and their means, the pair
    sets and the pair files' mean, then the retrieval sets."""
    first = next(iter(rows.values()))
    labelled = [b for b, s in first.items() if s.metric == "accuracy"]
    pairs = [b for b, s in first.items() if s.metric.startswith("spearman")]
    retrieval = [b for b, s in first.items() if s.metric.startswith(("nDCG", "MRR"))]
    means = [m for m in (MEAN, SETS_MEAN) if m in first]
    columns = [*labelled, *means, *pairs, *([PAIRS_MEAN] if PAIRS_MEAN in first else []), *retrieval]
    lines = ["| model | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for name, scores in rows.items():
        cells = []
        for column in columns:
            s = scores.get(column)
            if s is None:
                cells.append("")
            elif column in (MEAN, SETS_MEAN, PAIRS_MEAN):
                cells.append(f"**{s.score:.1f}**")
            else:
                std = f" ±{s.std:.1f}" if s.std is not None else ""
                cells.append(f"{s.score:.1f}{std}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def word_table(models: list[Model], corpus: list[str], min_count: int) -> str:
    """``cli.py eval``'s Markdown table: our vectors at ``dims``, a folder over the corpus words."""
    vocab = study_vocab(corpus, min_count) if any(m.folder for m in models) else None
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for model in models:
            path = Path(tmp) / f"{model.name}.bin"
            (vocab_words(model.path, vocab) if model.folder else model.vectors()).save(path)
            files.append(path)
        table = Path(tmp) / "words.md"
        cli = Path(__file__).resolve().parents[2] / "cli.py"
        subprocess.run(
            [sys.executable, str(cli), "eval", *map(str, files), "--markdown", str(table)], check=True
        )
        text = table.read_text()
        for model, path in zip(models, files, strict=True):
            text = text.replace(str(path), model.name)
    return text


def timings_rows(models: list[Model]) -> list[str]:
    """Each recipe's steps: wall time and peak RSS (a peer's timings JSON; our cache's and meta's)."""
    rows = ["| recipe | step | wall s | peak RSS MiB |", "|---|---|---:|---:|"]
    for model in models:
        steps = _steps(model)
        for step, (seconds, peak) in steps.items():
            memory = "" if peak is None else f"{peak:,.0f}"
            rows.append(f"| {model.name} | {step} | {seconds:,.1f} | {memory} |")
        if len(steps) > 1:
            rows.append(f"| {model.name} | total | {sum(s for s, _ in steps.values()):,.1f} | |")
    return rows if len(rows) > 2 else []


def _steps(model: Model) -> dict[str, tuple[float, float | None]]:
    """Step -> (wall seconds, peak RSS MiB or None) of the recipe that made ``model``."""
    if model.folder:
        path = model.path.with_name(model.path.name + ".timings.json")
        if not path.exists():
            return {}
        record = json.loads(path.read_text())
        return {step: (t["wall_s"], t["peak_rss_mib"]) for step, t in record["steps"].items()}
    path = model.path
    meta_path = path / "meta.json" if path.is_dir() else path.with_name(path.name + ".meta.json")
    if not meta_path.exists():
        return {}
    meta = json.loads(meta_path.read_text())
    steps = {}
    cache = Path(meta["cache"]).with_name(Path(meta["cache"]).name + ".json") if meta.get("cache") else None
    if cache is not None and cache.exists():
        record = json.loads(cache.read_text())
        steps["extract"] = (record["seconds"], record.get("peak_rss_mb"))
    study = meta.get("study", {})
    student = meta.get("student", "student")
    retrofits = meta.get("retrofit", [])
    if retrofits:  # its meta keeps the student's fields; the study's step is the retrofit's
        if meta.get("seconds") is not None:
            steps[student] = (meta["seconds"], None)
        if study.get("seconds") is not None:
            steps[" + ".join(r["method"] for r in retrofits)] = (study["seconds"], study.get("peak_rss_mb"))
        return steps
    seconds = study.get("seconds", meta.get("seconds"))
    if seconds is not None:  # a table made by combine or compose records no training time
        steps[student] = (seconds, study.get("peak_rss_mb"))
    return steps


def size_rows(models: list[Model]) -> list[str]:
    """The size on disk of each folder that encodes itself (all its files, subfolders included)."""
    rows = ["| folder | MiB |", "|---|---:|"]
    for model in models:
        if model.folder:
            size = sum(p.stat().st_size for p in model.path.rglob("*") if p.is_file())
            rows.append(f"| {model.name} | {size / 2**20:.1f} |")
    return rows if len(rows) > 2 else []


SECTION = "## Sentence level"


def preface(path: Path) -> str:
    """The hand-written part of an earlier ``path``: the lines above its first section, all of it
    without one (a header written before the first run), nothing without the file."""
    above, section = split_at(path, SECTION)
    return above if section or not path.is_file() else path.read_text(encoding="utf-8").rstrip("\n") + "\n\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    models_help = "NAME=PATH: a Model2Vec or sentence-transformers folder, or our vectors"
    ap.add_argument("--model", action="append", required=True, help=models_help)
    ap.add_argument("--dims", type=int, default=0, help="PCA our vectors to this many dims (0: keep)")
    ap.add_argument(
        "--weighting", action="append", type=Weighting, help="our vectors' weighting (repeat; default none)"
    )
    ap.add_argument("--corpus", action="append", default=[], help="the corpus whose words a folder encodes")
    ap.add_argument("--min-count", type=int, default=VocabConfig().min_count)
    ap.add_argument("--no-words", action="store_true", help="leave the word-level table out")
    ap.add_argument("--out", required=True, type=Path, help="the Markdown file to write")
    ap.add_argument("--scores", type=Path, help="sentence scores kept between runs [<out>.scores.json]")
    ap.add_argument(
        "--sentence-set",
        action="append",
        type=Path,
        default=[],
        help="a labelled, pair or retrieval file of one's own (cli.py eval --sentences FILE's forms; repeat)",
    )
    ap.add_argument("--no-bundled-sentences", action="store_true", help="score only the --sentence-set files")
    args = ap.parse_args()
    models = named(args.model, args.dims)
    if args.no_bundled_sentences and not args.sentence_set:
        sys.exit("error: --no-bundled-sentences leaves no sentence set: give --sentence-set FILE")
    if not args.no_words and not args.corpus and any(m.folder for m in models):
        sys.exit("error: the word table of a folder that encodes itself needs --corpus (or pass --no-words)")
    weightings = args.weighting or [Weighting.NONE]
    store = args.scores or args.out.with_name(args.out.name + ".scores.json")
    inputs = [m.path for m in models] + args.corpus + args.sentence_set
    for output in (args.out, store):  # before the scoring, not after it
        check_writable(output, inputs=inputs, folder=False)
    rows = sentence_rows(models, weightings, store, args.sentence_set, not args.no_bundled_sentences)
    lines = [f"{SECTION} ({time.strftime('%Y-%m-%d', time.gmtime())})", "", *sentence_table(rows), ""]
    lines += [f"- {line}" for line in protocol(SentenceConfig())]
    lines += [
        "- a Model2Vec or sentence-transformers folder encodes with its own tokenizer and pooling "
        "(`StaticModel.encode`, `SentenceTransformer.encode`); our "
        f"vectors with `Vectors.encode` at the weighting in brackets, PCA to {args.dims or 'all'} dims",
        "",
    ]
    if not args.no_words:
        lines += ["## Word level (`cli.py eval`)", "", word_table(models, args.corpus, args.min_count), ""]
    sizes = size_rows(models)
    if sizes:
        lines += ["## Folder sizes", "", *sizes, ""]
    timing = timings_rows(models)
    if timing:
        lines += ["## Recipes: wall time and peak memory per step", "", *timing, ""]
    text = preface(args.out) + "\n".join(lines)
    with atomic_write(args.out, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(text)


if __name__ == "__main__":
    try:
        main()
    except UserError as e:
        raise SystemExit(f"error: {e}") from None
