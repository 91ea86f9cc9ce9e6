"""Evaluation: word similarity, analogy, relation similarity, concept categorization.

Needs numpy and scipy only (no torch). Entry point: :func:`evaluate`.
"""

from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.benchmarks import Family, load_benchmarks
from ctx2static.eval.results import Score
from ctx2static.eval.suite import evaluate

__all__ = ["AnalogyConfig", "Family", "Score", "evaluate", "load_benchmarks"]
