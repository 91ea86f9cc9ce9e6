"""How good are composed vectors for words outside the table? Two measurements per vectors file.

    python bench/probes/oov_composition.py --cache CACHE VECTORS... [--seeds 0 1 2 3 4] [--holdout 0.1]

1. Coverage: each similarity set scored on the in-vocabulary pairs only (the protocol), and on all
   pairs with the missing words as zero vectors (cosine 0: what a word-level export's ``[UNK]``
   row gives) or composed (the composer fitted on the whole table, as ``fit-student`` stores it;
   the same numbers as ``cli.py eval --compose``).
2. Held-out words: a random ``--holdout`` share of the table's words (one split per seed) is
   removed, the composer is fitted on the rest, and the held-out words are composed. Scored: the
   cosine of each composed vector with the word's true (trained) vector, whether the true word is
   the composed vector's nearest neighbour among the whole table (top-1 / top-10), and per
   similarity set the Spearman of the pairs that involve a held-out word, with true against
   composed vectors (sets with 5 or more such pairs in a split; the mean over the splits).

``--variant`` adds other ways to compose for comparison (see VARIANTS); the product's is ``ridge``.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from ctx2static.cache import Cache
from ctx2static.cache.compose import fit_composer
from ctx2static.composer import Composer, build_composer
from ctx2static.eval import load_benchmarks
from ctx2static.eval.benchmarks import Family
from ctx2static.eval.similarity import evaluate_similarity, spearman
from ctx2static.vectors import Vectors


def unit(m: np.ndarray) -> np.ndarray:
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)


def coverage_rows(v: Vectors, benches) -> list[str]:
    full = v.with_composed([w for b in benches for p in b.pairs for w in p])
    zero = Vectors(full.words, np.concatenate([v.matrix, np.zeros((len(full) - len(v), v.dim))]))
    rows = []
    for b in benches:
        a, z, c = (evaluate_similarity(x, b) for x in (v, zero, full))
        rows.append(f"| {b.name} | {a.score:.1f} ({a.covered}/{a.total}) | {z.score:.1f} | {c.score:.1f} |")
    return rows


def hybrid_rows(composer: Composer, words: list[str], matrix: np.ndarray) -> tuple[Composer, np.ndarray]:
    """WordPiece over teacher pieces + table words (a piece that is a table word takes the word's row)."""
    tok = json.loads(composer.tokenizer_json)
    vocab = dict(tok["model"]["vocab"])
    n = len(composer.rows)
    extra = []
    table = composer.rows.copy()
    for w, vec in zip(words, matrix, strict=True):
        if w in vocab:
            table[vocab[w]] = vec
        else:
            vocab[w] = n + len(extra)
            extra.append(vec)
    tok["model"]["vocab"] = vocab
    rows = np.concatenate([table, np.asarray(extra, dtype=np.float32).reshape(-1, table.shape[1])])
    return Composer(rows, json.dumps(tok), composer.lowercase, composer.info), rows


def heldout_once(
    v: Vectors, cache: Cache, arrays: dict, benches, seed: int, share: float, variant: str
) -> dict:
    """One split: composed vs true vectors of the held-out words, and per set the pairs' cosines."""
    crow = np.array([cache.vocab.index.get(w, -1) for w in v.words])
    ok = crow >= 0
    ok[ok] = arrays["word_complete"][crow[ok]]
    held = ok & (np.random.default_rng(seed).random(len(v)) < share)
    train = ok & ~held
    matrix = np.asarray(v.matrix, dtype=np.float32)
    composer = build_composer(
        arrays["token_emb"][crow[train]],
        unit(matrix[train]) if variant == "ridge-unit" else matrix[train],
        arrays["teacher_token_emb"],
        cache.teacher_tokenizer(),
        bool(cache.manifest["identity"]["corpus_config"]["lowercase"]),
    )
    held_words = [v.words[i] for i in np.flatnonzero(held)]
    if variant == "hybrid":
        composer, _ = hybrid_rows(composer, [v.words[i] for i in np.flatnonzero(~held)], matrix[~held])
    composed = composer.compose(held_words)
    sims = unit(composed) @ unit(matrix).T  # among the whole table, held-out words as their true vectors
    own = sims[np.arange(len(held_words)), np.flatnonzero(held)]
    rank = (sims > own[:, None]).sum(1)
    sub = {w: composed[k] for k, w in enumerate(held_words)}
    sets = {}
    for b in benches:
        rows = [(k, [v.words[v.row_of(w)] for w in pair]) for k, pair in enumerate(b.pairs)
                if v.row_of(pair[0]) is not None and v.row_of(pair[1]) is not None]  # fmt: skip
        rows = [(k, ws) for k, ws in rows if ws[0] in sub or ws[1] in sub]
        true = [unit(matrix[[v.index[w] for w in ws]]) for _, ws in rows]
        comp = [unit(np.array([sub.get(w, matrix[v.index[w]]) for w in ws])) for _, ws in rows]
        sets[b.name] = (
            b.gold[[k for k, _ in rows]],
            [t[0] @ t[1] for t in true],
            [c[0] @ c[1] for c in comp],
        )
    return {
        "held": len(held_words), "ok": int(ok.sum()), "ridge": composer.info.get("ridge"),
        "cos": np.einsum("ij,ij->i", unit(composed), unit(matrix[held])),
        "rank": rank, "sets": sets,
    }  # fmt: skip


def heldout(v: Vectors, cache: Cache, benches, seeds: list[int], share: float, variant: str) -> list[str]:
    arrays = cache.vocab_arrays()
    runs = [heldout_once(v, cache, arrays, benches, seed, share, variant) for seed in seeds]
    cos = np.concatenate([r["cos"] for r in runs])
    rank = np.concatenate([r["rank"] for r in runs])
    out = [
        f"{len(seeds)} splits (seeds {seeds[0]}-{seeds[-1]}), each holding out {runs[0]['held']:,} of "
        f"{runs[0]['ok']:,} words ({share:.0%}); map fitted on the rest (ridge {runs[0]['ridge']})",
        f"cosine(composed, true): mean {cos.mean():.3f}, median {np.median(cos):.3f}; the true word is "
        f"the composed vector's nearest: top-1 {100 * np.mean(rank == 0):.1f}%, "
        f"top-10 {100 * np.mean(rank < 10):.1f}%",
        "",
        "| set | pairs with a held-out word (mean per split) | Spearman, true vectors | Spearman, composed |",
        "|---|---|---|---|",
    ]
    for b in benches:
        per = [r["sets"][b.name] for r in runs if len(r["sets"][b.name][0]) >= 5]
        if not per:
            out.append(f"| {b.name} | - | - | - |")
            continue
        n = np.mean([len(g) for g, _, _ in per])
        t = np.mean([spearman(np.array(tc), g) for g, tc, _ in per])
        c = np.mean([spearman(np.array(cc), g) for g, _, cc in per])
        out.append(f"| {b.name} | {n:.0f} | {100 * t:.1f} | {100 * c:.1f} |")
    return out


VARIANTS = ("ridge", "ridge-unit", "hybrid")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("vectors", nargs="+")
    ap.add_argument("--cache", required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--holdout", type=float, default=0.1)
    ap.add_argument("--variant", nargs="+", default=["ridge"], choices=VARIANTS)
    args = ap.parse_args()
    cache = Cache.open(args.cache)
    benches = load_benchmarks((Family.SIMILARITY,), {}, bundled=True)
    for path in args.vectors:
        v = Vectors.load(path)
        if v.composer is None:
            v.composer = fit_composer(cache, v)
        print(f"## {path}: {len(v):,} words x {v.dim}\n")
        print("| set | in-vocabulary pairs (protocol) | all pairs, missing words zero | all, composed |")
        print("|---|---|---|---|")
        print("\n".join(coverage_rows(v, benches)), "\n")
        for variant in args.variant:
            print(f"### held-out words, {variant}\n")
            print("\n".join(heldout(v, cache, benches, args.seeds, args.holdout, variant)), "\n", flush=True)


if __name__ == "__main__":
    main()
