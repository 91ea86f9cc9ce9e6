"""The embed table's template per teacher, chosen on development halves of the similarity pairs.

    python bench/probes/embed_table.py --teachers embeddinggemma mpnet minilm nomic \\
        --out bench/results/embed_table.md

The ``embed`` table (``--embed-template``) keeps a teacher's own sentence embedding of each word in
a template: the last layer's mean over every token through the head its folder names (pooling,
dense layers, normalisation: ``pipeline/head.py``), as sentence-transformers' ``encode`` does. This
builds it with the product's code (``template_inputs``, ``Teacher.forward_wanted``, ``Teacher.head``;
float32 teacher) for every word of the avg5 sets, in each template of the teacher's row below, and
scores it on ``prompted_words.py``'s halves (seed 41: the split every words_*_split page uses). The
template with the best dev avg5 is the teacher's choice; its report half is the headline. Every
word is covered (no corpus is read), so these are all pairs of each half, not a corpus's common
items. A closing section headed "## What it means" in an existing ``--out`` is kept.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import numpy as np
from prompted_words import avg5_halves, fmt, scores

from ctx2static.eval.suite import AVG5
from ctx2static.pipeline.batching import host_batch, sorted_batches
from ctx2static.pipeline.feed import template_inputs
from ctx2static.pipeline.teacher import Request, Teacher, torch_threads

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))
from machine import argv_line, write_keeping_reading

EG = "task: {} | query: {{w}}"
TEMPLATES = {
    "embeddinggemma": (
        "{w}",
        EG.format("sentence similarity"),
        EG.format("classification"),
        EG.format("clustering"),
        EG.format("search result"),
        "title: none | text: {w}",
    ),
    "nomic": ("{w}", "search_query: {w}", "classification: {w}", "clustering: {w}", "meaning: {w}"),
}
"""Per teacher: the word alone and the task prompts its folder or model card names; others: below."""
PLAIN = ("{w}", "meaning: {w}")
"""Teachers without prompts: the word alone, and the word table's own default carrier."""


def embed(teacher: Teacher, words: list[str], template: str, budget: int) -> np.ndarray:
    """The embed table of ``words`` in ``template``, as ``vocab_tables`` builds it."""
    encs = template_inputs(teacher.encoder, words, template, teacher.max_length)
    last = Request(layers=(teacher.n_hidden - 1,))
    out = np.zeros((len(words), 0), np.float32)
    for rows in sorted_batches([len(e.ids) for e in encs], budget):
        batch = host_batch([encs[i] for i in rows], rows, int(teacher.tokenizer.pad_token_id))
        pooled = teacher.head(teacher.forward_wanted(batch, last)[0])
        if out.shape[1] == 0:
            out = np.zeros((len(words), pooled.shape[1]), np.float32)
        out[batch.rows] = pooled
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teachers", nargs="+", default=["embeddinggemma", "mpnet", "minilm", "nomic"])
    ap.add_argument("--seed", type=int, default=41, help="the dev/report split of each set's pairs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--token-budget", type=int, default=2048, help="padded teacher tokens per batch")
    ap.add_argument("--out", type=Path, default=Path("bench/results/embed_table.md"))
    args = ap.parse_args()
    _, halves, words = avg5_halves(args.seed)
    rows, chosen = [], []
    with torch_threads(args.threads):
        for name in args.teachers:
            teacher = Teacher.load(name)
            results = {}
            for template in TEMPLATES.get(name, PLAIN):
                t0 = time.perf_counter()
                results[template] = scores(words, embed(teacher, words, template, args.token_budget), halves)
                took = time.perf_counter() - t0
                print(
                    f"  {name} {template!r}: dev {results[template]['dev'][-1]:.1f} ({took:.0f} s)",
                    flush=True,
                )
            best = max(results, key=lambda t: results[t]["dev"][-1])
            chosen.append(f"| {name} | `{best}` | {fmt(results[best]['report'])} |")
            for template, res in sorted(results.items(), key=lambda kv: -kv[1]["dev"][-1]):
                rows.append(
                    f"| {name} | `{template}` | {res['dev'][-1]:.1f} | {res['report'][-1]:.1f} | "
                    f"{fmt(res['report'][:-1])} |"
                )
    head = " | ".join(AVG5)
    sizes = ", ".join(
        f"{d.name} {len(d.pairs)}/{len(r.pairs)}"
        for d, r in zip(halves["dev"], halves["report"], strict=True)
    )
    text = "\n".join([
        "# The embed table's template: the teacher's own embedding of each word, per prompt",
        "",
        f"Date: {datetime.date.today()}. Command (repository root): `python {argv_line(sys.argv)}`",
        "",
        f"{len(words)} words (every word of the avg5 sets); Spearman x100; halves by seed {args.seed} "
        f"(dev/report pairs: {sizes}). The template is chosen per teacher on dev avg5; the report half "
        "is the headline.",
        "",
        "## Chosen per teacher (report half)",
        "",
        f"| teacher | template | {head} | avg5 |",
        "|---|---|" + "---|" * (len(AVG5) + 1),
        *chosen,
        "",
        "## Every template (sorted by dev avg5)",
        "",
        f"| teacher | template | dev avg5 | report avg5 | report: {head} |",
        "|---|---|---|---|" + "---|" * len(AVG5),
        *rows,
        "",
    ])  # fmt: skip
    write_keeping_reading(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
