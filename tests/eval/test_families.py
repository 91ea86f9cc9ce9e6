"""The family registry: a row is all it takes for the CLI, a study and the suite to know a family."""

from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np
import pytest

from ctx2static.cli import family_options
from ctx2static.errors import UserError
from ctx2static.eval import evaluate, load_benchmarks
from ctx2static.eval.families import FAMILIES, FamilySpec
from ctx2static.eval.results import Score
from ctx2static.eval.suite import common_items, coverage
from ctx2static.study.loader import load_study
from ctx2static.vectors import Vectors


@dataclass(frozen=True)
class Words:
    """A dummy family's set: words, scored by how many the table holds."""

    name: str
    words: tuple[str, ...]


def _read(path):
    return Words(Path(path).stem, tuple(Path(path).read_text().split()))


def _found(vectors, bench, analogy):
    return np.array([vectors.row_of(w) is not None for w in bench.words])


def _score(vectors, bench, analogy, only):
    found = _found(vectors, bench, analogy) & (True if only is None else only)
    return [Score(bench.name, "dummy", "found", 100.0 * found.mean(), int(found.sum()), len(bench.words))]


@pytest.fixture()
def dummy(monkeypatch):
    """A file family ``dummy`` and a task family ``probe`` registered for the test only."""
    monkeypatch.setitem(
        FAMILIES, "dummy", FamilySpec("dummy", (Words,), _score, _found, read=_read, help="Extra word list.")
    )
    monkeypatch.setitem(
        FAMILIES,
        "probe",
        FamilySpec("probe", (), _score, load=lambda tasks: [], tasks=("t1", "t2"), task_noun="a probe task",
                   default=False),
    )  # fmt: skip


def _options():
    @click.command()
    @family_options
    def command(**kwargs):
        pass

    return {p.name: p for p in command.params}


def test_a_registered_family_gets_its_cli_options(dummy):
    params = _options()
    assert "dummy" in params["families"].type.choices and "probe" in params["families"].type.choices
    assert params["dummy"].multiple and params["dummy"].help == "Extra word list."
    assert list(params["probe"].type.choices) == ["t1", "t2"]
    assert "default: all but downstream, sentences, probe" in params["families"].help


def _study(tmp_path, eval_table):
    (tmp_path / "corpus.txt").write_text("a b c\n")
    (tmp_path / "mine.txt").write_text("a b zz\n")
    path = tmp_path / "study.toml"
    path.write_text(f'[corpus]\nfiles = ["corpus.txt"]\n\n[students.sgns]\n\n[eval]\n{eval_table}\n')
    return path


def test_a_registered_family_gets_its_study_keys(dummy, tmp_path):
    spec = load_study(_study(tmp_path, 'dummy = ["mine.txt"]\nprobe = ["t2"]')).eval
    assert spec.extra()["dummy"] == ((tmp_path / "mine.txt").resolve(),)
    assert spec.families[-1] == "probe" and "t2" in spec.tasks and "t1" not in spec.tasks
    with pytest.raises(UserError, match=r"eval.probe: 't3' is not a probe task; choose from t1, t2$"):
        load_study(_study(tmp_path, 'probe = ["t3"]'))


def test_a_study_key_of_no_family_is_refused(tmp_path):
    with pytest.raises(UserError, match=r"eval.dummy: unknown key"):
        load_study(_study(tmp_path, 'dummy = ["mine.txt"]'))


def test_the_suite_dispatches_through_the_registry(dummy, tmp_path):
    (tmp_path / "mine.txt").write_text("a b zz\n")
    benches = load_benchmarks(("dummy",), {"dummy": [tmp_path / "mine.txt"]})
    assert [type(b) for b in benches] == [Words]
    small = Vectors(["a", "b"], np.eye(2, dtype=np.float32))
    (score,) = evaluate(small, benches)
    assert (score.family, score.covered, score.total) == ("dummy", 2, 3)
    bigger = Vectors(["a", "zz"], np.eye(2, dtype=np.float32))
    assert common_items([small, bigger], benches, None)["mine"].tolist() == [True, False, False]


@dataclass(frozen=True)
class Unclaimed:
    name: str = "stray"


def test_an_unknown_family_name_is_an_error():
    with pytest.raises(UserError, match=r"'simularity' \(did you mean 'similarity'\?\); choose one of: "):
        load_benchmarks(("simularity",))
    with pytest.raises(UserError, match="unknown benchmark family 'lexicon'"):
        load_benchmarks(extra={"lexicon": ["words.txt"]})


def test_a_set_type_of_no_family_is_an_error():
    vectors = Vectors(["a"], np.ones((1, 2), dtype=np.float32))
    for run in (lambda: evaluate(vectors, [Unclaimed()]), lambda: coverage(vectors, Unclaimed(), None)):
        with pytest.raises(TypeError, match="Unclaimed is the set type of no evaluation family"):
            run()


def test_the_families_clash_with_no_other_eval_option_and_share_no_task():
    from ctx2static.cli import evaluate_command
    from ctx2static.eval.families import all_tasks

    names = [p.name for p in evaluate_command.params]
    assert set(FAMILIES) <= set(names) and len(names) == len(set(names))
    assert len(all_tasks()) == len(set(all_tasks()))
