import json
import re
import subprocess
import sys

import numpy as np
import pytest

from ctx2static.cli import evaluate_command
from ctx2static.errors import UserError
from ctx2static.eval import Family
from ctx2static.vectors import Vectors

WORDS = ["man", "king", "woman", "queen", "apple"]
GOOD = [[1, 0, 0], [0, 1, 0], [0.9, 0, 0.436], [0.3, 0.5, 0.8], [0, 0, -1]]


@pytest.fixture()
def files(tmp_path):
    Vectors(WORDS, np.array(GOOD, dtype=np.float32)).save(tmp_path / "good.txt")
    bad = np.array(GOOD, dtype=np.float32)[[0, 1, 2, 4, 3]]  # queen and apple swapped: analogy fails
    Vectors(WORDS, bad).save(tmp_path / "bad")
    (tmp_path / "sim.txt").write_text("man\tking\t1\nking\tqueen\t2\nwoman\tqueen\t3\nzebra\tman\t5\n")
    (tmp_path / "ana.txt").write_text(": family\nman king woman queen\nman king woman zebra\n")
    (tmp_path / "cat.csv").write_text(",category,word\n0,x,man\n1,x,woman\n2,y,apple\n3,y,zebra\n")
    return tmp_path


def test_two_vectors_side_by_side_table_json_markdown(files, cli_main):
    args = ["eval", files / "good.txt", files / "bad", "--no-bundled"]
    args += ["--similarity", files / "sim.txt", "--analogy", files / "ana.txt"]
    args += ["--categorization", files / "cat.csv", "--top-n", "5"]
    args += ["--json", files / "out" / "r.json", "--markdown", files / "out" / "r.md"]
    code, stdout, err = cli_main(*args)
    assert code == 0, err
    table = [re.split(r"\s{2,}", line.strip()) for line in stdout.splitlines()]
    assert table[0] == ["benchmark", "metric", "common", str(files / "good.txt"), str(files / "bad")]
    rows = {tuple(r[:2]): r[2:] for r in table[2:]}  # same words: the common items are each one's own
    assert rows["ana", "3CosAdd acc"] == ["50%", "100.0 (50%)", "0.0 (50%)"]
    assert rows["ana", "3CosMul acc"] == ["50%", "100.0 (50%)", "0.0 (50%)"]
    # good: cosines 0, .51, .63 follow gold 1, 2, 3; bad: cosines 0, 0, -.44 -> ranks 2.5, 2.5, 1 -> -0.866
    assert rows["sim", "spearman"] == ["75%", "100.0 (75%)", "-86.6 (75%)"]
    assert rows["cat", "purity (Ward)"] == ["75%", "100.0 (75%)", "100.0 (75%)"]
    assert "top N=5" in stdout and "Ward" in stdout
    data = json.loads((files / "out" / "r.json").read_text())
    assert data["config"]["analogy_top_n"] == 5
    good = {(s["benchmark"], s["metric"]): s for s in data["results"][str(files / "good.txt")]}
    assert good["sim", "spearman"] == {
        "benchmark": "sim",
        "family": "similarity",
        "metric": "spearman",
        "score": pytest.approx(100.0),
        "covered": 3,
        "total": 4,
    }
    md = (files / "out" / "r.md").read_text().splitlines()
    assert md[0] == f"| benchmark | metric | common | {files / 'good.txt'} | {files / 'bad'} |"
    assert "| ana | 3CosAdd acc | 50% | 100.0 (50%) | 0.0 (50%) |" in md
    assert not [p for p in (files / "out").iterdir() if p.name.startswith(".")]  # no temp files left


def test_bundled_similarity_reports_avg5(files, cli_main):
    code, stdout, err = cli_main("eval", files / "good.txt", "--family", "similarity")
    assert code == 0, err
    lines = stdout.splitlines()
    assert [line.split()[0] for line in lines[2:10]] == [
        "ws353",
        "ws353_sim",
        "ws353_rel",
        "simlex999",
        "men3k",
        "rw",
        "rg65",
        "mturk287",
    ]
    assert lines[10].startswith("avg5")
    assert "google" not in stdout


def test_family_choices_match_the_enum():
    family = next(p for p in evaluate_command.params if p.name == "families")
    assert list(family.type.choices) == [f.value for f in Family]


def test_files_with_different_words_are_compared_on_the_items_both_cover(files, cli_main):
    small = ["man", "king", "queen"]  # no woman
    Vectors(small, np.array(GOOD, dtype=np.float32)[[0, 1, 3]]).save(files / "small.txt")
    base = ["eval", files / "good.txt", files / "small.txt", "--no-bundled"]
    base += ["--similarity", files / "sim.txt"]
    code, out, _ = cli_main(*base)
    row = next(re.split(r"\s{2,}", line.strip()) for line in out.splitlines() if line.startswith("sim"))
    # both cover man-king and king-queen (50% of the pairs); good alone also covers woman-queen (75%)
    assert code == 0 and row[2:] == ["50%", "100.0 (75%)", "100.0 (50%)"]
    code, out, _ = cli_main(*base, "--items", "own")
    row = next(re.split(r"\s{2,}", line.strip()) for line in out.splitlines() if line.startswith("sim"))
    assert code == 0 and row[2:] == ["100.0 (75%)", "100.0 (50%)"]


def test_errors_are_one_line_naming_the_file(files, cli_main):
    (files / "broken.txt").write_text("a b c d\na b c\n")
    code, _, err = cli_main("eval", files / "good.txt", "--analogy", files / "broken.txt")
    assert code == 2
    assert err == f"error: {files / 'broken.txt'}: line 2 has 3 words; expected 'a b c d' (a:b :: c:d)\n"
    code, _, err = cli_main("eval", files / "good.txt", files / "missing.txt")
    assert code == 2
    assert err == f"error: {files / 'missing.txt'}: no such vectors file or folder\n"


def test_evaluation_does_not_import_torch(files):
    code = (
        "import sys\n"
        "from ctx2static.eval import evaluate, load_benchmarks, Family\n"
        "from ctx2static.vectors import Vectors\n"
        f"v = Vectors.load({str(files / 'good.txt')!r})\n"
        "evaluate(v, load_benchmarks((Family.CATEGORIZATION,)))\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_eval_command_is_evaluate_files_below_it(files, cli_main):
    from ctx2static.eval.files import evaluate_files

    good, sim = files / "good.txt", files / "sim.txt"
    code, stdout, err = cli_main("eval", good, "--no-bundled", "--similarity", sim)
    assert code == 0, err
    shown: list[str] = []
    evaluate_files([str(good)], shown.append, given={"similarity": [str(sim)]}, bundled=False)
    assert shown == [stdout]
    with pytest.raises(UserError, match=r"^no benchmarks to run: give .*--similarity.* with --no-bundled$"):
        evaluate_files([str(good)], shown.append, bundled=False)


def test_a_sentence_file_of_ones_own_is_a_row_named_after_it(files, cli_main):
    from ctx2static.eval.files import evaluate_files

    texts = [("people", "man woman"), ("people", "woman man"), ("fruit", "apple"), ("fruit", "apple apple")]
    (files / "kinds.tsv").write_text("".join(f"{label}\t{text}\n" for label, text in texts * 5))
    good, out = files / "good.txt", files / "r.json"
    code, stdout, err = cli_main("eval", good, "--sentences", files / "kinds.tsv", "--json", out)
    assert code == 0, err
    (row,) = json.loads(out.read_text())["results"][str(good)]
    assert (row["benchmark"], row["family"], row["covered"]) == ("kinds", "sentences", 20)
    assert row["score"] == 100.0
    shown: list[str] = []
    evaluate_files([str(good)], shown.append, given={"sentences": [str(files / "kinds.tsv")]})
    assert shown == [stdout]


def test_an_avg5_on_too_few_items_is_answered_with_what_compares():
    from ctx2static.eval.results import Score
    from ctx2static.eval.suite import avg5_fallback

    def scores(shift: float, rg65: int) -> list[Score]:
        full = [Score(b, "similarity", "spearman", 60.0 + shift, 100, 300) for b in ("ws353", "simlex999")]
        thin = Score("rg65", "similarity", "spearman", 90.0, rg65, 65)
        return [*full, thin, Score("avg5", "summary", "mean spearman", float("nan"), 200 + rg65, 665)]

    [line] = avg5_fallback({"a/": scores(0.0, 15), "b/": scores(5.0, 15)})
    assert line == (
        "avg5 n/a: rg65 (15 items), fewer than the 20 a score needs; instead avg2: the mean Spearman of "
        "ws353, simlex999, not avg5: a/ 60.0, b/ 65.0"
    )
    assert avg5_fallback({"a/": scores(0.0, 30)}) == []  # no thin set: nothing to explain
