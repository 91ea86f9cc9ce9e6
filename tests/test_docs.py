"""The documentation's own code: the figures script and the MkDocs hooks (the site: CI's strict build)."""

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_{name}", ROOT / "docs" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_figure_draws_from_its_results_file(tmp_path, monkeypatch):
    """A renamed column or table in bench/results/ fails here, not silently in a stale PNG."""
    figures = _load("figures")
    monkeypatch.setattr(figures, "OUT", tmp_path)
    drawn = [draw() for draw in figures.FIGURES]
    assert {p.name for p in drawn} == {p.name for p in (ROOT / "docs" / "img").glob("*.png")}
    assert all(p.stat().st_size > 10_000 for p in drawn)


def test_results_names_become_links_outside_code_blocks():
    hooks = _load("hooks")
    page = "See `race_brown.md`, `bench/results/size_curve.md` and `nothing.md`.\n```\n`race_brown.md`\n```\n"
    linked = hooks._link_results(page, "guides/students.md")
    assert "[`race_brown.md`](../results/race_brown.md)" in linked
    assert "[`bench/results/size_curve.md`](../results/size_curve.md)" in linked
    assert "`nothing.md`." in linked and linked.endswith("```\n`race_brown.md`\n```\n")
    assert hooks._link_results(linked, "guides/students.md") == linked  # a link's text is not linked again


def test_sphinx_roles_render_as_code():
    hooks = _load("hooks")
    html = "so :meth:<code>Vectors.query</code> and :class:<code>~ctx2static.export.ExportConfig</code>'s"
    assert hooks.on_page_content(html) == "so <code>Vectors.query</code> and <code>ExportConfig</code>'s"


def test_product_help_and_docstrings_cite_the_results_page_not_bench_files():
    """A pip install has no bench/: its help and docstrings name the docs' Results page, which it can open."""
    top = {p: p.relative_to(ROOT).parts[0] for p in ROOT.rglob("*.py")}
    skip = {"tests", "bench", "docs", "data", "build", "runs"}
    product = [p for p, t in top.items() if t not in skip and not t.startswith(".")]
    citing = {p.relative_to(ROOT).as_posix() for p in product if "bench/results/" in p.read_text("utf-8")}
    assert not citing, citing
