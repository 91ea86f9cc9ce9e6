"""The study report: ``report.md`` with its tables and two figures (``pairs.png``, ``curves.png``).

Sections: the results table (every output, every benchmark, coverage), deltas against the plain
baselines, nearest neighbours of chosen words (the seeds' Table 5: light, while, bank), a PCA
projection of the Google set's male/female pairs per output, training curves (loss per epoch),
timings and cache sizes. Figures use matplotlib's Agg backend (no display needed).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ctx2static.eval.benchmarks import read_analogy
from ctx2static.eval.results import Score, format_markdown, table
from ctx2static.eval.suite import notes
from ctx2static.fileio import atomic_write
from ctx2static.resources import BENCHMARK_DIR
from ctx2static.study import (
    ReportSpec,
    Study,
    analogy_config,
    cache_dir,
    cache_ledger,
    eval_file,
    read_json,
    vectors_dir,
)
from ctx2static.vectors import Vectors

PAIRS_PNG = "pairs.png"
CURVES_PNG = "curves.png"
GOOGLE = BENCHMARK_DIR / "analogy" / "google.txt"

LOSS_LABEL = {
    "sgns": "NS loss per pair",
    "cbow": "NS loss per centre word",
    "glove": "cost J per nonzero",
    "semglove": "cost J per nonzero",
    "x2static": "loss per target",
    "bert-sg": "loss per centre word",
    "ctx2vec": "loss per centre word",
}
"""What each student's ``loss_per_epoch`` averages (its y-axis label)."""


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]], numeric_from: int = 1) -> list[str]:
    align = ["---"] * numeric_from + ["---:"] * (len(header) - numeric_from)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def delta_table(study: Study, results: Mapping[str, Sequence[Score]]) -> tuple[list[str], list[list[str]]]:
    """Each output minus its baseline (``Study.baseline``) on every benchmark, avg5 first."""
    pairs = [(n, b) for n in study.outputs if (b := study.baseline(n)) is not None and b in results]
    _, rows = table(results)
    keys = [(r[0], r[1]) for r in rows]
    keys.sort(key=lambda k: k[0] != "avg5")
    scores = {n: {(s.benchmark, s.metric): s.score for s in results[n]} for n in results}
    out = []
    for key in keys:
        cells = []
        for n, b in pairs:
            a, c = scores[n].get(key), scores[b].get(key)
            if a is None or c is None:
                cells.append("-")
            elif math.isnan(a) or math.isnan(c):
                cells.append("n/a")
            else:
                cells.append(f"{a - c:+.1f}")
        out.append([*key, *cells])
    return ["benchmark", "metric", *(f"{n} − {b}" for n, b in pairs)], out


def neighbour_lines(spec: ReportSpec, vectors: Mapping[str, Vectors]) -> list[str]:
    """One Markdown table per chosen word: its ``spec.neighbours`` nearest words in every output."""
    lines: list[str] = []
    for word in spec.words:
        rows = []
        for name, v in vectors.items():
            try:
                near = ", ".join(w for w, _ in v.most_similar(word, spec.neighbours))
            except KeyError:
                near = "(not in the vocabulary)"
            rows.append([name, near])
        lines += [
            f"**{word}**",
            "",
            *_md_table(["vectors", f"{spec.neighbours} nearest (cosine)"], rows, 2),
            "",
        ]
    return lines


def google_pairs(section: str) -> list[tuple[str, str]]:
    """The distinct word pairs (a, b) and (c, d) of one section of the bundled Google analogy set."""
    bench = read_analogy(GOOGLE)
    pairs: dict[tuple[str, str], None] = {}
    for q, s in zip(bench.questions, bench.sections, strict=True):
        if s == section:
            pairs.update({(q[0], q[1]): None, (q[2], q[3]): None})
    return list(pairs)


def pca_2d(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``x`` projected on their first two principal components, and the variance ratios."""
    centred = x - x.mean(0)
    _, sv, vt = np.linalg.svd(centred, full_matrices=False)
    ratio = sv**2 / max(float((sv**2).sum()), 1e-12)
    return centred @ vt[:2].T, ratio[:2]


def _grid(n: int, width: float, height: float) -> tuple[Any, np.ndarray]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(n, 4)
    rows = math.ceil(n / cols)
    size = (max(width * cols, 8.0), height * rows)  # wide enough for the title
    fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes.ravel()


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100)
    plt.close(fig)


def _label_positions(ax: Any, xy: np.ndarray, words: Sequence[str]) -> np.ndarray:
    """Where to put each word's label (axes fraction): just right of its point, pushed apart vertically.

    A greedy repulsion over approximate label boxes (fontsize 9 in a ~4.6 inch panel), so that
    words whose points nearly coincide (he/his, she/her) stay readable; a thin line joins a moved
    label to its point.
    """
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    pos = np.column_stack([(xy[:, 0] - x0) / (x1 - x0) + 0.015, (xy[:, 1] - y0) / (y1 - y0) + 0.01])
    width = np.array([0.017 * len(w) + 0.01 for w in words])
    height = 0.055
    for _ in range(200):
        moved = False
        for i in range(len(words)):
            for j in range(i + 1, len(words)):
                overlap_x = pos[i, 0] < pos[j, 0] + width[j] and pos[j, 0] < pos[i, 0] + width[i]
                gap = abs(pos[i, 1] - pos[j, 1])
                if overlap_x and gap < height:
                    step = (height - gap) / 2 + 1e-3
                    sign = 1.0 if pos[i, 1] > pos[j, 1] or (gap == 0 and i < j) else -1.0
                    pos[i, 1] += sign * step
                    pos[j, 1] -= sign * step
                    moved = True
        if not moved:
            break
    pos[:, 1] = np.clip(pos[:, 1], -0.02, 0.96)
    return pos


def plot_pairs(spec: ReportSpec, vectors: Mapping[str, Vectors], path: Path) -> list[tuple[str, str]]:
    """PCA of the male/female pairs per output, one subplot each; returns the pairs plotted.

    Only pairs whose two words every output knows are drawn (the same words in every panel), at
    most ``spec.max_pairs``; nothing is written when fewer than two are left.
    """
    known = [
        p
        for p in google_pairs(spec.pairs)
        if all(v.lookup(w) is not None for v in vectors.values() for w in p)
    ]
    pairs = known[: spec.max_pairs]
    if len(pairs) < 2:
        path.unlink(missing_ok=True)
        return []
    fig, axes = _grid(len(vectors), 4.6, 4.2)
    for ax, (name, v) in zip(axes, vectors.items(), strict=False):
        rows = [v.lookup(w) for p in pairs for w in p]
        xy, ratio = pca_2d(v.unit()[rows].astype(np.float64))
        male, female = xy[0::2], xy[1::2]
        for m, f in zip(male, female, strict=True):
            ax.plot([m[0], f[0]], [m[1], f[1]], color="0.7", lw=1, zorder=1)
        ax.scatter(male[:, 0], male[:, 1], c="tab:blue", marker="o", s=22, zorder=2, label="male word")
        ax.scatter(female[:, 0], female[:, 1], c="tab:red", marker="s", s=22, zorder=2, label="female word")
        ax.margins(0.18)
        words = [w for p in pairs for w in p]
        for word, point, text in zip(words, xy, _label_positions(ax, xy, words), strict=True):
            ax.annotate(
                word,
                point,
                xytext=text,
                textcoords="axes fraction",
                fontsize=9,
                va="bottom",
                arrowprops={"arrowstyle": "-", "color": "0.55", "lw": 0.6, "shrinkA": 0, "shrinkB": 2},
            )
        ax.set_title(name, fontsize=11)
        ax.set_xlabel(f"PC1 ({ratio[0]:.0%} of variance)", fontsize=9)
        ax.set_ylabel(f"PC2 ({ratio[1]:.0%})", fontsize=9)
        ax.tick_params(labelsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", fontsize=10)
    fig.suptitle(
        f"Google analogy '{spec.pairs}' pairs: 2-D PCA of the {2 * len(pairs)} unit vectors in each model"
        " (grey lines join a pair)",
        fontsize=12,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    _save(fig, path)
    return pairs


def plot_curves(study: Study, vectors: Mapping[str, Vectors], path: Path) -> list[str]:
    """Loss per epoch of every student that records one, a subplot each; returns their names."""
    runs = [
        (s, vectors[s.name].meta["loss_per_epoch"])
        for s in study.students
        if vectors[s.name].meta.get("loss_per_epoch")
    ]
    if not runs:
        path.unlink(missing_ok=True)
        return []
    fig, axes = _grid(len(runs), 3.8, 3.0)
    for ax, (s, losses) in zip(axes, runs, strict=False):
        epochs = np.arange(1, len(losses) + 1)
        ax.plot(epochs, losses, marker="o", color="tab:blue")
        ax.set_title(f"{s.name} ({s.student})" if s.name != s.student else s.name, fontsize=11)
        ax.set_xlabel("epoch", fontsize=9)
        ax.set_ylabel(LOSS_LABEL.get(s.student, "mean loss"), fontsize=9)
        ax.set_xticks(np.unique(np.linspace(1, len(losses), min(len(losses), 6)).round()))
        ax.set_xlim(0.5, len(losses) + 0.5)
        ax.tick_params(labelsize=9)
        ax.grid(alpha=0.3)
    fig.suptitle("Training loss per epoch (mean over the epoch; each student on its own scale)", fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    _save(fig, path)
    return [s.name for s, _ in runs]


def timing_lines(study: Study, out: Path, vectors: Mapping[str, Vectors]) -> list[str]:
    """Seconds of every step (as last run) and the training throughput."""
    rows, total = [], 0.0
    for name in study.teachers:
        rec = read_json(cache_ledger(out, name))
        if "seconds" in rec:
            total += rec["seconds"]
            rows.append(
                [f"extract {name}", f"{rec['seconds']:,.1f}", "", f"{rec['teacher_tokens_per_s']:,} teacher"]
            )
    students = {s.name for s in study.students}
    for name, v in vectors.items():
        seconds = v.meta.get("study", {}).get("seconds", 0.0)
        total += seconds
        if name in students:
            rate = f"{v.meta.get('tokens_per_second', 0):,} corpus"
            rows.append(
                [f"student {name}", f"{seconds:,.1f}", f"{v.meta.get('train_seconds', 0):,.1f}", rate]
            )
        else:
            rows.append([f"retrofit {name}", f"{seconds:,.1f}", "", ""])
    for name in vectors:
        seconds = read_json(eval_file(out, name)).get("seconds", 0.0)
        total += seconds
        rows.append([f"eval {name}", f"{seconds:,.1f}", "", ""])
    rows.append(["**total**", f"**{total:,.1f}**", "", ""])
    header = ["step", "seconds", "training seconds", "tokens/s (x epochs)"]
    return [
        *_md_table(header, rows),
        "",
        "Seconds as last run (a skipped step keeps the time it took when it ran); a student's seconds "
        "include reading the corpus or cache, its training seconds only the fit.",
    ]


def cache_lines(study: Study, out: Path) -> list[str]:
    """Bytes per signal and per corpus token of every teacher cache."""
    from ctx2static.cache import Cache
    from ctx2static.cache.info import signal_bytes

    lines: list[str] = []
    for name in study.teachers:
        folder = cache_dir(out, name)
        if not folder.is_dir():
            continue
        cache = Cache.open(folder)
        n_words = int(cache.manifest.get("totals", {}).get("n_words", 0))
        n_sent = int(cache.manifest.get("totals", {}).get("n_sentences", 0))
        rows = [
            [key, f"{size:,}", f"{size / max(n_words, 1):,.1f}"] for key, size in signal_bytes(cache).items()
        ]
        disk = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
        rows.append(["**all files**", f"**{disk:,}**", f"**{disk / max(n_words, 1):,.1f}**"])
        lines += [
            f"**{name}** ({study.teachers[name].model}): {n_sent:,} sentences, {n_words:,} corpus tokens, "
            f"{cache.n_shards} shards",
            "",
            *_md_table(["signal", "bytes", "bytes/token"], rows),
            "",
        ]
    return lines or ["No teacher cache in this study."]


def _changed(config: Any) -> str:
    """The fields of a dataclass that differ from their defaults, as ``k=v, ...``."""
    default = type(config)()
    names = [f.name for f in dataclasses.fields(config)]
    diff = [f"{n}={getattr(config, n)}" for n in names if getattr(config, n) != getattr(default, n)]
    return ", ".join(diff) or "defaults"


def write_report(study: Study, out: Path, results: Mapping[str, Sequence[Score]]) -> Path:
    """Write ``out/report.md`` and its figures from the study's outputs in ``out``; return its path."""
    vectors = {name: Vectors.load(vectors_dir(out, name), mmap=True) for name in study.outputs}
    spec = study.report
    corpus = ", ".join(p.name for p in study.corpus.files)
    teachers = "; ".join(f"{t.name} = {t.model} ({_changed(t.extract)})" for t in study.teachers.values())
    lines = [
        f"# Study report: {study.path.name}",
        "",
        f"Written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Corpus: {corpus}. "
        f"Teachers: {teachers or 'none'}. Outputs are in vectors/, scores in eval/, the study in study.toml.",
        "",
        "## Results",
        "",
        format_markdown(results, notes(analogy_config(study.eval))),
        "## Against the plain baselines",
        "",
    ]
    header, rows = delta_table(study, results)
    if len(header) > 2:
        lines += [
            "Score of each output minus its baseline (a retrofit against its input), in points x100. "
            "Outputs with different vocabularies are scored on different items: see the coverage above.",
            "",
            *_md_table(header, rows, 2),
            "",
        ]
    else:
        lines += ["No output has a plain baseline in this study.", ""]
    lines += ["## Nearest neighbours", "", *neighbour_lines(spec, vectors)]
    lines += [f"## Male/female pairs (Google '{spec.pairs}' section)", ""]
    pairs = plot_pairs(spec, vectors, out / PAIRS_PNG)
    if pairs:
        listed = ", ".join(f"{a}/{b}" for a, b in pairs)
        lines += [f"![male/female pairs]({PAIRS_PNG})", "", f"Pairs known to every output: {listed}.", ""]
    else:
        lines += ["Fewer than two pairs are known to every output; no figure.", ""]
    lines += ["## Training curves", ""]
    curves = plot_curves(study, vectors, out / CURVES_PNG)
    lines += [f"![training curves]({CURVES_PNG})", ""] if curves else ["No student recorded a loss.", ""]
    lines += ["## Timings", "", *timing_lines(study, out, vectors), "", "## Cache sizes", ""]
    lines += cache_lines(study, out)
    path = out / "report.md"
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines).rstrip() + "\n")
    return path
