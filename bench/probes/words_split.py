"""Word similarity on development and report halves, for vectors and their combinations (issue 41).

    python bench/probes/words_split.py runs/words_brown/vectors/*_ase runs/words_brown/vectors/*_word \\
        --prompted 'nomic=meaning: {w}' --max-combine 3 --recipe mpnet_ase+nomic_ase \\
        --out bench/results/words_brown_split.md

Each input is a vectors file or folder (a study's outputs), named by its folder; ``--prompted
TEACHER=TEMPLATE`` adds the teacher's word-alone vectors, named ``TEACHER_prompted`` (every token's
state at the last layer, averaged: ``bench/results/prompted_words.md``'s best reading for nomic),
for the benchmark words.
Every subset of up to ``--max-combine`` inputs is scored two ways: the unit vectors concatenated
(with ``--weights W ...``, also each input after the first scaled by every W, as ``combine
--weights`` does), and, when all have one size, their mean after each is rotated onto the first by
the orthogonal map fitted on the shared words (Procrustes; Schönemann 1966). ``--pca D ...`` adds,
for the recipes and the ``--pca-top`` best combinations on dev, the concatenation projected on its
first D principal axes; the axes are fitted on ``--pca-fit`` words drawn from the inputs' shared
vocabulary that no benchmark holds (so no benchmark word shapes the projection), centred on their mean.

The five avg5 sets are split in halves with ``prompted_words.py``'s seed and rule, and only the
pairs whose words every corpus input holds are scored (the common items), so every row reads the
same pairs. The best row on the development half is the choice; the report half is the headline.
A closing section headed "## What it means" in an existing ``--out``
(the reading written by hand after a run) is kept below the new tables.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import sys
import time
from pathlib import Path

import numpy as np
from prompted_words import scores, split_halves, unit

from ctx2static.eval import load_benchmarks
from ctx2static.eval.analogy import AnalogyConfig, AnalogySet, analogy_coverage, evaluate_analogy
from ctx2static.eval.benchmarks import Family, SimilaritySet
from ctx2static.eval.suite import AVG5
from ctx2static.pipeline.batching import run_sorted
from ctx2static.pipeline.feed import template_inputs
from ctx2static.pipeline.teacher import Request, Teacher, torch_threads
from ctx2static.vectors import Vectors

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import argv_line, write_keeping_reading


def prompted(name: str, template: str, words: list[str], threads: int) -> np.ndarray:
    """Unit word-alone vectors of ``words`` in ``template``: mean of every token's last-layer state."""
    with torch_threads(threads):
        teacher = Teacher.load(name)
        encs = template_inputs(teacher.encoder, words, template, teacher.max_length)
        outs = run_sorted(encs, 2048, lambda b: teacher.forward(b, Request(hidden_states=True)))
    return unit(np.stack([o.hidden_mean[-1] for o in outs])).astype(np.float32)


def procrustes_mean(mats: list[np.ndarray]) -> np.ndarray:
    """Mean of unit rows after rotating each onto the first by its orthogonal Procrustes map."""
    base = mats[0]
    out = base.copy()
    for m in mats[1:]:
        u, _, vt = np.linalg.svd(m.T @ base)
        out += unit(m @ (u @ vt))
    return unit(out)


def pca_map(fit: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and first ``dims`` principal axes ([d, dims]) of the rows of ``fit``."""
    mean = fit.mean(0)
    _, _, vt = np.linalg.svd(fit - mean, full_matrices=False)
    return mean, vt[:dims].T


def covered(halves: dict[str, list[SimilaritySet]], vocab: set[str]) -> dict[str, list[SimilaritySet]]:
    """Each half's pairs whose two words are in ``vocab``."""
    out = {}
    for half, sets in halves.items():
        out[half] = []
        for b in sets:
            keep = np.array([a in vocab and c in vocab for a, c in b.pairs], dtype=bool)
            out[half].append(
                SimilaritySet(b.name, [p for p, k in zip(b.pairs, keep, strict=True) if k], b.gold[keep])
            )
    return out


def analogy_halves(
    tables: dict[str, Vectors], subsets: list[tuple[str, ...]], seed: int
) -> tuple[list[str], list[tuple[str, dict[str, list[float]]]]]:
    """3CosAdd accuracy on dev / report halves of each bundled analogy set's questions, per subset.

    The vocabulary is the words every input holds, in the first input's (frequency) order, so
    ``top_n`` reads the same words for each; a subset of several inputs is their unit rows
    concatenated. Only the questions every single input covers are scored, so each row reads the
    same questions; the halves are a seeded draw per set.
    """
    sets = [b for b in load_benchmarks((Family.ANALOGY,), {}, bundled=True) if isinstance(b, AnalogySet)]
    first = next(iter(tables.values()))
    shared = set.intersection(*(set(v.words) for v in tables.values()))
    vocab = [w for w in first.words if w in shared]
    units = {name: unit(v.query(vocab)).astype(np.float32) for name, v in tables.items()}
    cfg = AnalogyConfig()
    rng = np.random.default_rng(seed)
    halves = []
    for b in sets:
        dev = np.zeros(len(b.questions), dtype=bool)
        dev[rng.permutation(len(b.questions))[: len(b.questions) // 2]] = True
        common = np.logical_and.reduce([analogy_coverage(Vectors(vocab, m), b, cfg) for m in units.values()])
        halves.append((b, common & dev, common & ~dev))
    out = []
    for subset in subsets:
        v = Vectors(vocab, np.hstack([units[n] for n in subset]))
        res: dict[str, list[float]] = {"dev": [], "report": []}
        for b, dev, report in halves:
            for half, mask in (("dev", dev), ("report", report)):
                [add] = [x for x in evaluate_analogy(v, b, cfg, only=mask) if x.benchmark == b.name][:1]
                res[half].append(add.score)
        for half in res:
            res[half].append(float(np.mean(res[half])))
        out.append((" + ".join(subset), res))
    names = [f"{b.name} ({int(r.sum())})" for b, _, r in halves]
    return names, out


Scored = list[tuple[str, dict[str, list[float]]]]


def combined(
    subset: tuple[str, ...],
    inputs: dict[str, np.ndarray],
    words: list[str],
    halves: dict[str, list[SimilaritySet]],
    grid: list[float],
) -> Scored:
    """Scores of one input alone, or of a subset concatenated (also weighted by ``grid``) and rotated-mean."""
    mats = [inputs[n] for n in subset]
    if len(mats) == 1:
        return [(subset[0], scores(words, mats[0], halves))]
    out = [(" + ".join(subset) + " (concat)", scores(words, np.hstack(mats), halves))]
    for weights in itertools.product([1.0], *[grid] * (len(mats) - 1)):
        if len(set(weights)) > 1:  # combine --weights: each unit table scaled before the concat
            name = " + ".join(subset) + f" (concat, weights {':'.join(f'{w:g}' for w in weights)})"
            weighted = np.hstack([w * m for w, m in zip(weights, mats, strict=True)])
            out.append((name, scores(words, weighted, halves)))
    if len({m.shape[1] for m in mats}) == 1:
        out.append((" + ".join(subset) + " (rotated mean)", scores(words, procrustes_mean(mats), halves)))
    return out


def row(name: str, res: dict[str, list[float]]) -> str:
    report = " | ".join(f"{x:.1f}" for x in res["report"][:-1])
    return f"| {name} | {res['dev'][-1]:.1f} | {report} | **{res['report'][-1]:.1f}** |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("vectors", nargs="+", type=Path, help="vectors files or folders (a study's students)")
    ap.add_argument(
        "--prompted",
        nargs="*",
        default=[],
        help="TEACHER=TEMPLATE: word-alone vectors, named TEACHER_prompted",
    )
    ap.add_argument("--max-combine", type=int, default=3)
    ap.add_argument(
        "--recipe",
        nargs="*",
        default=[],
        help="NAME+NAME+...: a combination shown whatever its rank (any size)",
    )
    ap.add_argument("--pca", type=int, nargs="*", default=[], help="dimensions of the concatenation's PCA")
    ap.add_argument("--pca-fit", type=int, default=5000, help="non-benchmark words the PCA is fitted on")
    ap.add_argument("--pca-top", type=int, default=10, help="best combinations on dev also read with PCA")
    ap.add_argument(
        "--weights",
        type=float,
        nargs="*",
        default=[],
        help="weights tried for each input after the first (fixed at 1) in a concat: combine --weights",
    )
    ap.add_argument("--seed", type=int, default=41, help="the split of prompted_words.py")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--top", type=int, default=40, help="rows of the full table (best on dev first)")
    ap.add_argument("--analogy", action="store_true", help="also 3CosAdd on halves of the analogy questions")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    t0 = time.perf_counter()
    loaded = load_benchmarks((Family.SIMILARITY,), {}, bundled=True)
    by_name = {b.name: b for b in loaded if isinstance(b, SimilaritySet)}
    benchmarks = [by_name[n] for n in AVG5]
    bench_words = sorted({w.lower() for b in benchmarks for pair in b.pairs for w in pair})

    tables = {p.name: Vectors.load(p) for p in args.vectors}
    common = set(bench_words).intersection(*(set(v.words) for v in tables.values()))
    words = sorted(common)
    shared = sorted(set.intersection(*(set(v.words) for v in tables.values())) - set(bench_words))
    if args.pca and not shared:
        sys.exit("error: --pca: the inputs share no word outside the benchmarks to fit the axes on")
    rng = np.random.default_rng(args.seed)
    fit_words = sorted(rng.choice(shared, min(args.pca_fit, len(shared)), replace=False)) if args.pca else []
    inputs = {name: unit(v.query(words)) for name, v in tables.items()}
    fit_inputs = {name: unit(v.query(fit_words)) for name, v in tables.items()} if fit_words else {}
    for spec in args.prompted:
        teacher, template = spec.split("=", 1)
        inputs[f"{teacher}_prompted"] = prompted(teacher, template, words, args.threads)
        if fit_words:
            fit_inputs[f"{teacher}_prompted"] = prompted(teacher, template, fit_words, args.threads)
    halves = covered(split_halves(benchmarks, args.seed), common)

    def projected(subset: tuple[str, ...]) -> list[tuple[str, dict[str, list[float]]]]:
        cat, fit = np.hstack([inputs[n] for n in subset]), np.hstack([fit_inputs[n] for n in subset])
        out = []
        for d in (d for d in args.pca if d < cat.shape[1]):
            mean, axes = pca_map(fit, d)
            name = " + ".join(subset) + f" (concat, PCA {d})"
            out.append((name, scores(words, (cat - mean) @ axes, halves)))
        return out

    names = list(inputs)
    rows = [
        scored
        for k in range(1, min(args.max_combine, len(names)) + 1)
        for subset in itertools.combinations(names, k)
        for scored in combined(subset, inputs, words, halves, args.weights)
    ]
    rows.sort(key=lambda r: -r[1]["dev"][-1])
    recipes = [
        row
        for recipe in args.recipe
        for row in combined(tuple(recipe.split("+")), inputs, words, halves, args.weights)
    ]
    if args.pca:
        best_subsets = list(dict.fromkeys(tuple(n.split(" (")[0].split(" + ")) for n, _ in rows))
        recipe_subsets = [tuple(r.split("+")) for r in args.recipe]
        recipes += [row for subset in recipe_subsets for row in projected(subset)]
        best_multi = [subset for subset in best_subsets if len(subset) > 1][: args.pca_top]
        rows += [row for subset in best_multi for row in projected(subset)]
        rows.sort(key=lambda r: -r[1]["dev"][-1])

    total = {b.name: len(b.pairs) for b in benchmarks}
    kept = {
        b.name: len(d.pairs) + len(r.pairs)
        for b, d, r in zip(benchmarks, halves["dev"], halves["report"], strict=True)
    }
    head = " | ".join(AVG5)
    best_name, best = rows[0]
    singles = [r for r in rows if r[0] in names]
    lines = [
        "# Word similarity on dev / report halves, single vectors and combinations",
        "",
        f"Date: {datetime.date.today()}. Command (repository root): `python {argv_line(sys.argv)}` "
        f"({(time.perf_counter() - t0) / 60:.1f} min).",
        "",
        f"Halves: `bench/probes/prompted_words.py`'s split (seed {args.seed}); only the pairs whose words "
        "every corpus input holds are scored (common items: "
        + ", ".join(f"{n} {kept[n]}/{total[n]}" for n in AVG5)
        + "). Chosen on the dev half's avg5; the report half is the headline. Spearman x100.",
        *(
            [
                "",
                f"PCA rows: axes fitted on {len(fit_words):,} words of the inputs' shared vocabulary that no "
                f"benchmark holds (drawn with seed {args.seed}), centred; every other row is unprojected.",
            ]
            if fit_words
            else []
        ),
        "",
        f"**Best on dev: {best_name}**: report avg5 {best['report'][-1]:.1f}, SimLex {best['report'][1]:.1f} "
        f"(dev {best['dev'][-1]:.1f}).",
        "",
        "## Single inputs",
        "",
        f"| vectors | dev avg5 | report: {head} | report avg5 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [row(n, r) for n, r in singles]
    if recipes:
        lines += [
            "",
            "## Recipes (asked for by name, whatever their rank)",
            "",
            f"| vectors | dev avg5 | report: {head} | report avg5 |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        lines += [row(n, r) for n, r in recipes]
    lines += [
        "",
        f"## Every combination, best {args.top} on dev",
        "",
        f"| vectors | dev avg5 | report: {head} | report avg5 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [row(n, r) for n, r in rows[: args.top]]
    if args.analogy:
        subsets = [(n,) for n in tables] + [tuple(r.split("+")) for r in args.recipe]
        sets, scored = analogy_halves(tables, [s for s in subsets if all(n in tables for n in s)], args.seed)
        lines += [
            "",
            "## Analogy: 3CosAdd accuracy on dev / report halves of the questions",
            "",
            "Each bundled set's questions halved by a seeded draw; only those every input covers (all four "
            "words among the 30,000 most frequent shared words) are scored; the report count is in the head.",
            "",
            f"| vectors | dev mean | report: {' | '.join(sets)} | report mean |",
            "|---|---:|" + "---:|" * (len(sets) + 1),
        ]
        lines += [row(n, r) for n, r in scored]
    write_keeping_reading(args.out, "\n".join(lines))
    print("\n".join(lines[: 30 + len(singles) + len(recipes)]))


if __name__ == "__main__":
    main()
