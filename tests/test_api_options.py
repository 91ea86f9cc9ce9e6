"""The API's typed keyword options are generated from the configs, and the file in the tree is current."""

import dataclasses
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from ctx2static import api_options, api_options_gen
from ctx2static.options import field_names, opt
from ctx2static.students import x2static
from ctx2static.students.registry import Source

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class ToyConfig(x2static.Config):
    """A student's config with one option more."""

    toy_rate: float = opt(0.5, "A toy option.")


def test_api_options_py_is_what_the_generator_writes():
    current = api_options_gen.TARGET.read_text(encoding="utf-8")
    assert current == api_options_gen.render(), "run: python -m ctx2static.api_options_gen"
    api = api_options_gen.API.read_text(encoding="utf-8")
    assert api == api_options_gen.with_overloads(api), "run: python -m ctx2static.api_options_gen"


@pytest.mark.slow
def test_an_option_the_student_lacks_fails_the_type_check(tmp_path, monkeypatch):
    """mypy reads fit's signature per student: ``dim`` is sgns's, not ase's; the default is x2static."""
    from mypy import api as mypy

    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "ctx2static").symlink_to(ROOT)  # mypy cannot follow the editable install
    (tmp_path / "user.py").write_text(
        "from ctx2static.api import fit\n"
        'fit("cache", "sgns", dim=100)\n'
        'fit("cache", epochs=2)\n'
        'fit("cache", "ase", dim=100)\n'
        'fit("cache", "x2static", window=5)\n'
    )
    monkeypatch.setenv("MYPYPATH", str(tmp_path / "site"))
    monkeypatch.chdir(tmp_path)  # not the repository's mypy settings: a user's plain check
    out, _, code = mypy.run([f"--cache-dir={tmp_path / 'cache'}", "--follow-imports=silent", "user.py"])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert code == 1 and len(errors) == 2, out
    assert "user.py:4:" in errors[0] and "user.py:5:" in errors[1]


def test_a_new_config_field_appears_in_the_generated_keywords(monkeypatch):
    real = api_options_gen._students

    def with_toy(source):
        return (*real(source), ToyConfig) if source is Source.CACHE else real(source)

    monkeypatch.setattr(api_options_gen, "_students", with_toy)
    text = api_options_gen.render()
    assert "    toy_rate: float\n" in text and "``ToyConfig``" in text
    assert text != api_options_gen.TARGET.read_text(encoding="utf-8")


def test_every_config_field_is_a_typed_keyword():
    keys = api_options.DistillOptions.__optional_keys__
    assert set(field_names(x2static.Config)) <= keys and not api_options.DistillOptions.__required_keys__


def test_py_typed_ships_with_the_package():
    """Without py.typed (PEP 561) a user's type checker ignores these keywords as if the package had none."""
    root = Path(api_options.__file__).parent
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["ctx2static"]
    shipped = {path for pattern in patterns for path in root.glob(pattern)}
    assert root / "py.typed" in shipped
