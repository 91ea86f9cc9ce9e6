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


def test_bench_readme_is_a_page_and_its_name_a_link_to_it():
    hooks = _load("hooks")
    page = "How the benches run: `bench/README.md`.\n```\n`bench/README.md`\n```\n"
    assert hooks._link_results(page, "results.md").startswith(
        "How the benches run: [`bench/README.md`](bench.md)."
    )
    assert "[`bench/README.md`](../bench.md)" in hooks._link_results(page, "results/race_brown.md")
    assert hooks._link_results(page, "results.md").endswith("```\n`bench/README.md`\n```\n")


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


def test_the_docs_install_the_teacher_stage_with_the_cpu_torch_as_the_readme_does():
    """pip's default torch on Linux is the CUDA build (several GB): a teacher install names the CPU index.

    ``scale`` (Ray) is left out: it is for machines with GPUs, where the CUDA build is the one wanted.
    """
    cpu = "pip install torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu -e"
    assert f"{cpu} " in (ROOT / "README.md").read_text("utf-8")
    lines = [
        (page.relative_to(ROOT).as_posix(), line)
        for page in sorted((ROOT / "docs").rglob("*.md"))
        for line in page.read_text("utf-8").splitlines()
        if "[teacher" in line and "pip install" in line
    ]
    assert len(lines) >= 3, lines  # getting-started, the extract guide, the architecture page
    assert [(page, line) for page, line in lines if cpu not in line] == []


def test_the_site_reads_offline_and_the_readme_builds_it_strictly():
    """Material loads Google Fonts unless told not to; offline they fail over to a slow timeout."""
    config = (ROOT / "mkdocs.yml").read_text("utf-8")
    assert "\n  font: false" in config.split("theme:")[1].split("\nmarkdown_extensions")[0]
    assert "mkdocs build\n--strict --site-dir ~/ctx2static-site" in (ROOT / "README.md").read_text("utf-8")
