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
