"""One definition per option: config dataclasses built from strings or TOML values, checked in one style.

Every configuration of the tool (corpus reading, vocabulary, teacher, extract, each student,
retrofitting, evaluation) is a frozen dataclass deriving from :class:`Options`. Its fields carry
the defaults, written once, with a help text (:func:`opt`). From that one definition:

- :func:`configure` builds it from ``--set KEY=VALUE`` strings or TOML values (unknown keys and
  values of the wrong type are one-line :class:`UserError` s);
- :func:`click_options` turns its fields into command-line options;
- :meth:`Options.rules` states its constraints, checked on construction (one style for all).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import numbers
import os
import shlex
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import click

from ctx2static.errors import OptionError, Style, current_style, did_you_mean, spell

C = TypeVar("C", bound="Options")
F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

Rule = tuple[str, bool, str]
"""(field name, whether the constraint holds, what the value must be)."""


def opt(default: T, help: str, off: str | None = None) -> T:
    """A dataclass field with its default and the help text the CLI shows.

    Typed as its default, as :func:`dataclasses.field` is, so a type checker compares the default
    with the field's annotation. ``off`` names the command-line flag that sets a boolean false
    (default ``--no-NAME``).
    """
    return dataclasses.field(default=default, metadata={"help": help, "off": off})


SEED_LIMIT = 2**32
"""Seeds are below this: numpy, torch and the Numba kernels (uint64 states) all take them as they are."""


def seed_rule(seed: int) -> Rule:
    """The rule every config with a ``seed`` states: 0 <= seed < 2**32."""
    return ("seed", 0 <= seed < SEED_LIMIT, f"between 0 and {SEED_LIMIT - 1}")


def rate_rule(name: str, value: float) -> Rule:
    """A learning rate: above 0 (it must move) and below 1 (from 1 up, SGD steps overshoot and diverge)."""
    return (name, 0 < value < 1, "between 0 and 1, both excluded")


def share_rule(name: str, value: float) -> Rule:
    """A probability or a mixing share: between 0 and 1."""
    return (name, 0 <= value <= 1, "between 0 and 1")


def text_rule(name: str, value: str) -> Rule:
    """Text a model reads is UTF-8: the command line hands undecodable bytes on as lone surrogates."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return (name, False, "UTF-8 text (it holds bytes that are not: write it in UTF-8)")
    return (name, True, "")


def at_least(options: Options, low: int, *names: str) -> list[Rule]:
    """Counts with a floor (sizes, epochs, budgets at 1; folds at 2): one rule per named field."""
    return [(name, getattr(options, name) >= low, f"at least {low}") for name in names]


def positive(options: Options, *names: str) -> list[Rule]:
    """Strengths, scales and margins that must be above 0: one rule per named field."""
    return [(name, getattr(options, name) > 0, "positive") for name in names]


@dataclasses.dataclass(frozen=True)
class Options:
    """Base of every config: enum fields are coerced from their values, then :meth:`rules` are enforced.

    Its repr lists only the fields that differ from the defaults (``Config(epochs=3)``); ``str``
    lists them all.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # @dataclass keeps a __repr__ the class defines: set here, each config keeps the short one
        cls.__repr__ = Options.__repr__  # type: ignore[method-assign]

    def __repr__(self) -> str:
        return self._listing(self.changed())

    def __str__(self) -> str:
        """Every field: the effective configuration ``-v`` shows."""
        return self._listing(self.to_dict())

    def _listing(self, values: Mapping[str, Any]) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in values.items())})"

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            kind = _enum_type(hints[f.name])
            # every way in (API keywords, TOML, --set) gets the same type check: "5" parses, [5] fails
            value = parse_value(f.name, getattr(self, f.name), hints[f.name])
            object.__setattr__(self, f.name, value)
            if isinstance(value, float) and not math.isfinite(value):
                raise OptionError(f"{said(f.name, value)} must be a finite number", f.name)
            if kind is not None and value is not None and not isinstance(value, kind):
                try:
                    object.__setattr__(self, f.name, kind(value))
                except ValueError:
                    names = [m.value for m in kind]
                    hint = did_you_mean(str(value), names)
                    choices = ", ".join(names)
                    raise OptionError(
                        f"{said(f.name, value)}{hint}: choose one of {choices}", f.name
                    ) from None
        for name, ok, want in self.rules():
            if not ok:
                raise OptionError(f"{said(name, getattr(self, name))} must be {want}", name)

    def rules(self) -> Iterable[Rule]:
        """Constraints on the values (none by default)."""
        return ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (enums as their values)."""
        return {k: v.value if isinstance(v, enum.Enum) else v for k, v in dataclasses.asdict(self).items()}

    def changed(self) -> dict[str, Any]:
        """The fields whose values differ from the defaults."""
        default = type(self)()
        return {k: v for k, v in self.to_dict().items() if v != default.to_dict()[k]}


_VIA_SET: ContextVar[bool] = ContextVar("ctx2static_via_set", default=False)


@contextmanager
def _set_as_text() -> Iterator[None]:
    """Options built in the block are those the command line takes as ``--set KEY=VALUE`` (a student's)."""
    token = _VIA_SET.set(True)
    try:
        yield
    finally:
        _VIA_SET.reset(token)


_UNSET = object()


def said(name: str, value: Any = _UNSET) -> str:
    """Option ``name`` with ``value`` as written: ``--min-count 0``, ``min_count = 0``, ``min_count=0``.

    A student's option on the command line is ``--set lr=1.0`` (:func:`configure` builds those); a
    list is comma-separated text there, a TOML list in a study file; text longer than a line keeps
    its ends (one line for a 100 kB template).
    """
    if value is _UNSET:
        return spell(name, via_set=_VIA_SET.get())
    style = current_style()
    value = value.value if isinstance(value, enum.Enum) else value
    if isinstance(value, tuple):
        if style is not Style.KEYWORD:  # comma-separated text on the command line, a list in TOML
            value = ",".join(map(str, value)) if style is Style.FLAG else list(value)
    note = ""
    if isinstance(value, str):
        if len(value) > 80:
            value, note = f"{value[:40]}...{value[-20:]}", f" ({len(value):,} characters)"
        if style is Style.FLAG and not _VIA_SET.get():
            value = shlex.quote(value)
    return spell(name, value, via_set=_VIA_SET.get()) + note


def _target(hint: Any) -> tuple[Any, bool]:
    """The field's value type without ``None``, and whether ``None`` is allowed."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else hint), type(None) in args
    return hint, False


def _enum_type(hint: Any) -> type[enum.Enum] | None:
    target, _ = _target(hint)
    return target if isinstance(target, type) and issubclass(target, enum.Enum) else None


def field_names(cls: type[Options]) -> list[str]:
    """The option names of a config class, in definition order."""
    return [f.name for f in dataclasses.fields(cls)]


def configure(cls: type[C], values: Mapping[str, Any], what: str | None = None) -> C:
    """Build ``cls`` from its defaults plus ``values`` (strings are parsed, other values type-checked).

    ``what`` names the thing configured in messages (default: the class's module). Unknown keys,
    unparsable strings and values of the wrong type are one-line :class:`UserError` s.
    """
    hints = typing.get_type_hints(cls)
    names = field_names(cls)
    what = what or cls.__module__.rsplit(".", 1)[-1]
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        key = key.replace("-", "_")
        if key not in names:
            hint = did_you_mean(key, names)
            raise OptionError(f"{what} has no option '{key}'{hint}; its options are: {', '.join(names)}", key)
        with _set_as_text():
            kwargs[key] = parse_value(key, value, hints[key])
    with _set_as_text():
        return cls(**kwargs)


def parse_value(key: str, value: Any, hint: Any) -> Any:
    """``value`` as the field type ``hint``: strings are parsed, anything else must already fit.

    Text is parsed only where options are written as text (the command line, ``--set``, a study
    file): a Python caller passes values, so ``max_sentences="10"`` from one is a mistake parsing
    would hide, refused as ``max_sentences=[10]`` is. Choices (enums) are names in every spelling.
    """
    target, optional = _target(hint)
    if isinstance(value, str) and current_style() is Style.KEYWORD and _not_text(target):
        raise OptionError(f"{said(key, value)} must be {_kind(target)}, not text", key)
    if value is None or (isinstance(value, str) and value.lower() == "none" and optional):
        if optional:
            return None
        raise OptionError(f"{said(key)} cannot be none", key)
    if typing.get_origin(target) is tuple:  # tuple[X, ...]: a list, or comma-separated text
        items = (value.split(",") if value.strip() else []) if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise OptionError(f"{said(key, value)} must be a list", key)
        element = typing.get_args(target)[0]
        return tuple(parse_value(f"{key}[{i}]", v, element) for i, v in enumerate(items))
    if isinstance(value, str) and target is not str:
        return _parse(key, value, target)
    if target is str and isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # a spec written as a number in TOML (layer = 10)
    if target is str and isinstance(value, os.PathLike):
        return os.fspath(value)  # a file option given as a Path (checkpoint=Path(...))
    if isinstance(target, type) and issubclass(target, enum.Enum):
        return value  # Options coerces (and names the choices when it fails)
    return _checked(key, value, target)


def _not_text(target: Any) -> bool:
    """Whether a field of type ``target`` holds numbers, a switch or a list (no name, no path)."""
    return target in (int, float, bool) or typing.get_origin(target) is tuple


def _kind(target: Any) -> str:
    """``target`` as a message names it: ``int``, ``a list``."""
    return "a list" if typing.get_origin(target) is tuple else getattr(target, "__name__", str(target))


def _checked(key: str, value: Any, target: Any) -> Any:
    """A value given as itself (not text), refused unless it is a ``target``; numbers as Python's own.

    numpy scalars count as numbers (np.int64 is no int); a bool is no number.
    """
    kinds = {int: (numbers.Integral,), float: (numbers.Real,)}.get(target) or (
        (target,) if isinstance(target, type) else None
    )
    if kinds is not None and (
        not isinstance(value, kinds) or (target is not bool and isinstance(value, bool))
    ):
        raise OptionError(f"{said(key, value)} must be {_kind(target)}", key)
    return float(value) if target is float else int(value) if target is int else value


def _parse(key: str, value: str, target: Any) -> Any:
    if isinstance(target, type) and issubclass(target, enum.Enum):
        try:
            return target(value)
        except ValueError:
            names = [m.value for m in target]
            hint = did_you_mean(value, names)
            raise OptionError(f"{said(key, value)}{hint}: choose one of {', '.join(names)}", key) from None
    try:
        if target is bool:
            low = value.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        return target(value)
    except (TypeError, ValueError):
        name = getattr(target, "__name__", str(target))
        raise OptionError(f"{said(key, value)} is not a valid {name}", key) from None


class Choice(click.Choice):
    """A click choice whose error also names the choice closest to a mistyped value.

    ``hint``, where given, says it instead (`` (...)`` or ``""``): a choice's other names, such as
    the tool that reads an export format, are not typos of it.
    """

    def __init__(self, choices: Sequence[str], hint: Callable[[str], str] | None = None) -> None:
        super().__init__(choices)
        self.hint = hint

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The value as click converts it; a typo's error ends with the closest choice."""
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            if self.hint:
                hint = self.hint(str(value))
            else:
                hint = did_you_mean(str(value), [str(c) for c in self.choices])
            if not hint:
                raise
            self.fail(f"{exc.message.rstrip('.')}{hint}.", param, ctx)


def click_options(cls: type[Options], exclude: Iterable[str] = ()) -> Callable[[F], F]:
    """A decorator adding one click option per field of ``cls`` (defaults and help from the fields).

    Booleans become ``--name/--no-name`` flags, enums a choice; the option's value reaches the
    command under the field's name.
    """
    hints = typing.get_type_hints(cls)
    skipped = set(exclude)
    decorators = []
    for f in dataclasses.fields(cls):
        if f.name in skipped:
            continue
        flag = "--" + f.name.replace("_", "-")
        target, optional = _target(hints[f.name])
        default = f.default.value if isinstance(f.default, enum.Enum) else f.default
        kwargs: dict[str, Any] = {
            "default": default,
            "show_default": True,
            "help": f.metadata.get("help", ""),
        }
        if target is bool:
            off = f.metadata.get("off") or "no-" + f.name.replace("_", "-")
            decorators.append(click.option(f"{flag}/--{off}", f.name, **kwargs))
            continue
        if isinstance(target, type) and issubclass(target, enum.Enum):
            kwargs["type"] = Choice([m.value for m in target])
        elif typing.get_origin(target) is tuple:  # comma-separated text, which the config parses
            item = typing.get_args(target)[0].__name__.upper()
            kwargs.update(
                type=str,
                metavar=f"{item},...",
                default=",".join(map(str, default)),
                show_default=bool(default),
            )
        elif optional:
            kwargs["type"] = target
        decorators.append(click.option(flag, f.name, **kwargs))

    def apply(fn: F) -> F:
        for deco in reversed(decorators):
            fn = deco(fn)
        return fn

    return apply


def pop_options(cls: type[C], values: dict[str, Any]) -> C:
    """Take the fields of ``cls`` out of a click command's keyword arguments and build it."""
    return cls(**{name: values.pop(name) for name in field_names(cls) if name in values})
