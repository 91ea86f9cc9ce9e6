"""Every command line the README and the docs show names a subcommand and options that exist.

The commands are read from fenced code blocks (a trailing backslash joins lines; ``&&``, ``;``
and ``|`` separate commands) and from inline code spans, then checked against click's command
objects: no command runs, so no teacher, corpus or cache is needed. An option renamed in the
code (``--learning-rate`` became ``--lr``) fails here, not in a user's shell.
"""

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import click

from ctx2static.cli import cli

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
OPTION = re.compile(r"--?[A-Za-z][\w-]*(=.*)?")
SEPARATORS = {"&&", "||", ";", "|", "(", ")"}
PLACEHOLDERS = {"COMMAND"}  # `ctx2static COMMAND`: any subcommand, in prose


def code_snippets(text: str) -> Iterator[tuple[int, str]]:
    """(line number, code): each fenced line (continuations joined) and each inline span outside fences."""
    in_fence, pending, start = False, "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence, pending = not in_fence, ""
        elif in_fence:
            start = start if pending else number
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            yield start, pending + line
            pending = ""
        else:
            yield from ((number, span) for span in INLINE.findall(line))


def program_args(snippet: str) -> Iterator[list[str]]:
    """The words after ``ctx2static`` or ``python .../cli.py`` of each command in a snippet of shell."""
    lexer = shlex.shlex(snippet, posix=True, punctuation_chars="&|;()")
    lexer.whitespace_split, lexer.commenters = True, "#"
    try:
        words = list(lexer)
    except ValueError:  # an unbalanced quote: not a command line
        return
    command: list[str] = []
    for word in [*words, ";"]:
        if word not in SEPARATORS:
            command.append(word)
            continue
        while command and re.fullmatch(r"\w+=\S*", command[0]):  # FOO=1 ctx2static ...
            command.pop(0)
        if command[:1] == ["ctx2static"]:
            yield command[1:]
        elif command[:1] in (["python"], ["python3"]) and Path(" ".join(command[1:2])).name == "cli.py":
            yield command[2:]
        command = []


def doc_commands() -> list[tuple[str, list[str]]]:
    """(where, args) for every command line of the README and the docs."""
    found = []
    for page in PAGES:
        for number, snippet in code_snippets(page.read_text("utf-8")):
            where = f"{page.relative_to(ROOT).as_posix()}:{number}"
            found += [(where, args) for args in program_args(snippet)]
    return found


def unknown(args: list[str]) -> list[str]:
    """What in ``args`` (the words after the program) click does not know: a subcommand or an option."""
    command: click.Command = cli
    ctx = click.Context(cli, info_name="ctx2static")
    path, problems, i = "ctx2static", [], 0
    while i < len(args):
        word = args[i].strip("[]")  # [--ridge R]: an optional part, checked too
        i += 1
        if word == "--":
            break
        if OPTION.fullmatch(word):
            name = word.split("=", 1)[0]
            known = {o: p for p in command.get_params(ctx) for o in [*p.opts, *p.secondary_opts]}
            param = known.get(name)
            if not isinstance(param, click.Option):
                problems.append(f"{path} has no option {name}")
            elif not (param.is_flag or param.count or "=" in word):
                i += param.nargs  # its value, which may itself start with '-' (--layer -1)
        elif isinstance(command, click.Group):
            if word in PLACEHOLDERS:
                break
            sub = command.get_command(ctx, word)
            if sub is None:
                problems.append(f"{path} has no subcommand {word!r}")
                break
            command, ctx, path = sub, click.Context(sub, info_name=word, parent=ctx), f"{path} {word}"
    return problems


def test_the_check_refuses_a_renamed_option_and_an_unknown_subcommand():
    old = (
        "retrofit ase/ -l wordnet -a wordnet-antonyms --method attract-repel --learning-rate 0.01 -o ase+ar/"
    )
    assert unknown(shlex.split(old)) == ["ctx2static retrofit has no option --learning-rate"]
    assert unknown(shlex.split(old.replace("--learning-rate", "--lr"))) == []
    assert unknown(["retrofit", "ase/", "--lr=0.01", "--no-normalize", "-o", "out"]) == []
    assert unknown(["fit", "-s", "ase"]) == ["ctx2static has no subcommand 'fit'"]
    assert unknown(["cache", "info", "cache/", "--no-verify"]) == []
    assert unknown(["cache", "inf", "cache/"]) == ["ctx2static cache has no subcommand 'inf'"]
    analogy = ["-q", "neighbours", "ase/", "-n", "-1", "--analogy", "man", "-king", "woman", "--nope"]
    assert unknown(analogy) == ["ctx2static neighbours has no option --nope"]  # values are not options


def test_commands_are_read_from_fenced_blocks_and_inline_spans():
    page = (
        "Run `ctx2static export ase/ --format model2vec -o m2v/` or `ctx2static.distill`.\n"
        "```bash\n"
        "FOO=1 ctx2static extract --corpus a.txt \\\n"
        "    --teacher minilm --out cache   # a comment --not-an-option\n"
        "pip install -e . && python cli.py run\n"
        "```\n"
    )
    found = [args for _, snippet in code_snippets(page) for args in program_args(snippet)]
    assert found == [
        ["export", "ase/", "--format", "model2vec", "-o", "m2v/"],
        ["extract", "--corpus", "a.txt", "--teacher", "minilm", "--out", "cache"],
        ["run"],
    ]


def test_every_command_the_readme_and_the_docs_show_has_its_subcommand_and_options():
    commands = doc_commands()
    assert len(commands) > 40, "the commands were not found: has the markup changed?"
    assert any(where.startswith("README.md") and args[:1] == ["retrofit"] for where, args in commands)
    wrong = [f"{where}: {problem}" for where, args in commands for problem in unknown(args)]
    assert not wrong, "\n".join(wrong)
