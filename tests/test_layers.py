"""The import layers: cli -> study -> {pipeline, students, retrofit, eval, export} -> cache -> text -> ground.

Read from the sources with ``ast`` (imports inside functions count too): a module may import its
own package and any lower layer, never a higher one; the packages of the middle layer never import
each other (students never see the teacher stage); nothing imports the CLI; there is no circle.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = [
    {"cli", "api", "api_options", "api_options_gen"},
    {"study"},
    {"pipeline", "students", "retrofit", "eval", "export"},
    {"cache"},
    {"text"},
    {
        "vectors",
        "transforms",
        "teachers",
        "composer",
        "words",
        "fileio",
        "errors",
        "options",
        "threads",
        "resources",
        "memory",
        "interrupts",
        "console",
    },
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}


def _modules() -> dict[str, Path]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("tests", "bench", "data", "docs", "build", "runs") or rel.parts[0][0] == ".":
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(["ctx2static", *parts])] = path
    return mods


def _imports(path: Path, mods: dict[str, Path]) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            while name and name not in mods:
                name = name.rpartition(".")[0]
            if name:
                out.add(name)
    return out


def _unit(module: str) -> str:
    """The layer unit of a module: its top-level package or module under ctx2static."""
    return module.split(".")[1] if "." in module else ""


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: _imports(p, mods) - {m} for m, p in mods.items()}


def test_every_module_has_a_layer():
    units = {_unit(m) for m in _graph()} - {""}
    assert units <= set(LAYER), f"modules outside the layer table: {units - set(LAYER)}"


def _violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for mod, deps in graph.items():
        if not _unit(mod):
            continue  # the package root only re-exports lazily
        for dep in deps:
            a, b = _unit(mod), _unit(dep)
            if b == "cli":
                bad.append(f"{mod} imports the CLI")
            elif b and a != b and (LAYER[b] < LAYER[a] or LAYER[a] == LAYER[b] == 2):
                bad.append(f"{mod} imports {dep}")
    return sorted(bad)


def test_no_module_imports_upward_or_across_the_middle_layer():
    bad = _violations(_graph())
    assert not bad, "\n".join(bad)


def test_the_check_catches_violations():
    graph = {
        "ctx2static.students.x": {"ctx2static.pipeline.teacher", "ctx2static.cache.reader"},
        "ctx2static.cache.reader": {"ctx2static.study.runner"},
        "ctx2static.study.runner": {"ctx2static.cli"},
    }
    assert _violations(graph) == [
        "ctx2static.cache.reader imports ctx2static.study.runner",
        "ctx2static.students.x imports ctx2static.pipeline.teacher",
        "ctx2static.study.runner imports the CLI",
    ]


def test_no_import_circles():
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not circles, circles


def test_every_package_is_in_the_distribution():
    """A package folder left out of pyproject's list would install without it (a non-editable install)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {m for m, p in _modules().items() if p.name == "__init__.py"}
    assert packages == listed


def _architecture_rows() -> list[tuple[int, str]]:
    """(layer index, row text) of the layer table in docs/design/architecture.md, top to bottom."""
    names = {"top": 0, "study": 1, "stages": 2, "cache": 3, "text": 4, "ground": 5}
    rows, layer = [], -1
    for line in (ROOT / "docs" / "design" / "architecture.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) < 3 or cells[0] not in {*names, ""}:
            continue
        layer = names[cells[0]] if cells[0] else layer
        rows.append((layer, line))
    return rows


def test_the_architecture_page_shows_every_module_in_its_layer():
    """Each module is named in the page's row of the layer the import test puts it in."""
    rows = _architecture_rows()
    assert [layer for layer, _ in rows] == sorted(layer for layer, _ in rows) and len(rows) >= 6
    astray = []
    for module in _modules():
        parts = module.split(".")[1:]
        if not parts:
            continue
        unit, name = parts[0], parts[-1]
        shown = (
            [f"`{name}`", f"`{name}.py`", f"`{name}/`"] if len(parts) > 1 else [f"`{unit}/`", f"`{unit}.py`"]
        )
        if not any(layer == LAYER[unit] and any(s in row for s in shown) for layer, row in rows):
            astray.append(module)
    assert not astray, f"not in their layer's row of docs/design/architecture.md: {astray}"


LAYER_NAMES = ["top", "study", "stages", "cache", "text", "ground"]


def import_table() -> list[str]:
    """The rows of architecture.md's "Who imports whom": each unit, its layer and the units it imports."""
    units: dict[str, set[str]] = {}
    for module, deps in _graph().items():
        unit = _unit(module)
        if unit:
            units.setdefault(unit, set()).update(u for d in deps if (u := _unit(d)) and u != unit)
    rows = []
    for unit in sorted(units, key=lambda u: (LAYER[u], u)):
        deps = ", ".join(f"`{d}`" for d in sorted(units[unit], key=lambda d: (LAYER[d], d))) or "nothing"
        rows.append(f"| `{unit}` | {LAYER_NAMES[LAYER[unit]]} | {deps} |")
    return rows


def test_the_architecture_page_draws_the_import_graph_as_it_is():
    """Its "Who imports whom" table is the one the sources give (regenerate it with import_table())."""
    page = (ROOT / "docs" / "design" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Who imports whom", 1)[1].split("\n## ", 1)[0]
    shown = [line for line in section.splitlines() if line.startswith("| `")]
    assert shown == import_table()
