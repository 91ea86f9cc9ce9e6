"""How good are composed vectors for words outside the table? Two measurements per vectors file.

    python bench/probes/oov_composition.py --cache CACHE VECTORS... [--seed 0] [--holdout 0.1]

1. Coverage: each similarity set scored on the in-vocabulary pairs only (the protocol), and on all
   pairs with the missing words as zero vectors (cosine 0: what a word-level export's ``[UNK]``
   row gives) or composed (the composer fitted on the whole table, as ``fit-student`` stores it;
   the same numbers as ``cli.py eval --compose``).
2. Held-out words: a random ``--holdout`` share of the table's words (seeded) is removed, the
   composer is fitted on the rest, and the held-out words are composed. Scored: the cosine of
   each composed vector with the word's true (trained) vector, whether the true word is the
   composed vector's nearest neighbour among the whole table (top-1 / top-10), and per similarity
   set the Spearman of the pairs that involve a held-out word, with true against composed vectors.

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
    full = v.covering([w for b in benches for p in b.pairs for w in p])
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
    return Composer(rows, json.dumps(tok), composer.lowercase), rows


def heldout(v: Vectors, cache: Cache, benches, seed: int, share: float, variant: str) -> list[str]:
    arrays = cache.vocab_arrays()
    crow = np.array([cache.vocab.index.get(w, -1) for w in v.words])
    ok = crow >= 0
    ok[ok] = arrays["word_complete"][crow[ok]]
    rng = np.random.default_rng(seed)
    held = ok & (rng.random(len(v)) < share)
    train = ok & ~held
    matrix = np.asarray(v.matrix, dtype=np.float32)
    targets = unit(matrix[train]) if variant == "ridge-unit" else matrix[train]
    composer = build_composer(
        arrays["token_emb"][crow[train]],
        targets,
        arrays["teacher_token_emb"],
        cache.teacher_tokenizer(),
        bool(cache.manifest["identity"]["corpus_config"]["lowercase"]),
    )
    held_words = [v.words[i] for i in np.flatnonzero(held)]
    if variant == "hybrid":
        keep = [v.words[i] for i in np.flatnonzero(~held)]
        composer, _ = hybrid_rows(composer, keep, matrix[~held])
    composed = composer.compose(held_words)
    true = matrix[held]
    cos = np.einsum("ij,ij->i", unit(composed), unit(true))
    # retrieval among the table (held-out words included, as their true vectors)
    sims = unit(composed) @ unit(matrix).T
    own = sims[np.arange(len(held_words)), np.flatnonzero(held)]
    rank = (sims > own[:, None]).sum(1)
    out = [
        f"held out {len(held_words):,} of {int(ok.sum()):,} words (seed {seed}); map fitted on "
        f"{int(train.sum()):,}; ridge {composer.info.get('ridge', '-')}",
        f"cosine(composed, true): mean {cos.mean():.3f}, median {np.median(cos):.3f}; true word "
        f"nearest: top-1 {100 * (rank == 0).mean():.1f}%, top-10 {100 * (rank < 10).mean():.1f}%",
        "",
        "| set | pairs with a held-out word | Spearman, true vectors | Spearman, composed |",
        "|---|---|---|---|",
    ]
    sub = {w: composed[k] for k, w in enumerate(held_words)}
    held_set = set(held_words)
    for b in benches:
        idx = [
            k for k, (x, y) in enumerate(b.pairs)
            if v.lookup(x) is not None and v.lookup(y) is not None
            and (v.words[v.lookup(x)] in held_set or v.words[v.lookup(y)] in held_set)
        ]  # fmt: skip
        if len(idx) < 3:
            out.append(f"| {b.name} | {len(idx)} | - | - |")
            continue
        t_cos, c_cos = [], []
        for k in idx:
            ws = [v.words[v.lookup(w)] for w in b.pairs[k]]
            tv = [matrix[v.index[w]] for w in ws]
            cv = [sub.get(w, matrix[v.index[w]]) for w in ws]
            t_cos.append(unit(np.array(tv))[0] @ unit(np.array(tv))[1])
            c_cos.append(unit(np.array(cv))[0] @ unit(np.array(cv))[1])
        g = b.gold[idx]
        out.append(
            f"| {b.name} | {len(idx)} | {100 * spearman(np.array(t_cos), g):.1f} | "
            f"{100 * spearman(np.array(c_cos), g):.1f} |"
        )
    return out


VARIANTS = ("ridge", "ridge-unit", "hybrid")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("vectors", nargs="+")
    ap.add_argument("--cache", required=True)
    ap.add_argument("--seed", type=int, default=0)
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
            print("\n".join(heldout(v, cache, benches, args.seed, args.holdout, variant)), "\n", flush=True)


if __name__ == "__main__":
    main()
