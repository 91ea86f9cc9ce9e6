"""ctx2static command line: corpus -> teacher -> cache -> student -> vectors -> retrofit -> eval."""

from __future__ import annotations

import sys

import click
from ctx2static.errors import UserError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="ctx2static")
def cli() -> None:
    """Distil contextual language models into static word vectors."""


def _not_built(command: str, issue: int) -> None:
    raise UserError(f"'{command}' is not built yet (tracked in issue {issue})")


# ------------------------------------------------------------------ teacher stage (issue 3)
@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def extract() -> None:
    """Run a teacher once over a corpus and write the sharded cache."""
    _not_built("extract", 3)


@cli.group()
def cache() -> None:
    """Inspect a teacher cache."""


@cache.command("info", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def cache_info() -> None:
    """Show what a cache holds, its sizes and whether its checksums hold."""
    _not_built("cache info", 3)


# ------------------------------------------------------------------ students (issues 2 and 4)
@cli.command("fit-student", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def fit_student() -> None:
    """Train static vectors (plain baselines from text, distilled students from a cache)."""
    _not_built("fit-student", 2)


# ------------------------------------------------------------------ retrofitting (issue 5)
from ctx2static.retrofit.config import Method, RetrofitConfig  # noqa: E402  (light: no numpy)

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
