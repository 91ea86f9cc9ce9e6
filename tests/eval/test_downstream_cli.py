"""The downstream family through the CLI and the study file: selection, output rows, one-line errors."""

import json
import lzma
import sys

import numpy as np
import pytest

from ctx2static.errors import UserError
from ctx2static.eval import Family, load_benchmarks
from ctx2static.eval.downstream import Task
from ctx2static.eval.downstream.data import SENTIMENT_FILES
from ctx2static.study.loader import load_study
from ctx2static.vectors import Vectors


def _write_xz(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lzma.compress(text.encode()))


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    """A data folder with two tiny sentiment sets, and vectors whose first dim is the polarity."""
    data = tmp_path / "downstream"
    words, signs = [], []
    for k, name in enumerate(SENTIMENT_FILES):
        lines = []
        for i in range(60):
            label = "pos" if i % 2 else "neg"
            text = " ".join(f"{label}{k}x{i}w{j}" for j in range(3))
            lines.append(f"{label}\t{text} unknownword")
            words += text.split()
            signs += [1.0 if label == "pos" else -1.0] * 3
        _write_xz(data / name, "\n".join(lines) + "\n")
    monkeypatch.setattr("ctx2static.eval.downstream.data.DOWNSTREAM_DIR", data)
    rng = np.random.default_rng(0)
    m = 0.1 * rng.standard_normal((len(words), 6))
    m[:, 0] += signs
    Vectors(words, m).save(tmp_path / "v.txt")
    return tmp_path


def test_downstream_rows_in_table_and_json(toy, cli_main):
    out = toy / "r.json"
    code, stdout, err = cli_main("eval", toy / "v.txt", "--downstream", "sentiment", "--json", out)
    assert code == 0, err
    rows = [line for line in stdout.splitlines() if line.startswith("sentiment-")]
    assert len(rows) == 2 and all(row.endswith("100.0 ±0.0 (75%)") for row in rows)  # 1 word of 4 unknown
    assert not [line for line in stdout.splitlines() if line.startswith("ws353")]  # downstream only
    assert "sentiment: mean of unit word vectors" in stdout
    data = json.loads(out.read_text())
    assert data["config"]["downstream_probes"]["sentiment_folds"] == 10
    (first, _) = data["results"][str(toy / "v.txt")]
    assert (
        first["family"] == "downstream"
        and first["std"] == 0.0
        and (first["covered"], first["total"]) == (180, 240)
    )


def test_a_missing_data_file_is_one_line(toy, cli_main):
    (toy / "downstream" / SENTIMENT_FILES[1]).unlink()
    code, _, err = cli_main("eval", toy / "v.txt", "--family", "downstream", "--downstream", "sentiment")
    assert code == 2 and err == (
        f"error: {toy / 'downstream' / SENTIMENT_FILES[1]}: missing downstream data file; "
        "reinstall ctx2static or run bench/data/prepare_downstream.py\n"
    )


def test_a_malformed_data_file_names_the_line(toy):
    _write_xz(toy / "downstream" / SENTIMENT_FILES[0], "pos\tgood film\nmaybe\tso so\n")
    with pytest.raises(UserError, match=r"sentiment-vader-movies.tsv.xz: line 2 is not 'pos\|neg<TAB>text'$"):
        load_benchmarks((Family.DOWNSTREAM,), tasks=(Task.SENTIMENT,))


def test_missing_scikit_learn_is_one_line(toy, monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn now raises ImportError
    with pytest.raises(
        UserError, match=r"^the downstream family needs scikit-learn: pip install 'ctx2static\[downstream\]'$"
    ):
        load_benchmarks((Family.DOWNSTREAM,), tasks=(Task.SENTIMENT,))


def test_downstream_runs_only_when_asked():
    assert all(b.__class__.__name__.endswith("Set") for b in load_benchmarks())
    assert Family.DOWNSTREAM.value == "downstream"


def _study(tmp_path, eval_table):
    (tmp_path / "corpus.txt").write_text("a b c\n")
    path = tmp_path / "study.toml"
    path.write_text(f'[corpus]\nfiles = ["corpus.txt"]\n\n[students.sgns]\n\n[eval]\n{eval_table}\n')
    return path


def _downstream(tasks):
    """The downstream tasks among ``tasks`` (those of other families are listed too, run only if asked)."""
    return tuple(t for t in tasks if t in tuple(Task))


def test_study_eval_keys(tmp_path):
    spec = load_study(_study(tmp_path, 'families = ["similarity", "downstream"]')).eval
    assert spec.downstream and _downstream(spec.tasks) == tuple(Task)
    spec = load_study(_study(tmp_path, 'downstream = ["pos", "ner"]')).eval
    assert spec.families[-1] is Family.DOWNSTREAM and _downstream(spec.tasks) == (Task.POS, Task.NER)
    assert not load_study(_study(tmp_path, "")).eval.downstream
    with pytest.raises(
        UserError,
        match=r"eval.downstream: 'tagging' is not a downstream task; choose from pos, ner, sentiment$",
    ):
        load_study(_study(tmp_path, 'downstream = ["tagging"]'))


def test_several_files_share_one_downstream_run(toy, monkeypatch, cli_main):
    # with two files the intrinsic sets are rescored on common items; the probes run once per file
    calls = []
    import ctx2static.eval.families as suite  # the downstream row calls it

    real = suite.evaluate_downstream
    monkeypatch.setattr(
        suite, "evaluate_downstream", lambda v, task: calls.append(task.name) or real(v, task)
    )
    Vectors.load(toy / "v.txt").save(toy / "copy")
    args = [
        "eval",
        str(toy / "v.txt"),
        str(toy / "copy"),
        "--family",
        "similarity",
        "--downstream",
        "sentiment",
    ]
    code, stdout, err = cli_main(*args)
    assert code == 0, err
    assert sorted(calls) == sorted(["sentiment-vader-movies", "sentiment-rt"] * 2)
    rows = [line.split() for line in stdout.splitlines() if line.startswith(("sentiment-", "ws353 "))]
    assert [r[0] for r in rows] == ["ws353", "sentiment-vader-movies", "sentiment-rt"]
    assert rows[1][-3:] == ["100.0", "±0.0", "(75%)"]
