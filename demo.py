"""The end-to-end job on the bundled demo corpus (the README's first command).

corpus -> student -> vectors -> retrofit -> eval, every output under one folder. A step whose
output already exists is skipped, so an interrupted demo resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ctx2static.eval import evaluate, load_benchmarks
from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.benchmarks import Family
from ctx2static.eval.results import Score, format_text, write_markdown
from ctx2static.eval.suite import notes
from ctx2static.pipeline.corpus import Corpus
from ctx2static.resources import DEMO_CORPUS
from ctx2static.retrofit.config import RetrofitConfig
from ctx2static.retrofit.solver import retrofit_vectors
from ctx2static.students.registry import fit_text_student
from ctx2static.vectors import Vectors

Echo = Callable[[str], None]


def _step(path: Path, what: str, make: Callable[[], Vectors], echo: Echo) -> Path:
    if path.exists():
        echo(f"demo: {path} exists, skipping {what} (delete it to redo)")
    else:
        echo(f"demo: {what}")
        make().save(path)
    return path


def run_demo(out: Path, epochs: int = 5, corpus_path: Path = DEMO_CORPUS, echo: Echo = print) -> str:
    """Train SGNS on the demo corpus, retrofit it to WordNet, evaluate both; return the table."""
    out.mkdir(parents=True, exist_ok=True)
    corpus = Corpus([corpus_path])
    sgns = _step(
        out / "sgns.bin",
        f"skip-gram on {corpus_path.name} ({epochs} epochs)",
        lambda: fit_text_student("sgns", corpus, overrides={"epochs": epochs}, echo=echo),
        echo,
    )
    retro = _step(
        out / "sgns+wordnet.bin",
        "retrofitting to the bundled WordNet synonyms (Faruqui et al. 2015)",
        lambda: retrofit_vectors(Vectors.load(sgns), ["wordnet"], RetrofitConfig())[0],
        echo,
    )
    analogy = AnalogyConfig()
    benchmarks = load_benchmarks(tuple(Family), {}, bundled=True)
    results: dict[str, list[Score]] = {}
    for path in (sgns, retro):
        results[path.name] = evaluate(Vectors.load(path), benchmarks, analogy)
    write_markdown(out / "results.md", results, notes(analogy))
    return format_text(results, notes(analogy))
