"""ctx2static command line: corpus -> teacher -> cache -> student -> vectors -> retrofit -> eval."""

from __future__ import annotations

import sys

import click

from ctx2static.errors import UserError
from ctx2static.export import Format
from ctx2static.pipeline.extract import PRECISIONS, ExtractConfig
from ctx2static.retrofit.config import Method, RetrofitConfig


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="ctx2static")
def cli() -> None:
    """Distil contextual language models into static word vectors."""


# ------------------------------------------------------------------ teacher stage (issue 3)
@cli.command()
@click.option(
    "--corpus", "corpus_paths", multiple=True, required=True, type=click.Path(), help="Corpus file(s)."
)
@click.option(
    "--teacher", required=True, help="minilm, smollm2, bert-base, roberta-base, gpt2, a folder or a hub id."
)
@click.option(
    "--out", required=True, type=click.Path(), help="Cache folder (re-run the same command to resume)."
)
@click.option("--lowercase/--keep-case", default=True, show_default=True)
@click.option("--min-sentence-len", default=0, show_default=True, help="0 = off (seeds: 10).")
@click.option("--max-sentence-len", default=0, show_default=True, help="0 = off (seeds: 40).")
@click.option(
    "--vocab", "vocab_path", type=click.Path(), help="Static vocabulary (word<TAB>count); else built."
)
@click.option("--min-count", default=5, show_default=True, help="Vocabulary: minimum count when building.")
@click.option(
    "--max-vocab", default=0, show_default=True, help="Vocabulary: keep at most this many (0 = all)."
)
@click.option("--vectors/--no-vectors", default=False, show_default=True, help="Per-occurrence word vectors.")
@click.option("--pca", default=0, show_default=True, help="Reduce --vectors to D dims by PCA (0 = off).")
@click.option(
    "--paragraph/--no-paragraph", default=False, show_default=True, help="X2Static paragraph context."
)
@click.option("--topk", default=0, show_default=True, help="SemGloVe md: top-k LM substitutes (0 = off).")
@click.option(
    "--attention", default=0, show_default=True, help="SemGloVe sd: top S context words in +-S (0 = off)."
)
@click.option(
    "--shard-size", default=ExtractConfig.shard_size, show_default=True, help="Sentences per shard."
)
@click.option(
    "--max-length", default=ExtractConfig.max_length, show_default=True, help="Tokens per sentence."
)
@click.option(
    "--token-budget", default=ExtractConfig.token_budget, show_default=True, help="Tokens per batch."
)
@click.option(
    "--max-sentences", default=0, show_default=True, help="Stop after this many sentences (0 = all)."
)
@click.option("--device", default="cpu", show_default=True, help="torch device, e.g. cpu, cuda, cuda:1.")
@click.option("--threads", default=0, show_default=True, help="CPU threads for torch (0 = default).")
@click.option(
    "--layer",
    default=-1,
    show_default=True,
    help="Hidden layer read, as hidden_states[LAYER] (-1 = last; causal LMs: a middle one is better).",
)
@click.option(
    "--precision",
    type=click.Choice(PRECISIONS),
    default="auto",
    show_default=True,
    help="Forward dtype: auto = bfloat16 on GPU, float32 on CPU; bfloat16 is ~3x faster on CPUs with AMX.",
)
def extract(
    corpus_paths: tuple[str, ...],
    teacher: str,
    out: str,
    vocab_path: str | None,
    min_count: int,
    max_vocab: int,
    device: str,
    threads: int,
    layer: int,
    precision: str,
    lowercase: bool,
    min_sentence_len: int,
    max_sentence_len: int,
    **options: int | bool,
) -> None:
    """Run a teacher once over a corpus and write the sharded cache."""
    from ctx2static.pipeline.corpus import Corpus, CorpusConfig
    from ctx2static.pipeline.extract import extract, set_threads
    from ctx2static.pipeline.teacher import Teacher
    from ctx2static.pipeline.vocab import Vocab

    set_threads(threads)
    cfg = ExtractConfig(**options)
    corpus = Corpus(list(corpus_paths), CorpusConfig(lowercase, min_sentence_len, max_sentence_len))
    # the teacher first: a missing model fails before the corpus is read
    t = Teacher.load(teacher, device=device, layer=layer, precision=precision)
    vocab = Vocab.load(vocab_path) if vocab_path else Vocab.build(corpus, min_count, max_vocab or None)
    click.echo(
        f"teacher {teacher}: {t.family.value} ({t.decoder}, {t.precision}), {t.source}; "
        f"vocab {len(vocab)} words",
        err=True,
    )
    click.echo(f"config: {cfg}", err=True)
    m = extract(corpus, vocab, t, out, cfg)
    tot = m["totals"]
    rate = m.get("run", {}).get("teacher_tokens_per_s", 0.0)
    click.echo(
        f"{out}: {len(m['shards'])} shards, {tot['n_sentences']} sentences, "
        f"{tot['n_occurrences']} occurrences, "
        f"{tot['n_truncated_words']} words cut by max length; {rate:,.0f} teacher tokens/s"
    )


@cli.group()
def cache() -> None:
    """Inspect a teacher cache."""


@cache.command("info")
@click.argument("folder", type=click.Path())
@click.option("--no-verify", is_flag=True, help="Skip recomputing the sha256 checksums.")
def cache_info(folder: str, no_verify: bool) -> None:
    """Show what a cache holds, its sizes and whether its checksums hold (exit 1 if not)."""
    from ctx2static.cache.info import describe

    text, valid = describe(folder, verify=not no_verify)
    click.echo(text)
    if not valid:
        sys.exit(1)


# ------------------------------------------------------------------ students (issues 2 and 4)
@cli.command("fit-student")
@click.option("--student", "-s", required=True, help="Student name (listed below).")
@click.option("--corpus", "corpus_paths", multiple=True, type=click.Path(), help="Text corpus file(s).")
@click.option("--cache", "cache_dir", type=click.Path(), help="Teacher cache folder (distilled students).")
@click.option("--out", "-o", required=True, type=click.Path(), help="Output: .txt/.vec, .bin or a folder.")
@click.option("--min-count", default=5, show_default=True, help="Drop words rarer than this.")
@click.option("--max-vocab", type=int, default=None, help="Keep at most this many words.")
@click.option("--lowercase/--keep-case", default=True, show_default=True)
@click.option("--min-sentence-len", default=0, show_default=True, help="0 = off (seeds: 10).")
@click.option("--max-sentence-len", default=0, show_default=True, help="0 = off (seeds: 40).")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE", help="Any student option.")
@click.option("--dim", type=int, help="Shortcut for --set dim=N.")
@click.option("--epochs", type=int, help="Shortcut for --set epochs=N.")
@click.option("--window", type=int, help="Shortcut for --set window=N.")
@click.option("--threads", type=int, help="Shortcut for --set threads=N.")
@click.option("--seed", type=int, help="Shortcut for --set seed=N.")
def fit_student(
    student: str,
    corpus_paths: tuple[str, ...],
    cache_dir: str | None,
    out: str,
    min_count: int,
    max_vocab: int | None,
    lowercase: bool,
    min_sentence_len: int,
    max_sentence_len: int,
    settings: tuple[str, ...],
    **shortcuts: int | None,
) -> None:
    """Train static vectors: plain baselines from text, distilled students from a cache.

    Students: sgns, cbow, glove (from --corpus); x2static, ase, token, word (from --cache, no
    teacher needed). Every option of a student's config can be set
    with --set KEY=VALUE; the effective configuration is printed and saved with the vectors.
    """
    from ctx2static.pipeline.corpus import Corpus, CorpusConfig
    from ctx2static.students.registry import fit_cache_student, fit_text_student

    overrides: dict[str, object] = {k: v for k, v in shortcuts.items() if v is not None}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"--set {item!r}: write KEY=VALUE, e.g. --set negative=10")
        overrides[key.strip()] = value.strip()
    if cache_dir and corpus_paths:
        raise UserError("pass either --corpus (text students) or --cache (cache students), not both")
    if cache_dir:
        vectors = fit_cache_student(student, cache_dir, overrides, echo=click.echo)
    elif corpus_paths:
        corpus = Corpus(corpus_paths, CorpusConfig(lowercase, min_sentence_len, max_sentence_len))
        vectors = fit_text_student(student, corpus, min_count, max_vocab, overrides, echo=click.echo)
    else:
        raise UserError("pass --corpus FILE (text students) or --cache DIR (distilled students)")
    path = vectors.save(out)
    meta = vectors.meta
    click.echo(
        f"{student}: {len(vectors):,} words x {vectors.dim} in {meta['train_seconds']} s "
        f"({meta['tokens_per_second']:,} tokens/s) -> {path}"
    )


# ------------------------------------------------------------------ retrofitting (issue 5)

_RETROFIT = RetrofitConfig()


@cli.command()
@click.argument("vectors", type=click.Path(exists=True))
@click.option(
    "--lexicon",
    "-l",
    "lexicons",
    multiple=True,
    required=True,
    help="'word nbr1 nbr2 ...' file (.xz/.gz ok) or 'wordnet' (bundled); repeat to merge lexicons.",
)
@click.option(
    "--method",
    type=click.Choice([m.value for m in Method]),
    default=_RETROFIT.method.value,
    show_default=True,
)
@click.option("--out", "-o", required=True, type=click.Path(), help="Output vectors (folder, .bin or .txt).")
@click.option("--iterations", type=int, default=_RETROFIT.iterations, show_default=True)
@click.option("--alpha", type=float, default=_RETROFIT.alpha, show_default=True, help="faruqui: alpha.")
@click.option("--a", "a", type=float, default=_RETROFIT.a, show_default=True, help="graph: a_i (Eq. 9).")
@click.option("--b", "b", type=float, default=_RETROFIT.b, show_default=True, help="graph: b_i (Eq. 9).")
@click.option("--nu", type=float, default=_RETROFIT.nu, show_default=True, help="graph: Student-t nu.")
@click.option("--sigma", type=float, default=_RETROFIT.sigma, show_default=True, help="graph: kernel scale.")
@click.option(
    "--normalize/--no-normalize",
    default=_RETROFIT.normalize,
    show_default=True,
    help="Scale input vectors to unit length first (as both reference codes do).",
)
def retrofit(vectors: str, lexicons: tuple[str, ...], out: str, **options: object) -> None:
    """Retrofit vectors to synonym lexicons (Faruqui et al. 2015, Context-to-Vec graph)."""
    import json
    import time

    from ctx2static.retrofit.solver import retrofit_vectors
    from ctx2static.vectors import Vectors

    config = RetrofitConfig(**options)  # type: ignore[arg-type]
    click.echo(f"retrofit: {json.dumps(config.to_dict())}", err=True)
    start = time.perf_counter()
    result, trace = retrofit_vectors(Vectors.load(vectors), lexicons, config)
    result.save(out)
    info = result.meta["retrofit"][-1]
    if info["edges"] == 0:
        click.echo(
            "warning: no lexicon line links two vocabulary words (matching is exact unless the "
            "vocabulary is all lower case); no vector moved",
            err=True,
        )
    click.echo(
        f"retrofit ({config.method.value}): {info['words_with_neighbours']} of {len(result)} words "
        f"moved, {info['edges']} edges, Psi {trace[0]:.4g} -> {trace[-1]:.4g}, "
        f"{time.perf_counter() - start:.1f}s -> {out}",
        err=True,
    )


# ------------------------------------------------------------------ evaluation (issue 2)
@cli.command("eval")
@click.argument("vectors", nargs=-1, required=True, type=click.Path())
@click.option(
    "--family",
    "families",
    multiple=True,
    type=click.Choice(["similarity", "analogy", "categorization"]),
    help="Bundled benchmark families to run (repeat; default: all).",
)
@click.option("--similarity", multiple=True, type=click.Path(), help="Extra TSV 'w1 w2 score'.")
@click.option(
    "--analogy",
    multiple=True,
    type=click.Path(),
    help="Extra 'a b c d' file, or CSV ',type,word1,word2,word3,target'.",
)
@click.option("--categorization", multiple=True, type=click.Path(), help="Extra CSV ',category,word'.")
@click.option("--no-bundled", is_flag=True, help="Run only the files given with the options above.")
@click.option(
    "--top-n", type=int, default=None, help="Analogy search over the N most frequent words [30000]."
)
@click.option("--json", "json_path", type=click.Path(), help="Also write the results as JSON.")
@click.option("--markdown", type=click.Path(), help="Also write the table as Markdown.")
def eval_(
    vectors: tuple[str, ...],
    families: tuple[str, ...],
    similarity: tuple[str, ...],
    analogy: tuple[str, ...],
    categorization: tuple[str, ...],
    no_bundled: bool,
    top_n: int | None,
    json_path: str | None,
    markdown: str | None,
) -> None:
    """Evaluate vectors: similarity, analogy, relation similarity, categorization.

    Prints one table with a column per VECTORS file; cells are "score (coverage)".
    """
    import os
    import time

    from ctx2static.eval import AnalogyConfig, Family, evaluate, load_benchmarks
    from ctx2static.eval.results import format_text, write_json, write_markdown
    from ctx2static.eval.suite import config_dict, notes
    from ctx2static.vectors import Vectors

    config = AnalogyConfig() if top_n is None else AnalogyConfig(top_n=top_n)
    if config.top_n < 1:
        raise UserError(f"--top-n must be at least 1, got {config.top_n}")
    extra = {Family.SIMILARITY: similarity, Family.ANALOGY: analogy, Family.CATEGORIZATION: categorization}
    picked = tuple(Family(f) for f in families) or tuple(Family)
    benchmarks = load_benchmarks(picked, extra, bundled=not no_bundled)
    if not benchmarks:
        raise UserError(
            "no benchmarks to run: give --similarity/--analogy/--categorization files with --no-bundled"
        )
    for path in vectors:
        if not os.path.exists(path):
            raise UserError(f"{path}: no such vectors file or folder")
    results = {}
    for path in vectors:
        start = time.perf_counter()
        vecs = Vectors.load(path)
        results[path] = evaluate(vecs, benchmarks, config)
        seconds = time.perf_counter() - start
        click.echo(f"{path}: {len(vecs)} words x {vecs.dim}, evaluated in {seconds:.1f} s", err=True)
    lines = notes(config)
    click.echo(format_text(results, lines), nl=False)
    if json_path is not None:
        write_json(json_path, results, config_dict(config))
    if markdown is not None:
        write_markdown(markdown, results, lines)


# ------------------------------------------------------------------ a whole study (issue 6)
@cli.command()
@click.argument("study", required=False, type=click.Path())
@click.option("--out", "-o", type=click.Path(), help="Output folder [runs/<study file name>].")
def run(study: str | None, out: str | None) -> None:
    """Run a study: extract -> fit-student (each) -> retrofit -> eval -> report.md with figures.

    STUDY is a TOML file (format in the README); without it, the bundled default study (the demo
    corpus, the MiniLM teacher, every student) runs into runs/default. A rerun skips every step
    whose output exists and was made from the same configuration.
    """
    from pathlib import Path

    from ctx2static.eval.results import format_text
    from ctx2static.eval.suite import notes
    from ctx2static.resources import DEFAULT_STUDY
    from ctx2static.study import analogy_config, load_study, run_study

    path = Path(study) if study else DEFAULT_STUDY
    spec = load_study(path)
    dest = Path(out) if out else Path("runs") / path.stem
    results = run_study(spec, dest, echo=lambda s: click.echo(s, err=True))
    click.echo(format_text(results, notes(analogy_config(spec.eval))), nl=False)


@cli.command()
@click.argument("vectors", type=click.Path())
@click.option(
    "--format",
    "fmt",
    type=click.Choice([f.value for f in Format]),
    required=True,
    help="word2vec text, word2vec binary (gensim), or a Model2Vec folder (StaticModel.from_pretrained).",
)
@click.option(
    "--out", "-o", required=True, type=click.Path(), help="Output file (.txt/.vec, .bin) or folder."
)
def export(vectors: str, fmt: str, out: str) -> None:
    """Write VECTORS (any readable format) for other tools."""
    from ctx2static.export import export_vectors
    from ctx2static.vectors import Vectors

    v = Vectors.load(vectors)
    path = export_vectors(v, Format(fmt), out)
    click.echo(f"{vectors}: {len(v):,} words x {v.dim} -> {path} ({fmt})", err=True)


def main() -> None:
    """Console entry point: user errors print one line and exit 2, never a traceback."""
    try:
        cli.main(standalone_mode=False)
    except UserError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
