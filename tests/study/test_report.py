"""report.py: the deltas table, the PCA projection, label placement, the Google pairs."""

from pathlib import Path

import numpy as np

from ctx2static.eval.results import Score
from ctx2static.retrofit.config import RetrofitConfig
from ctx2static.students.registry import student_config
from ctx2static.study.figures import _declutter, google_pairs, pca_2d
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


def _scores(ws: float, avg: float, rg65: int = 30) -> list[Score]:
    return [
        Score("ws353", "similarity", "spearman", ws, 200, 353),
        Score("rg65", "similarity", "spearman", 50.0, rg65, 65),
        Score("avg5", "summary", "mean", avg, 900, 1500),
    ]


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
    assert rows == [
        ["avg5", "mean", "-10.0", "+1.0", "+1.0"],
        ["ws353", "spearman", "+5.5", "n/a", "+2.0"],
        ["rg65", "spearman", "+0.0", "+0.0", "+0.0"],
    ]


def test_no_delta_rests_on_too_few_items():
    results = {n: _scores(40.0, 30.0, rg65=6) for n in ("sgns", "cbow", "ctx", "x2", "sgns+wn")}
    _, rows = delta_table(_study(), results)
    assert rows[-1] == ["rg65", "spearman", "n/a", "n/a", "n/a"]  # 6 pairs: a difference would mean nothing


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


def test_labels_of_coinciding_points_are_pushed_apart_inside_the_panel():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    xy = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 0.5], [0.0, 1.0], [1.0, 1.0]])
    ax.scatter(xy[:, 0], xy[:, 1])
    words = ["he", "his", "him", "queen", "king", "grandmother"]
    labels = [
        ax.annotate(
            w,
            p,
            xytext=(0.5, 0.5) if i < 3 else (0.95 if w == "grandmother" else 0.2, 0.8 - 0.3 * i / 6),
            textcoords="axes fraction",
            fontsize=9,
        )
        for i, (w, p) in enumerate(zip(words, xy, strict=True))
    ]
    lone_before = labels[3].xyann
    _declutter(ax, labels)
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in labels]
    frame = ax.get_window_extent(renderer)
    plt.close(fig)
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            assert not boxes[i].overlaps(boxes[j]), (
                words[i],
                words[j],
            )  # no two labels print over each other
    assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 + 0.5 and b.y1 <= frame.y1 + 0.5 for b in boxes)
    np.testing.assert_allclose(labels[3].xyann, lone_before)  # a label with room stays where it was


def test_google_family_pairs_are_male_then_female():
    pairs = google_pairs("family")
    assert ("boy", "girl") in pairs and ("king", "queen") in pairs and ("he", "she") in pairs
    assert len(pairs) == len(set(pairs)) and all(a != b for a, b in pairs)


def _family_scores(avg: float, analogy: tuple[float, float], sentences: float, pos: float) -> list[Score]:
    return [
        Score("ws353", "similarity", "spearman", avg + 1, 300, 353),
        Score("avg5", "summary", "mean spearman", avg, 900, 1500),
        Score("google", "analogy", "3CosAdd acc", analogy[0], 500, 1000),
        Score("google", "analogy", "3CosMul acc", analogy[1], 500, 1000),
        Score("sentences-mean", "summary", "mean accuracy", sentences, 90, 100),
        Score("pos", "downstream", "accuracy", pos, 900, 1000, std=0.5),
    ]


def test_the_summary_names_the_best_output_per_family_and_what_to_use():
    from ctx2static.study.report import summary_lines

    results = {
        "sgns": _family_scores(40.0, (30.0, 31.0), 70.0, 90.0),
        "x2": _family_scores(55.0, (35.0, 33.0), 72.0, 89.0),
        "ase": _family_scores(50.0, (20.0, 21.0), 71.0, 91.0),
    }
    lines = summary_lines(results)
    assert "items every output covers" in lines[0] and "small share" in lines[0]
    similarity = "- **similarity**: **x2** 55.0 (mean Spearman of the five similarity sets (avg5); next: ase "
    assert similarity + "50.0)" in lines
    assert "- **analogy**: **x2** 34.0 (mean accuracy of the analogy scores; next: sgns 30.5)" in lines
    assert any(ln.startswith("- **sentences**: **x2** 72.0") for ln in lines)
    assert any(ln.startswith("- **downstream**: **ase** 91.0") for ln in lines)
    use = "**What to use**: x2 (best on 3 of 4 families: similarity, analogy, sentences); for downstream: "
    assert use + "ase." in lines


def test_a_thin_or_missing_score_wins_nothing():
    from ctx2static.study.report import summary_lines

    thin = _family_scores(90.0, (90.0, 90.0), 90.0, 90.0)
    thin[1] = Score("avg5", "summary", "mean spearman", 90.0, 3, 1500)  # n/a: 3 of 1,500 pairs
    no_analogy = _family_scores(30.0, (0.0, 0.0), 0.0, 0.0)[:2]
    results = {"a": _family_scores(40.0, (30.0, 31.0), 70.0, 90.0), "b": thin, "c": no_analogy}
    lines = summary_lines(results)
    assert any(ln.startswith("- **similarity**: **a** 40.0") for ln in lines)
    assert any(ln.startswith("- **analogy**: **b** 90.0") for ln in lines)  # c has no analogy score


def test_the_best_cell_of_each_row_is_bold_ties_too():
    from ctx2static.study.report import best_markdown

    def scores(ws: float, avg: float) -> list[Score]:
        return [Score("ws353", "similarity", "s", ws, 200, 353), Score("avg5", "s", "m", avg, 900, 1500)]

    common = {"a": scores(40.0, 30.0), "b": scores(50.0, 30.04), "c": scores(float("nan"), 20.0)}
    text = best_markdown(common, [], common)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert rows["ws353"].count("**") == 2 and "**50.0 (56%)**" in rows["ws353"]
    assert rows["avg5"].count("**") == 4 and "**30.0 (60%)**" in rows["avg5"]  # a tie as shown: both
    assert "- bold: the best score of the row" in text


def test_without_an_avg5_similarity_is_compared_on_the_sets_with_enough_items():
    from ctx2static.eval.results import Score
    from ctx2static.study.report import summary_lines

    def scores(shift: float) -> list[Score]:
        full = [Score(b, "similarity", "spearman", 60.0 + shift, 100, 300) for b in ("ws353", "simlex999")]
        thin = Score("rg65", "similarity", "spearman", 100.0 - shift, 6, 65)  # few pairs: n/a
        return [*full, thin, Score("avg5", "summary", "mean spearman", float("nan"), 206, 665)]

    text = "\n".join(summary_lines({"a": scores(0.0), "b": scores(5.0)}))
    assert (
        "**similarity**: **b** 65.0 (avg2: the mean Spearman of ws353, simlex999, not avg5; next: a 60.0)"
        in text
    )


def _thin_rg65(shift: float, coverage: int = 100) -> list[Score]:
    full = [Score(b, "similarity", "spearman", 60.0 + shift, coverage, 300) for b in ("ws353", "simlex999")]
    thin = Score("rg65", "similarity", "spearman", 100.0, 6, 65)
    return [*full, thin, Score("avg5", "summary", "mean spearman", float("nan"), 206, 665)]


def test_the_report_opens_on_each_outputs_similarity_named_for_what_it_is():
    from ctx2static.eval.comparison import Comparison
    from ctx2static.study.report import headline_lines

    common = {"a": _thin_rg65(0.0), "b": _thin_rg65(5.0)}
    own = {"a": _thin_rg65(1.0, coverage=150), "b": _thin_rg65(5.0)}
    text, _, header, _, a, b, *_ = headline_lines(Comparison(common, own))
    assert (
        "avg5 cannot be computed on the items every output covers: rg65 (6 items) has fewer than the 20"
        in text
    )
    assert "gives avg2: the mean Spearman of ws353, simlex999, not avg5" in text
    assert header == "| output | avg2, common items | avg2, its own items |"
    assert (
        a == "| a | 60.0 (33%) | 61.0 (50%) |" and b == "| b | 65.0 (33%) | 65.0 (33%) |"
    )  # each own coverage


def test_what_to_use_is_the_readmes_first_try_with_its_folder_and_the_next_command():
    from ctx2static.study.layout import StudyLayout
    from ctx2static.study.report import summary_lines

    results = {"ase": _thin_rg65(0.0), "x2": _thin_rg65(2.5)}
    lines = summary_lines(results, ["ase"], StudyLayout(Path("runs/default")))
    assert lines[-2] == (
        "**What to use**: ase, the README's first try for word similarity and analogy; here x2 is 2.5 "
        "higher on similarity. Its vectors: `runs/default/vectors/ase`; next: "
        "`ctx2static export runs/default/vectors/ase --format model2vec -o runs/default/exports/ase-m2v`."
    )
    spaced = summary_lines(results, ["ase"], StudyLayout(Path("my runs/a")))[-2]
    assert (
        "`ctx2static export 'my runs/a/vectors/ase' --format model2vec -o 'my runs/a/exports/ase-m2v'`"
        in spaced
    )
    assert summary_lines(results)[-2] == "**What to use**: x2 (best on 1 of 1 families: similarity)."


def test_where_the_outputs_are_names_the_vectors_and_the_disk(tmp_path):
    from ctx2static.study.layout import StudyLayout
    from ctx2static.study.report import where_lines

    layout = StudyLayout(tmp_path / "run")
    layout.cache("t").mkdir(parents=True)
    (layout.cache("t") / "shard.npy").write_bytes(b"0" * 3_000_000)
    layout.vectors("ase").mkdir(parents=True)
    (layout.vectors("ase") / "vectors.npy").write_bytes(b"0" * 1_000_000)
    vectors, disk = where_lines(layout)
    assert f"`{layout.vectors_dir}/`" in vectors
    assert disk.startswith(f"- disk: 4 MB in `{layout.root}/`, 3 MB of it the teacher caches")


def test_the_summary_says_downstream_scores_every_token_only_where_it_ran():
    from ctx2static.study.report import summary_lines

    results = {
        "sgns": _family_scores(40.0, (30.0, 31.0), 70.0, 90.0),
        "x2": _family_scores(55.0, (35.0, 33.0), 72.0, 89.0),
    }
    assert "downstream and sentences score each output on every token." in summary_lines(results)[0]
    plain = {
        n: [s for s in found if s.benchmark not in ("pos", "sentences-mean")] for n, found in results.items()
    }
    assert "token" not in summary_lines(plain)[0]


def test_the_report_says_what_each_output_is_compared_with_and_why():
    from ctx2static.study.report import _baseline_reasons

    reasons = _baseline_reasons(_study())
    assert reasons[0].startswith("- ctx against sgns: skip-gram, word2vec's default")
    assert reasons[1] == "- sgns+wn against sgns: its input, so the delta is the retrofit's"
    assert reasons[2].startswith("- x2 against cbow: CBOW, the plain recipe that fits a word to the mean")


def test_the_report_defines_its_outputs_and_every_set_and_term_it_shows():
    from ctx2static.study.report import term_lines

    shown = ["| ws353 | spearman | 50.0 |", "| essli2008 | purity (Ward) | 40.0 |", "| google/semantic | x |"]
    lines = term_lines(_study(), shown)
    assert lines[0] == "## Terms" and "Glossary" in lines[2]
    assert "- **x2**: x2static, X2Static (sent/para), from teacher t's cache" in lines
    assert "- **sgns**: skip-gram, negative sampling, from the corpus text" in lines
    assert any(line.startswith("- **sgns+wn**: sgns retrofitted (faruqui) to wordnet") for line in lines)
    named = [line.split("**")[1] for line in lines[4:]]
    assert {"ws353", "essli2008", "google", "spearman", "purity"} <= set(named)
    assert "online NS loss" in named  # sgns's curve in curves.png
    assert "rw" not in named and "msr" not in named  # not shown: not defined
