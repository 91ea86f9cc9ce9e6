"""The API's typed keyword options are generated from the configs, and the file in the tree is current."""

import dataclasses
import re
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from ctx2static import api_options, api_options_gen
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


def test_api_options_py_and_the_stub_are_what_the_generator_writes():
    fix = "run: python -m ctx2static.api_options_gen"
    assert api_options_gen.TARGET.read_text(encoding="utf-8") == api_options_gen.render(), fix
    stub = api_options_gen.stub(api_options_gen.API.read_text(encoding="utf-8"))
    assert api_options_gen.STUB.read_text(encoding="utf-8") == stub, fix


def test_the_stub_declares_what_api_py_defines_and_nothing_generated_is_in_api_py():
    """Every public function of api.py is in the stub, fit and distill as a signature per student."""
    source = api_options_gen.API.read_text(encoding="utf-8")
    stub = api_options_gen.STUB.read_text(encoding="utf-8")
    public = set(re.findall(r"^def ([a-z]\w*)\(", source, re.M))
    assert public >= {"distill", "extract", "fit", "evaluate", "export"}
    assert set(re.findall(r"^def ([a-z]\w*)\(", stub, re.M)) == public
    cache_students = [n for n, s in STUDENTS.items() if s.source is Source.CACHE]
    assert stub.count("@overload\ndef fit(") == len(STUDENTS)
    assert stub.count("@overload\ndef distill(") == 2 * len(cache_students) - 1  # the default's once
    assert "GENERATED" not in source and "@overload" not in source


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
        "from ctx2static import distill as first\n"
        'first("c.txt", student="ase", dim=50)\n'
    )
    monkeypatch.setenv("MYPYPATH", str(tmp_path / "site"))
    monkeypatch.chdir(tmp_path)  # not the repository's mypy settings: a user's plain check
    out, _, code = mypy.run([f"--cache-dir={tmp_path / 'cache'}", "--follow-imports=silent", "user.py"])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert code == 1 and [e.split(":")[1] for e in errors] == ["4", "5", "9", "10", "12"], out


def test_a_new_student_changes_only_generated_files(monkeypatch):
    """A student's keywords are api_options.py's, its signatures the stub's; api.py is unchanged."""
    toy = CacheStudent(ToyConfig, x2static.fit)
    monkeypatch.setitem(STUDENTS, "toy", StudentSpec("toy", "toy", Source.CACHE, "a toy"))
    real = api_options_gen.load_student
    monkeypatch.setattr(api_options_gen, "load_student", lambda name: toy if name == "toy" else real(name))
    options = api_options_gen.render()
    assert "class ToyOptions(TypedDict, total=False):" in options and "    toy_rate: float\n" in options
    assert "class ToyDistillOptions(ExtractOptions, total=False):" in options
    stub = api_options_gen.stub(api_options_gen.API.read_text(encoding="utf-8"))
    assert stub.count('student: Literal["toy"]') == 3  # fit's, and distill's two forms
    assert "**options: Unpack[api_options.ToyDistillOptions]" in stub


def test_every_config_field_is_a_typed_keyword():
    keys = api_options.X2staticDistillOptions.__optional_keys__
    assert set(field_names(x2static.Config)) <= keys
    assert not api_options.X2staticDistillOptions.__required_keys__
    assert set(field_names(ExtractConfig)) <= keys


def test_py_typed_ships_with_the_package():
    """Without py.typed (PEP 561) a user's type checker ignores these keywords as if the package had none;
    without api.pyi it reads fit's and distill's plain signatures."""
    root = Path(api_options.__file__).parent
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["ctx2static"]
    shipped = {path for pattern in patterns for path in root.glob(pattern)}
    assert root / "py.typed" in shipped and root / "api.pyi" in shipped
