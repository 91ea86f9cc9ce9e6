"""ctx2static command line: corpus -> teacher -> cache -> student -> vectors -> retrofit -> eval."""

from __future__ import annotations

import sys
from typing import Any

import click
from ctx2static.errors import UserError
from ctx2static.pipeline.extract import ExtractConfig


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="ctx2static")
def cli() -> None:
    """Distil contextual language models into static word vectors."""


def _not_built(command: str, issue: int) -> None:
    raise UserError(f"'{command}' is not built yet (tracked in issue {issue})")


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
@click.option(
    "--vocab", "vocab_path", type=click.Path(), help="Static vocabulary (word<TAB>count); else built."
)
@click.option("--min-count", default=5, show_default=True, help="Vocabulary: minimum count when building.")
@click.option(
    "--max-vocab", default=0, show_default=True, help="Vocabulary: keep at most this many (0 = all)."
)
@click.option("--vectors/--no-vectors", default=False, show_default=True, help="Per-occurrence word vectors.")
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
def extract(
    corpus_paths: tuple[str, ...],
    teacher: str,
    out: str,
    vocab_path: str | None,
    min_count: int,
    max_vocab: int,
    device: str,
    threads: int,
    **options: Any,
) -> None:
    """Run a teacher once over a corpus and write the sharded cache."""
    from ctx2static.pipeline.corpus import Corpus
    from ctx2static.pipeline.extract import extract, set_threads
    from ctx2static.pipeline.teacher import Teacher
    from ctx2static.pipeline.vocab import Vocab

    set_threads(threads)
    cfg = ExtractConfig(**options)
    corpus = Corpus(list(corpus_paths))
    vocab = Vocab.load(vocab_path) if vocab_path else Vocab.build(corpus, min_count, max_vocab or None)
    t = Teacher.load(teacher, device=device, attention=bool(cfg.attention))
    click.echo(
        f"teacher {teacher}: {t.family.value} ({t.decoder}), {t.source}; vocab {len(vocab)} words", err=True
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
    """Show what a cache holds, its sizes and whether its checksums hold."""
    from ctx2static.cache.info import describe

    click.echo(describe(folder, verify=not no_verify))


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
@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def retrofit() -> None:
    """Retrofit vectors to synonym lexicons (Faruqui et al. 2015, Context-to-Vec graph)."""
    _not_built("retrofit", 5)


# ------------------------------------------------------------------ evaluation (issue 2)
@cli.command("eval", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def eval_() -> None:
    """Evaluate vectors: similarity, analogy, relation similarity, categorization."""
    _not_built("eval", 2)


# ------------------------------------------------------------------ end to end
@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def demo() -> None:
    """Run the whole job on the bundled demo corpus and print the evaluation table."""
    _not_built("demo", 2)


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
