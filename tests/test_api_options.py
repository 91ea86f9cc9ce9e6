"""The API's typed keyword options are generated from the configs, and the file in the tree is current."""

import dataclasses
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from ctx2static import api, api_options, api_options_gen
from ctx2static.options import field_names, opt
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.students import x2static
from ctx2static.students.registry import STUDENTS, Source, StudentSpec
from ctx2static.students.student import CacheStudent

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
    """mypy reads fit's and distill's signature per student: ``dim`` is sgns's, not ase's; the default
    is x2static; distill takes extract's options with the student's."""
    from mypy import api as mypy

    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "ctx2static").symlink_to(ROOT)  # mypy cannot follow the editable install
    (tmp_path / "user.py").write_text(
        "from ctx2static.api import distill, fit\n"
        'fit("cache", "sgns", dim=100)\n'
        'fit("cache", epochs=2)\n'
        'fit("cache", "ase", dim=100)\n'
        'fit("cache", "x2static", window=5)\n'
        'distill("c.txt", "minilm", "ase", min_count=2, min_occurrences=3)\n'
        'distill("c.txt", student="bert-sg", vectors=True, dim=50)\n'
        'distill("c.txt", min_count=2, epochs=2)\n'
        'distill("c.txt", student="ase", dim=50)\n'
        'distill("c.txt", "minilm", "sgns")\n'
    )
    monkeypatch.setenv("MYPYPATH", str(tmp_path / "site"))
    monkeypatch.chdir(tmp_path)  # not the repository's mypy settings: a user's plain check
    out, _, code = mypy.run([f"--cache-dir={tmp_path / 'cache'}", "--follow-imports=silent", "user.py"])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert code == 1 and [e.split(":")[1] for e in errors] == ["4", "5", "9", "10"], out


def test_a_new_student_changes_api_py_alone(monkeypatch):
    """A student's keywords and signatures are api.py's blocks; api_options.py holds the stages' only."""
    stages = api_options_gen.render()
    toy = CacheStudent(ToyConfig, x2static.fit)
    monkeypatch.setitem(STUDENTS, "toy", StudentSpec("toy", "toy", Source.CACHE, "a toy"))
    real = api_options_gen.load_student
    monkeypatch.setattr(api_options_gen, "load_student", lambda name: toy if name == "toy" else real(name))
    blocks = api_options_gen.api_blocks()
    assert (
        "class ToyOptions(TypedDict, total=False):" in blocks["fit"]
        and "    toy_rate: float\n" in blocks["fit"]
    )
    assert "class ToyDistillOptions(api_options.ExtractOptions, total=False):" in blocks["fit"]
    assert 'student: Literal["toy"]' in blocks["fit"] and 'student: Literal["toy"]' in blocks["distill"]
    assert api_options_gen.render() == stages


def test_every_config_field_is_a_typed_keyword():
    keys = api.X2staticDistillOptions.__optional_keys__
    assert set(field_names(x2static.Config)) <= keys and not api.X2staticDistillOptions.__required_keys__
    assert set(field_names(ExtractConfig)) <= keys


def test_py_typed_ships_with_the_package():
    """Without py.typed (PEP 561) a user's type checker ignores these keywords as if the package had none."""
    root = Path(api_options.__file__).parent
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["ctx2static"]
    shipped = {path for pattern in patterns for path in root.glob(pattern)}
    assert root / "py.typed" in shipped
