"""report.py: the deltas table, the PCA projection, label placement, the Google pairs."""

from pathlib import Path

import numpy as np

from ctx2static.eval.results import Score
from ctx2static.retrofit.config import RetrofitConfig
from ctx2static.students.registry import student_config
from ctx2static.study.figures import _label_positions, google_pairs, pca_2d
from ctx2static.study.report import delta_table
from ctx2static.study.schema import CorpusSpec, RetrofitRun, StudentRun, Study


def _study() -> Study:
    students = (
        StudentRun("sgns", "sgns", student_config("sgns")),
        StudentRun("cbow", "cbow", student_config("cbow")),
        StudentRun("ctx", "ctx2vec", student_config("ctx2vec"), teacher="t"),
        StudentRun("x2", "x2static", student_config("x2static"), teacher="t"),
    )
    retro = (RetrofitRun("sgns+wn", "sgns", ("wordnet",), RetrofitConfig()),)
    return Study(Path("s.toml"), CorpusSpec((Path("c.txt"),)), {}, students, retro)


def _scores(ws: float, avg: float) -> list[Score]:
    return [Score("ws353", "similarity", "spearman", ws, 10, 20), Score("avg5", "summary", "mean", avg, 5, 9)]


def test_deltas_pair_each_student_with_its_plain_counterpart_avg5_first():
    results = {
        "sgns": _scores(40.0, 30.0),
        "cbow": _scores(50.0, 35.0),
        "ctx": _scores(45.5, 20.0),
        "x2": _scores(float("nan"), 36.0),
        "sgns+wn": _scores(42.0, 31.0),
    }
    header, rows = delta_table(_study(), results)
    assert header == ["benchmark", "metric", "ctx − sgns", "x2 − cbow", "sgns+wn − sgns"]
    assert rows == [["avg5", "mean", "-10.0", "+1.0", "+1.0"], ["ws353", "spearman", "+5.5", "n/a", "+2.0"]]


def test_pca_2d_recovers_a_line_and_a_plane():
    t = np.linspace(-1, 1, 7)
    x = (
        np.column_stack([3 * t, 0.5 * t**2, np.zeros(7)])
        @ np.linalg.qr(np.random.default_rng(0).normal(size=(3, 3)))[0]
    )
    xy, ratio = pca_2d(x)
    assert ratio[0] > 0.95 and np.isclose(ratio.sum(), 1.0)
    np.testing.assert_allclose(
        np.abs(xy[:, 0]), np.abs(3 * t - 0), atol=0.2
    )  # first axis = the spread along t


def test_labels_of_coinciding_points_are_pushed_apart():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    xy = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.5], [0.0, 1.0]])
    ax.scatter(xy[:, 0], xy[:, 1])
    pos = _label_positions(ax, xy, ["he", "his", "queen", "king"])
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    plt.close(fig)
    assert abs(pos[0, 1] - pos[1, 1]) >= 0.05  # the two labels no longer share a line
    lone = [(1 - x0) / (x1 - x0) + 0.015, (0.5 - y0) / (y1 - y0) + 0.01]
    np.testing.assert_allclose(pos[2], lone)  # a label with room stays beside its point


def test_google_family_pairs_are_male_then_female():
    pairs = google_pairs("family")
    assert ("boy", "girl") in pairs and ("king", "queen") in pairs and ("he", "she") in pairs
    assert len(pairs) == len(set(pairs)) and all(a != b for a, b in pairs)
