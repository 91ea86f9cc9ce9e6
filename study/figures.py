"""The study report's figures (matplotlib, Agg backend: no display needed).

``pairs.png``: a PCA of the Google set's male/female pairs per output; ``curves.png``: the loss
per epoch of every student that records one over two or more epochs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ctx2static.eval.benchmarks import read_analogy
from ctx2static.fileio.atomic import atomic_write
from ctx2static.resources import BENCHMARK_DIR
from ctx2static.students.registry import spec
from ctx2static.study.schema import ReportSpec, Study
from ctx2static.vectors import Vectors

GOOGLE = BENCHMARK_DIR / "analogy" / "google.txt"


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


def _declutter(ax: Any, labels: Sequence[Any], rounds: int = 500) -> None:
    """Push apart the labels of one panel that overlap, as drawn (their measured boxes), vertically.

    Words whose points nearly coincide (he/his, she/her, a cluster of kin terms) would print over
    each other: each round moves every overlapping pair apart by their overlap, until none is
    left, inside the panel; a thin line joins a moved label to its point. Run after the layout is
    final (the boxes are measured once, in display units, and moved as numbers).
    """
    renderer = ax.figure.canvas.get_renderer()
    boxes = np.array([t.get_window_extent(renderer).padded(1.0).extents for t in labels])  # x0 y0 x1 y1
    x0, y0, x1, y1 = boxes.T.copy()
    frame = ax.get_window_extent(renderer)  # labels stay inside the panel: off its right edge move left
    dx = np.minimum(frame.x1 - x1, 0.0)
    x0, x1 = x0 + dx, x1 + dx
    order = np.arange(len(labels))
    for _ in range(rounds):
        inside = np.clip(y0, frame.y0, frame.y1 - (y1 - y0)) - y0
        y0, y1 = y0 + inside, y1 + inside
        overlap = np.minimum(y1[:, None], y1[None]) - np.maximum(y0[:, None], y0[None])
        clash = (overlap > 0) & (np.minimum(x1[:, None], x1[None]) > np.maximum(x0[:, None], x0[None]))
        np.fill_diagonal(clash, False)
        if not clash.any():
            break
        # of each clashing pair the lower label (the later one on a tie) moves down, the other up
        above = (y0[:, None] > y0[None]) | ((y0[:, None] == y0[None]) & (order[:, None] < order[None]))
        step = np.where(clash, overlap / 2 + 0.5, 0.0)
        dy = np.where(above, step, -step).sum(1)
        y0, y1 = y0 + dy, y1 + dy
    to_axes = ax.transAxes.inverted()
    for label, moved_x, moved_y in zip(labels, dx, y0 - boxes[:, 1], strict=True):
        x, y = ax.transAxes.transform(label.xyann)
        label.xyann = tuple(to_axes.transform((x + moved_x, y + moved_y)))


def plot_pairs(spec: ReportSpec, vectors: Mapping[str, Vectors], path: Path) -> list[tuple[str, str]]:
    """PCA of the male/female pairs per output, one subplot each; returns the pairs plotted.

    Only pairs whose two words every output knows are drawn (the same words in every panel), at
    most ``spec.max_pairs``; nothing is written when fewer than two are left.
    """
    known = [
        p
        for p in google_pairs(spec.pairs)
        if all(v.row_of(w) is not None for v in vectors.values() for w in p)
    ]
    pairs = known[: spec.max_pairs]
    if len(pairs) < 2:
        path.unlink(missing_ok=True)
        return []
    fig, axes = _grid(len(vectors), 4.6, 4.2)
    placed = []
    for ax, (name, v) in zip(axes, vectors.items(), strict=False):
        rows = [r for p in pairs for w in p if (r := v.row_of(w)) is not None]  # every word is known
        xy, ratio = pca_2d(v.unit()[rows].astype(np.float64))
        male, female = xy[0::2], xy[1::2]
        for m, f in zip(male, female, strict=True):
            ax.plot([m[0], f[0]], [m[1], f[1]], color="0.7", lw=1, zorder=1)
        ax.scatter(male[:, 0], male[:, 1], c="tab:blue", marker="o", s=22, zorder=2, label="male word")
        ax.scatter(female[:, 0], female[:, 1], c="tab:red", marker="s", s=22, zorder=2, label="female word")
        ax.margins(0.18)
        words = [w for p in pairs for w in p]
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        at = np.column_stack([(xy[:, 0] - x0) / (x1 - x0) + 0.015, (xy[:, 1] - y0) / (y1 - y0) + 0.01])
        texts = [
            ax.annotate(
                word,
                point,
                xytext=tuple(text),
                textcoords="axes fraction",
                fontsize=9,
                va="bottom",
                arrowprops={"arrowstyle": "-", "color": "0.55", "lw": 0.6, "shrinkA": 0, "shrinkB": 2},
            )
            for word, point, text in zip(words, xy, at, strict=True)
        ]
        placed.append((ax, texts))
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
    for ax, texts in placed:
        _declutter(ax, texts)
    _save(fig, path)
    return pairs


def plot_curves(study: Study, vectors: Mapping[str, Vectors], path: Path) -> list[str]:
    """Loss per epoch of every student that records two or more, a subplot each; returns their names.

    A student trained for one epoch has a single point, no curve: it is left out.
    """
    runs = [
        (s, vectors[s.name].meta["train"]["loss_per_epoch"])
        for s in study.students
        if len(vectors[s.name].meta.get("train", {}).get("loss_per_epoch") or []) >= 2
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
        ax.set_ylabel(spec(s.student).loss_label or "mean loss", fontsize=9)
        ax.set_xticks(np.unique(np.linspace(1, len(losses), min(len(losses), 6)).round()))
        ax.set_xlim(0.5, len(losses) + 0.5)
        ax.tick_params(labelsize=9)
        ax.grid(alpha=0.3)
    fig.suptitle("Training loss per epoch (mean over the epoch; each student on its own scale)", fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    _save(fig, path)
    return [s.name for s, _ in runs]
