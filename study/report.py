"""The study report: ``report.md`` with its tables and two figures (``pairs.png``, ``curves.png``).

Sections: a summary (each output's word-similarity number on the common items and on its own,
avg5 or a mean named as not avg5; the best output per family; which one to use, as the README's
decision table says, with its folder and the next command), the
results table (every output on the items all outputs cover, with each output's own coverage, the
best cell of each row in bold), the same on each output's own items, deltas against the plain
baselines (common items), nearest neighbours of chosen words (Context-to-Vec's Table 5: light,
while; and bank), a PCA projection of the Google set's male/female pairs per output, training
curves (loss per epoch), timings with peak memory, cache sizes, and where the outputs are with the
disk they use. Figures use matplotlib's Agg backend (no display needed).
"""

from __future__ import annotations

import math
import os
import shlex
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

from ctx2static.eval.comparison import Comparison
from ctx2static.eval.families import FAMILIES
from ctx2static.eval.results import MIN_ITEMS, THIN_NOTE, Results, Score, format_markdown, table, usable
from ctx2static.eval.suite import notes, similarity_scores, thin_sets
from ctx2static.fileio.atomic import atomic_write
from ctx2static.study.figures import plot_curves, plot_pairs
from ctx2static.study.layout import StudyLayout, read_record
from ctx2static.study.schema import ReportSpec, Study
from ctx2static.vectors import Vectors


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]], numeric_from: int = 1) -> list[str]:
    align = ["---"] * numeric_from + ["---:"] * (len(header) - numeric_from)
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def headline(results: Results, family: str, row: str | None) -> dict[str, float]:
    """Each output's headline number of ``family``: its summary ``row``, else the mean of its scores.

    An output lacking one of the scores, or with a thin or NaN one, has none (it is left out).
    """
    out = {}
    for name, scores in results.items():
        picked = [s for s in scores if (s.benchmark == row if row else s.family == family)]
        if picked and all(usable(s) for s in picked):
            out[name] = sum(s.score for s in picked) / len(picked)
    if row is None:  # a mean compares only over the same scores in every output
        counts = {n: sum(s.family == family for s in results[n]) for n in out}
        out = {n: v for n, v in out.items() if counts[n] == max(counts.values(), default=0)}
    return out


def headline_lines(results: Comparison) -> list[str]:
    """The report's opening: each output's word-similarity number, on the common items and on its own.

    avg5 where the corpus covers enough of every set; else the named mean of the sets it does, with
    the sets left out and why, so no reader takes it for an avg5.
    """
    common, label, what = similarity_scores(results.common)
    own, own_label, own_what = similarity_scores(results.own)
    if not common and not own:
        return ["No word-similarity set has enough items covered to score (a larger corpus covers more).", ""]
    text = (
        "Word similarity, the number to compare: **avg5**, the mean Spearman correlation (x100) of the "
        "vectors' cosines with people's ratings on WS353, SimLex-999, MEN, RW and RG65."
    )
    thin = thin_sets(results.common)
    if label != "avg5" and thin:
        text += (
            f" Here avg5 cannot be computed on the items every output covers: {', '.join(thin)} "
            f"has fewer than the {MIN_ITEMS} a score needs, so the first column gives {what}."
        )
    if own_label not in ("avg5", label):
        text += f" The second column gives {own_what}."
    header = ["output", f"{label or 'n/a'}, common items", f"{own_label or 'n/a'}, its own items"]
    rows = [
        [name, common[name].cell() if name in common else "n/a", own[name].cell() if name in own else "n/a"]
        for name in results.common
    ]
    note = (
        "Each cell: the score and, in brackets, the share of the sets' items it rests on. The common "
        "items compare outputs like with like; an output's own items are all it covers (as "
        "`ctx2static eval` scores it alone)."
    )
    return [text, "", *_md_table(header, rows), "", note, ""]


def summary_lines(
    results: Results, start: Sequence[str] = (), layout: StudyLayout | None = None
) -> list[str]:
    """The best output per family on the common items, the coverage caveat, and which output to use.

    ``start``: the study's ``ase`` outputs, the README's first try for word similarity and analogy
    ("Which vectors to use"), which the use line names where the study has one, so the report and
    the README agree; ``layout``: the study's folders, for the next command.
    """
    families = _family_scores(results)
    if not families:
        return [
            "Fewer than two outputs have a usable score in any family on the common items (n/a cells: "
            "too few items covered), so no best output is named.",
            "",
        ]
    lines = []
    for family, (words, scores) in families.items():
        best, second = sorted(scores, key=scores.__getitem__, reverse=True)[:2]
        lines.append(
            f"- **{family}**: **{best}** {scores[best]:.1f} ({words}; next: {second} {scores[second]:.1f})"
        )
    every_token = [f for f in families if FAMILIES[f].coverage is None]  # no common items: each its own
    verb = "score" if len(every_token) > 1 else "scores"
    tokens = f", and {' and '.join(every_token)} {verb} each output on every token" if every_token else ""
    return [
        "Best output per family, on the items every output covers (scores x100). Those common items "
        "can be a small share of a set (the 'common' column below): a vocabulary that covers more "
        f"words is scored on fewer of its own{tokens}.",
        "",
        *lines,
        "",
        _use_line({f: scores for f, (_, scores) in families.items()}, start, layout),
        "",
    ]


def _family_scores(results: Results) -> dict[str, tuple[str, dict[str, float]]]:
    """Per family with two or more usable outputs: the words naming its number, and each output's."""
    out = {}
    for family, spec in FAMILIES.items():
        if spec.headline is None:
            continue
        words, row = spec.headline.words, spec.headline.row
        scores = headline(results, family, row)
        if row == "avg5" and not scores:
            found, _, words = similarity_scores(results)
            scores = {n: s.score for n, s in found.items()}
        if len(scores) >= 2:
            out[family] = (words, scores)
    return out


def _use_line(
    families: Mapping[str, Mapping[str, float]], start: Sequence[str], layout: StudyLayout | None
) -> str:
    """**What to use**: the study's ``ase`` (the README's first try), else the output best on most families.

    Where another output scored higher on a family, the line says by how much, so a reader sees
    what the README's advice gives up here; with ``layout``, it ends on the folder and the next
    command, which works as printed from the folder the study ran in: its output goes inside the
    study's folder, a place outputs may go (in a clone, outside ``runs/`` they are refused).
    """
    best = {f: max(scores, key=scores.__getitem__) for f, scores in families.items()}
    if start:
        sim = families.get("similarity", {})
        pick = max(start, key=lambda n: sim.get(n, -math.inf))
        higher = [
            f"{name} is {families[f][name] - families[f][pick]:.1f} higher on {f}"
            for f, name in best.items()
            if name != pick and pick in families[f]
        ]
        why = "the README's first try for word similarity and analogy"
        text = f"**What to use**: {pick}, {why}" + (f"; here {' and '.join(higher)}" if higher else "")
    else:
        wins = {n: [f for f, b in best.items() if b == n] for n in dict.fromkeys(best.values())}
        pick = max(wins, key=lambda n: len(wins[n]))  # a tie: the earlier family's
        rest = "".join(f"; for {', '.join(fams)}: {n}" for n, fams in wins.items() if n != pick)
        text = f"**What to use**: {pick} (best on {len(wins[pick])} of {len(best)} families: "
        text += f"{', '.join(wins[pick])}){rest}"
    if layout is not None:
        source, out = (shlex.quote(str(p)) for p in (layout.vectors(pick), layout.export(pick)))
        text += f". Its vectors: `{source}`; next: `ctx2static export {source} --format model2vec -o {out}`"
    return text + "."


def best_markdown(results: Results, notes: Sequence[str], own: Results) -> str:
    """:func:`format_markdown` of the common items with the best cell of each row in bold.

    Best is the highest score shown (ties all bold); rows with fewer than two usable scores have none.
    """
    header, rows = table(results, own)
    scores = {name: {(s.benchmark, s.metric): s for s in found} for name, found in results.items()}
    first = len(header) - len(results)
    for row in rows:
        shown = {
            i: round(s.score, 1)
            for i, name in enumerate(results, first)
            if usable(s := scores[name].get((row[0], row[1])))
        }
        if len(shown) >= 2:
            top = max(shown.values())
            row[:] = [f"**{c}**" if shown.get(i) == top else c for i, c in enumerate(row)]
    thin = any(s.thin for found in results.values() for s in found)
    notes = [*notes, *([THIN_NOTE] if thin else []), "bold: the best score of the row"]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * 2 + "---:|" * (len(header) - 2)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join([*out, "", *(f"- {n}" for n in notes)]) + "\n"


def delta_table(study: Study, results: Mapping[str, Sequence[Score]]) -> tuple[list[str], list[list[str]]]:
    """Each output minus its baseline (``Study.baseline``) on every benchmark, avg5 first.

    A pair with a thin or NaN score is n/a: a difference on too few items means nothing.
    """
    pairs = [(n, b) for n in study.outputs if (b := study.baseline(n)) is not None and b in results]
    _, rows = table(results)
    keys = [(r[0], r[1]) for r in rows]
    keys.sort(key=lambda k: k[0] != "avg5")
    scores = {n: {(s.benchmark, s.metric): s for s in results[n]} for n in results}
    out = []
    for key in keys:
        cells = []
        for n, b in pairs:
            a, c = scores[n].get(key), scores[b].get(key)
            if a is None or c is None:
                cells.append("-")
            elif not (usable(a) and usable(c)):
                cells.append("n/a")
            else:
                cells.append(f"{a.score - c.score:+.1f}")
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


def timing_lines(study: Study, layout: StudyLayout, vectors: Mapping[str, Vectors]) -> list[str]:
    """Seconds and peak memory of every step (as last run) and the training throughput."""
    rows, total = [], 0.0

    def row(step: str, rec: Mapping[str, object], train: object = None, rate: str = "") -> None:
        nonlocal total
        seconds = float(rec.get("seconds", 0.0))  # type: ignore[arg-type]
        total += seconds
        peak = rec.get("peak_rss_mb")
        trained = "" if train is None else f"{float(train):,.1f}"  # type: ignore[arg-type]
        rows.append([step, f"{seconds:,.1f}", "" if peak is None else f"{peak:,}", trained, rate])

    for name in study.teachers:
        rec = read_record(layout.cache_record(name))
        if "seconds" in rec:
            row(f"extract {name}", rec, rate=f"{rec['teacher_tokens_per_s']:,} teacher")
    students = {s.name for s in study.students}
    references = {r.name for r in study.references}
    combined = {c.name for c in study.combines}
    for name, v in vectors.items():
        rec = v.meta.get("study", {})
        if name in students:
            row(
                f"student {name}",
                rec,
                v.meta.get("train_seconds", 0),
                f"{v.meta.get('tokens_per_second', 0):,} corpus",
            )
        elif name in references:  # training seconds: as its file records them, if it does
            row(f"reference {name}", rec, v.meta.get("train_seconds"))
        elif name in combined:
            row(f"combine {name}", rec)
        else:
            row(f"retrofit {name}", rec)
    for name in vectors:
        row(f"eval {name}", read_record(layout.scores(name)))
        row(f"eval {name} (common items)", read_record(layout.scores(name, common=True)))
    rows.append(["**total**", f"**{total:,.1f}**", "", "", ""])
    header = ["step", "seconds", "peak RSS (MiB)", "training seconds", "tokens/s (x epochs)"]
    return [
        *_md_table(header, rows),
        "",
        "Seconds and peak resident memory of the process during the step, as last run (a skipped step "
        "keeps what it measured when it ran; memory kept from earlier steps counts); a student's seconds "
        "include reading the corpus or cache, its training seconds only the fit.",
    ]


def cache_lines(study: Study, layout: StudyLayout) -> list[str]:
    """Bytes per signal and per corpus token of every teacher cache (shards, and what is stored once)."""
    from ctx2static.cache import Cache
    from ctx2static.cache.info import once_bytes, signal_bytes

    lines: list[str] = []
    for name in study.teachers:
        folder = layout.cache(name)
        if not folder.is_dir():
            continue
        cache = Cache.open(folder)
        n_words = int(cache.manifest.get("totals", {}).get("n_words", 0))
        n_sent = int(cache.manifest.get("totals", {}).get("n_sentences", 0))
        rows = [
            [key, _what_is(key), part, f"{size:,}", f"{size / max(n_words, 1):,.1f}"]
            for part, sizes in [("shards", signal_bytes(cache)), ("once per cache", once_bytes(cache))]
            for key, size in sizes.items()
        ]
        disk = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
        rows.append(["**all files**", "", "", f"**{disk:,}**", f"**{disk / max(n_words, 1):,.1f}**"])
        lines += [
            f"**{name}** ({study.teachers[name].model}): {n_sent:,} sentences, {n_words:,} corpus tokens, "
            f"{cache.n_shards} shards",
            "",
            *_md_table(["signal", "what it is", "stored", "bytes", "bytes/token"], rows, 3),
            "",
        ]
    return lines or ["No teacher cache in this study."]


CACHE_FILES = {
    "manifest.json": "the cache's contents, options, shards and their checksums",
    "vocab.tsv": "the static vocabulary: word and corpus count",
    "teacher_tokenizer.json": "the teacher's tokenizer, for the composer",
    "teacher_tokens.parquet": "the teacher's subword pieces of each word",
}
"""What a cache's files that are not signals hold (``docs/design/cache-format.md``)."""


def _what_is(key: str) -> str:
    """A cache signal's or file's description, as ``cache info`` and the cache format page give it."""
    from ctx2static.cache.layout import SIGNALS

    return SIGNALS[key].description if key in SIGNALS else CACHE_FILES.get(key, "")


def start_outputs(study: Study) -> list[str]:
    """The study's ``ase`` outputs: the README's first try, which the use line names."""
    return [s.name for s in study.students if s.student == "ase"]


def _bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (links not followed, so nothing counts twice)."""
    return sum(os.lstat(os.path.join(top, f)).st_size for top, _, files in os.walk(folder) for f in files)


def where_lines(layout: StudyLayout) -> list[str]:
    """Where the vectors are and the disk the study uses, the teacher caches apart (they may go)."""
    total, caches = _bytes(layout.root), _bytes(layout.caches)
    return [
        f"- vectors: `{layout.vectors_dir}/`, a folder per output, which `ctx2static neighbours`, `eval` "
        "and `export` read",
        f"- disk: {total / 1e6:,.0f} MB in `{layout.root}/`, {caches / 1e6:,.0f} MB of it the teacher "
        f"caches (`{layout.caches}/`): needed only to fit more students from them or to rerun with "
        "changes; delete them to free the space",
    ]


def write_report(study: Study, layout: StudyLayout, results: Comparison) -> None:
    """Write ``report.md`` and its figures from the study's outputs and their scores."""
    vectors = {name: Vectors.load(layout.vectors(name), mmap=True) for name in study.outputs}
    lines = [
        *_header_lines(study),
        "## Summary",
        "",
        *headline_lines(results),
        *summary_lines(results.common, start_outputs(study), layout),
        *_result_lines(study, results),
        *_baseline_lines(study, results),
        "## Nearest neighbours",
        "",
        *neighbour_lines(study.report, vectors),
        *_figure_lines(study, layout, vectors),
        "## Timings",
        "",
        *timing_lines(study, layout, vectors),
        "",
        "## Cache sizes",
        "",
        *cache_lines(study, layout),
        "",
        "## Where the outputs are",
        "",
        *where_lines(layout),
        "",
    ]
    lines += term_lines(study, lines)
    with atomic_write(layout.report, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines).rstrip() + "\n")


def term_lines(study: Study, report: Sequence[str]) -> list[str]:
    """The report's words defined: its outputs, and each set and term its tables and curves show."""
    from ctx2static.eval.terms import GLOSSARY, defined
    from ctx2static.students.registry import spec

    outputs = [
        f"- **{s.name}**: {'' if s.name == s.student else s.student + ', '}{spec(s.student).summary}"
        + (f", from teacher {s.teacher}'s cache" if s.teacher else ", from the corpus text")
        for s in study.students
    ]
    outputs += [
        f"- **{r.name}**: vectors made elsewhere ({r.vectors}), evaluated here, not trained"
        for r in study.references
    ]
    outputs += [
        f"- **{r.name}**: {r.vectors} retrofitted ({r.config.method.value}) to {', '.join(r.lexicons)}"
        + (f", antonyms {', '.join(r.antonyms)}" if r.antonyms else "")
        for r in study.retrofits
    ]
    outputs += [
        f"- **{c.name}**: {' and '.join(c.inputs)} joined ({c.config.method.value})" for c in study.combines
    ]
    curves = [label for s in study.students if (label := spec(s.student).loss_label)]  # curves.png's axes
    terms = [f"- **{name}**: {line}" for name, line in defined([*report, *curves])]
    return [
        "## Terms",
        "",
        f"The outputs, and the sets and terms the tables and figures above show; the rest are in {GLOSSARY}.",
        "",
        *outputs,
        *terms,
    ]


def _header_lines(study: Study) -> list[str]:
    """The title and what the study ran on: corpus, teachers and their options, references."""
    corpus = ", ".join(p.name for p in study.corpus.files)
    teachers = "; ".join(
        f"{t.name} = {t.model} ({_changed({**t.teacher.changed(), **t.extract.changed()})})"
        for t in study.teachers.values()
    )
    references = "".join(f" Reference (not trained): {r.name} = {r.vectors}." for r in study.references)
    return [
        f"# Study report: {study.path.name}",
        "",
        f"Written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Corpus: {corpus}. "
        f"Teachers: {teachers or 'none'}.{references} "
        "Outputs are in vectors/, scores in eval/, the study in study.toml.",
        "",
    ]


def _result_lines(study: Study, results: Comparison) -> list[str]:
    """The main table (every output on the common items), then each output on its own items."""
    analogy, families = study.eval.analogy_config, study.eval.families
    return [
        "## Results",
        "",
        "Every output scored on the items that all outputs cover (so the columns compare like with "
        "like); 'common' is that share of each benchmark, each cell's percentage the output's own "
        "coverage.",
        "",
        best_markdown(results.common, notes(analogy, common=True, families=families), results.own),
        "### Each output on the items it covers",
        "",
        "The same outputs, each on every item its vocabulary covers (as `ctx2static eval` scores one "
        "file alone); scores on different items do not compare across columns.",
        "",
        format_markdown(results.own, notes(analogy, families=families)),
    ]


def _baseline_lines(study: Study, results: Comparison) -> list[str]:
    """Each output's scores minus its plain baseline's, on the common items."""
    lines = ["## Against the plain baselines", ""]
    header, rows = delta_table(study, results.common)
    if len(header) <= 2:
        return [*lines, "No output has a plain baseline in this study.", ""]
    return [
        *lines,
        "Score of each output minus its baseline, in points x100, on the items all outputs cover. "
        "Each output is set against what it changes or what it would replace:",
        "",
        *_baseline_reasons(study),
        "",
        *_md_table(header, rows, 2),
        "",
    ]


BASELINE_WHY = {
    "sgns": "skip-gram, word2vec's default: the plain table a distilled one would replace, and the "
    "plain form of a student that predicts a word's context words (bert-sg, ctx2vec)",
    "cbow": "CBOW, the plain recipe that fits a word to the mean of its context, as x2static fits it "
    "to the teacher's sentence mean and the sentence students fit rows whose mean is the teacher's",
    "glove": "GloVe, whose co-occurrence cost SemGloVe keeps, with the teacher's counts for the window's",
}
"""Why a distilled student is set against its plain baseline (``StudentSpec.baseline``)."""


def _baseline_reasons(study: Study) -> list[str]:
    """One line per baseline of the deltas: the outputs set against it and why."""
    against: dict[str, list[str]] = {}
    for name in study.outputs:
        if (b := study.baseline(name)) is not None:
            against.setdefault(b, []).append(name)
    kinds = {s.name: s.student for s in study.students}
    retrofits = {r.name for r in study.retrofits}
    combines = {c.name for c in study.combines}
    lines = []
    for base, names in against.items():
        made = [n for n in names if n not in retrofits | combines]
        if made:
            why = BASELINE_WHY.get(kinds.get(base, ""), "the baseline the study names")
            lines.append(f"- {', '.join(made)} against {base}: {why}")
        if changed := [n for n in names if n in retrofits]:
            lines.append(f"- {', '.join(changed)} against {base}: its input, so the delta is the retrofit's")
        if joined := [n for n in names if n in combines]:
            lines.append(
                f"- {', '.join(joined)} against {base}: its first input, the delta the combination's"
            )
    return lines


def _figure_lines(study: Study, layout: StudyLayout, vectors: Mapping[str, Vectors]) -> list[str]:
    """The male/female pairs and the training curves, each drawn when there is something to draw."""
    spec = study.report
    lines = [f"## Male/female pairs (Google '{spec.pairs}' section)", ""]
    pairs = plot_pairs(spec, vectors, layout.pairs_png)
    if pairs:
        listed = ", ".join(f"{a}/{b}" for a, b in pairs)
        lines += [
            f"![male/female pairs]({layout.pairs_png.name})",
            "",
            f"Pairs known to every output: {listed}.",
            "",
        ]
    else:
        lines += ["Fewer than two pairs are known to every output; no figure.", ""]
    lines += ["## Training curves", ""]
    if plot_curves(study, vectors, layout.curves_png):
        return [*lines, f"![training curves]({layout.curves_png.name})", ""]
    return [*lines, "No student recorded a loss over two or more epochs; no curve to draw.", ""]


def _changed(changed: Mapping[str, object]) -> str:
    """``k=v, ...`` of the options that differ from their defaults."""
    return ", ".join(f"{k}={v}" for k, v in changed.items()) or "defaults"
