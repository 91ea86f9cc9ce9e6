"""The documentation's figures, drawn from the tables in ``bench/results/`` (run: ``python docs/figures.py``).

Each figure reads the Markdown table of the results file it names, so a re-run bench redraws its
figure and a figure never holds a number of its own. The PNGs go to ``docs/img/``; they are
committed (small, 100 dpi) so the site builds without matplotlib's fonts being the same everywhere.
The architecture figure is drawn from the commands' names alone (no results file): a PNG rather
than a Mermaid diagram so that it shows offline and on the repository's own pages too.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
OUT = ROOT / "docs" / "img"

Row = dict[str, str]


def table(name: str, *columns: str) -> list[Row]:
    """The rows of the first Markdown table in ``bench/results/name`` that has all these columns."""
    lines = (RESULTS / name).read_text().splitlines()
    for i, line in enumerate(lines):
        cells = _cells(line)
        if set(columns) <= set(cells) and i + 1 < len(lines) and set(lines[i + 1]) <= set("|-: "):
            rows = []
            for body in lines[i + 2 :]:
                if not body.startswith("|"):
                    break
                rows.append(dict(zip(cells, _cells(body), strict=True)))
            return rows
    raise SystemExit(f"bench/results/{name}: no table with the columns {', '.join(columns)}")


def _cells(line: str) -> list[str]:
    """A table line's cells, stripped; empty for a line that is not a table row."""
    line = line.strip()
    if not line.startswith("|"):
        return []
    return [c.strip() for c in line.strip("|").split("|")]


def number(cell: str) -> float:
    """The first number in a cell (``**77.7**``, ``1,088``, ``74.3 ±1.1``, ``73.9 (54%)``)."""
    found = re.search(r"-?\d[\d,]*(?:\.\d+)?", cell)
    if not found:
        raise ValueError(f"no number in table cell {cell!r}")
    return float(found.group().replace(",", ""))


def teachers_by_students() -> Path:
    """avg5 of each teacher's students on Brown: the avg5 row of ``teachers_brown.md``'s results table.

    The study names every output ``TEACHER_STUDENT``, so the row's columns give the grid.
    """
    rows = table("teachers_brown.md", "benchmark", "metric", "common")
    [avg5] = [r for r in rows if r["benchmark"] == "avg5"]
    students = ["ase", "x2static", "word", "token"]
    grid: dict[tuple[str, str], float] = {}
    for column, cell in avg5.items():
        teacher, _, student = column.rpartition("_")
        if student in students:
            grid[teacher, student] = number(cell)
    teachers = sorted(dict.fromkeys(t for t, _ in grid), key=lambda t: t.split("_")[0])  # rows by teacher
    fig, ax = plt.subplots(figsize=(7.2, 0.45 * len(teachers) + 1.4))
    image = ax.imshow(
        [[grid.get((t, s), float("nan")) for s in students] for t in teachers],
        cmap="viridis",
        vmin=10,
        vmax=80,
        aspect="auto",
    )
    for y, t in enumerate(teachers):
        for x, s in enumerate(students):
            if (t, s) not in grid:
                ax.text(x, y, "not run", ha="center", va="center", color="grey", fontsize=8)
            else:
                value = grid[t, s]
                colour = "white" if value < 60 else "black"
                ax.text(x, y, f"{value:.1f}", ha="center", va="center", color=colour)
    ax.set_xticks(range(len(students)), students)
    ax.set_yticks(range(len(teachers)), [_teacher_label(t) for t in teachers])
    ax.set_title(
        "avg5 on Brown by teacher and student (bench/results/teachers_brown.md)\n"
        "a row: the teacher and what its pass changed (int8 precision, --layer -1); all options: the file",
        fontsize=9,
    )
    fig.colorbar(image, ax=ax, label="avg5")
    return _save(fig, "teachers_students.png")


def _teacher_label(name: str) -> str:
    """A study's teacher name as a reader reads it: ``mpnet_int8`` -> ``mpnet, int8 pass``."""
    teacher, *variants = name.split("_")
    said = {"int8": "int8 pass", "last": "last layer"}
    return ", ".join([teacher, *(said.get(v, v) for v in variants)])


def _cut(ax: plt.Axes, axis: str) -> None:
    """Mark ``axis`` ("x" or "y") as cut: it does not start at zero, so small gaps look large."""
    low, high = ax.get_xlim() if axis == "x" else ax.get_ylim()
    low = math.floor(low)  # a whole start, said below
    (ax.set_xlim if axis == "x" else ax.set_ylim)(low, high)
    kw = {"transform": ax.transAxes, "color": "black", "clip_on": False, "linewidth": 1}
    for shift in (0.0, 0.025):  # two short slashes across the axis line, near its start
        if axis == "y":
            ax.plot([-0.02, 0.02], [0.03 + shift, 0.06 + shift], **kw)
        else:
            ax.plot([0.03 + shift, 0.06 + shift], [-0.02, 0.02], **kw)
    label = ax.get_ylabel() if axis == "y" else ax.get_xlabel()
    (ax.set_ylabel if axis == "y" else ax.set_xlabel)(f"{label}\n(axis cut: starts at {low:g}, not 0)")


def size_curve() -> Path:
    """avg5 on the 1M sample's items against corpus size: ``size_curve.md``'s table."""
    rows = table("size_curve.md", "size", "output", "avg5 on 1M's items")
    fig, ax = plt.subplots(figsize=(7.2, 3.6))
    for output in dict.fromkeys(r["output"] for r in rows):
        mine = [r for r in rows if r["output"] == output]
        sizes, scores = [number(r["size"]) for r in mine], [number(r["avg5 on 1M's items"]) for r in mine]
        # a table that stops early says so in the legend (bert-sg: ~0.8 kB of cache a token, run to 2M)
        whole = len(mine) == len({r["size"] for r in rows})
        label = output if whole else f"{output} (run to {mine[-1]['size']})"
        ax.plot(sizes, scores, "o-", label=label)
    ax.set_xscale("log", base=2)
    sizes = sorted({number(r["size"]) for r in rows})
    ax.set_xticks(sizes, [f"{s:g}M" for s in sizes])
    ax.set_xlabel("corpus size (tokens, nested samples of mixed prose)")
    ax.set_ylabel("avg5 on the 1M sample's items")
    ax.set_title("MiniLM students by corpus size (bench/results/size_curve.md)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))  # beside the plot: no point hidden
    _cut(ax, "y")
    return _save(fig, "size_curve.png")


def time_and_quality() -> Path:
    """Whole-recipe wall time on Brown (``race_brown.md``) against its outputs' scores.

    The scores are ``sentences_minilm_brown.md``'s, which scored the race's own outputs.
    """
    seconds = {
        r["recipe"]: number(r["total wall s"]) for r in table("race_brown.md", "recipe", "total wall s")
    }
    scores = "sentences_minilm_brown.md"
    [avg5] = [r for r in table(scores, "benchmark", "ase-int8") if r["benchmark"] == "avg5"]
    sentences = {r["model"]: r["sentences-mean"] for r in table(scores, "model", "sentences-mean")}
    # each race recipe -> its output's column in the benchmark table and its row in the sentence table
    same = {
        "tokenlearn": ("tokenlearn-minilm", "tokenlearn-minilm"),
        "ctx2static float32 + ase": ("ase-float32", "ase-float32 (none)"),
        "ctx2static int8 + ase": ("ase-int8", "ase-int8 (none)"),
    }
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.4), sharex=True)
    panels = ((axes[0], "avg5 (words)", 0), (axes[1], "sentence probes, mean accuracy", 1))
    for ax, label, which in panels:
        for recipe, wall in seconds.items():
            column, row = same[recipe]
            value = number(avg5[column] if which == 0 else sentences[row])
            ax.scatter(wall, value, s=40)
            name = recipe.replace("ctx2static ", "")
            below = "int8" in recipe  # its point sits just left of float32's: label it underneath
            ax.annotate(
                name, (wall, value), textcoords="offset points", xytext=(5, -12 if below else 4), fontsize=8
            )
        ax.set_xlabel("whole recipe on Brown, wall seconds (2 cores)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        low, high = ax.get_ylim()
        ax.set_ylim(math.floor(low) - 1, math.ceil(high) + 0.5)  # whole points: the gap reads in units
        _cut(ax, "y")
    axes[0].set_xlim(0, max(seconds.values()) * 1.35)
    fig.suptitle("Time and quality, MiniLM teacher (race_brown.md, sentences_minilm_brown.md)", fontsize=9)
    return _save(fig, "time_quality.png")


def sentences_and_words() -> Path:
    """Each output's sentence score against its word score on Brown: ``sentences_brown.md``.

    avg5 comes from the word table's avg5 row (a column per model), the sentence mean from the
    sentence table (a row per model; ours at weighting none, ``name (none)``).
    """
    [avg5] = [r for r in table("sentences_brown.md", "benchmark", "teacher") if r["benchmark"] == "avg5"]
    sentences = {
        r["model"].removesuffix(" (none)"): r for r in table("sentences_brown.md", "model", "sentences-mean")
    }
    points = {m: (number(avg5[m]), number(r["sentences-mean"])) for m, r in sentences.items() if m in avg5}
    # the outputs a reader chooses between, and where each label goes so that none covers another
    shown = {
        "ase": (6, 4),
        "sentence": (6, 4),
        "x2static": (-56, -4),
        "bert-sg": (6, -12),
        "teacher": (6, 4),
        "model2vec": (6, -12),
        "tokenlearn": (6, -12),
    }
    fig, ax = plt.subplots(figsize=(7.6, 4.4))
    for name, offset in shown.items():
        x, y = points[name]
        peer = name.startswith(("teacher", "model2vec", "tokenlearn"))
        ax.scatter(x, y, color="tab:orange" if peer else "tab:blue", s=30)
        ax.annotate(name, (x, y), textcoords="offset points", xytext=offset, fontsize=8)
    # plain skip-gram sits far below the rest on words: said at the edge, so the others have room
    xs = [points[n][0] for n in shown]
    ax.set_xlim(math.floor(min(xs)) - 2, math.ceil(max(xs)) + 2)
    x, y = points["sgns"]
    ax.set_ylim(math.floor(y) - 1, math.ceil(max(points[n][1] for n in shown)) + 1)
    ax.annotate(
        f"sgns (avg5 {x:.1f}, off the axis)",
        (ax.get_xlim()[0], y),
        xytext=(12, 0),
        textcoords="offset points",
        va="center",
        fontsize=8,
        arrowprops={"arrowstyle": "<-", "color": "tab:blue"},
    )
    ax.set_xlabel("avg5 (word similarity)")
    ax.set_ylabel("sentence probes, mean accuracy")
    ax.set_title("Brown, MiniLM: ours (blue), the teacher and peers (orange); sentences_brown.md", fontsize=9)
    ax.grid(alpha=0.3)
    _cut(ax, "x")
    _cut(ax, "y")
    return _save(fig, "sentences_words.png")


def sentences_against_peers() -> Path:
    """The README's sentence recipe beside potion-base-8M and Model2Vec's distill of its teacher, by task.

    One bar a model in each kind of task, on the report halves: ``sentences_lexical_report.md``'s
    sentence table (classification ``sets-mean``, STS ``pairs-mean``, search ``news-titles-report``).
    """
    rows = {r["model"]: r for r in table("sentences_lexical_report.md", "model", "sets-mean", "pairs-mean")}
    shown = {
        "potion-base-8M": ("potion-base-8M", "tab:orange"),
        "model2vec-minilm": ("Model2Vec distill of MiniLM", "tab:red"),
        "kd10-384": ("ours: MiniLM sentence-kd", "tab:cyan"),
        "kd10-lex384": ("ours: + lexical dimensions (the README's row)", "tab:blue"),
    }
    tasks = {
        "sets-mean": "classification\n(3 topic sets, accuracy)",
        "pairs-mean": "STS\n(4 STS 2012 sets, Spearman)",
        "news-titles-report": "search\n(news titles, nDCG@10)",
    }
    fig, ax = plt.subplots(figsize=(7.6, 4.0))
    width = 0.8 / len(shown)
    for k, (model, (label, colour)) in enumerate(shown.items()):
        values = [number(rows[model][task]) for task in tasks]
        xs = [i + (k - (len(shown) - 1) / 2) * width for i in range(len(tasks))]
        ax.bar(xs, values, width, label=label, color=colour)
        for x, v in zip(xs, values, strict=True):
            ax.annotate(
                f"{v:.1f}", (x, v), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=7
            )
    ax.set_xticks(range(len(tasks)), list(tasks.values()), fontsize=8)
    low = min(number(rows[m][t]) for m in shown for t in tasks)
    ax.set_ylim(math.floor(low / 5) * 5 - 5, 90)
    ax.set_ylabel("score (report halves)")
    ax.set_title(
        "Sentences: the recipe chosen on dev against its peers; sentences_lexical_report.md", fontsize=9
    )
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    ax.grid(alpha=0.3, axis="y")
    _cut(ax, "y")
    return _save(fig, "sentences_peers.png")


def architecture() -> Path:
    """The flow of the commands: text -> extract -> cache -> fit-student -> vectors -> eval / export."""
    boxes = {  # name: (x, y, label, colour)
        "text": (0.5, 2.0, "your text\n(.txt, JSONL, ...)", "#e8eaf6"),
        "teacher": (0.5, 0.6, "teacher\nMiniLM, MPNet, ...", "#e8eaf6"),
        "extract": (2.6, 1.3, "extract\nthe one torch step,\nonce per corpus", "#c5cae9"),
        "cache": (4.7, 1.3, "cache\nsharded signals,\nresumable", "#fff3e0"),
        "students": (6.8, 1.3, "fit-student\nase, x2static,\nsentence, ...", "#c5cae9"),
        "vectors": (8.9, 1.3, "vectors\n+ composer\n(any word)", "#fff3e0"),
        "retrofit": (8.9, 2.9, "retrofit\nWordNet,\nAttract-Repel", "#c5cae9"),
        "eval": (11.0, 2.3, "eval\nsimilarity, analogy,\nprobes", "#c5cae9"),
        "export": (11.0, 0.4, "export\ngensim, Model2Vec,\nsentence-transformers", "#c5cae9"),
    }
    arrows = [
        ("text", "extract"),
        ("teacher", "extract"),
        ("extract", "cache"),
        ("cache", "students"),
        ("students", "vectors"),
        ("vectors", "retrofit"),
        ("retrofit", "vectors"),
        ("vectors", "eval"),
        ("vectors", "export"),
    ]
    width, height = 1.8, 0.95
    fig, ax = plt.subplots(figsize=(8.5, 2.9))
    for x, y, label, colour in boxes.values():
        box = FancyBboxPatch(
            (x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0.04", fc=colour
        )
        ax.add_patch(box)
        ax.text(x, y, label, ha="center", va="center", fontsize=7.5)
    for start, end in arrows:
        (x0, y0, *_), (x1, y1, *_) = boxes[start], boxes[end]
        if x0 == x1:  # vectors <-> retrofit: edge to edge vertically, the two arrows side by side
            side = 0.3 if y1 > y0 else -0.3
            tail, head = (
                (x0 + side, y0 + height / 2 * (1 if y1 > y0 else -1)),
                (x1 + side, y1 - height / 2 * (1 if y1 > y0 else -1)),
            )
        else:  # left to right: from the right edge to the left edge
            tail, head = (x0 + width / 2, y0), (x1 - width / 2, y1)
        ax.annotate("", head, tail, arrowprops={"arrowstyle": "-|>", "shrinkA": 1, "shrinkB": 1})
    ax.text(5.75, 0.35, "students need no teacher and no torch", ha="center", fontsize=8, style="italic")
    ax.set_xlim(-0.5, 12.0)
    ax.set_ylim(-0.2, 3.5)
    ax.axis("off")
    return _save(fig, "architecture.png")


def _save(fig: plt.Figure, name: str) -> Path:
    """Write ``docs/img/name`` at a size fit to commit."""
    OUT.mkdir(exist_ok=True)
    path = OUT / name
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


FIGURES = (
    architecture,
    teachers_by_students,
    size_curve,
    time_and_quality,
    sentences_and_words,
    sentences_against_peers,
)

if __name__ == "__main__":
    for draw in FIGURES:
        print(draw().relative_to(ROOT))
