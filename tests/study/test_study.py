"""`run`: a study file runs extract -> students -> retrofit -> eval -> report, skipping what is done."""

import logging
from pathlib import Path

import pytest

from ctx2static.errors import UserError
from ctx2static.memory import PeakRss
from ctx2static.resources import DEFAULT_STUDY
from ctx2static.study import report, runner
from ctx2static.study.layout import StudyLayout
from ctx2static.study.loader import load_study
from ctx2static.study.runner import run_study
from ctx2static.vectors import Vectors

PNG = b"\x89PNG\r\n\x1a\n"
SENTENCES = [
    "the king and the queen sat in the old garden .",
    "he saw his father and she saw her mother .",
    "the man and the woman read long books .",
    "a boy and a girl ran past the quiet river .",
    "his son and her daughter sang near the tree .",
    "the cat sat on the mat every morning .",
]


@pytest.fixture(scope="module")
def teacher(tiny_models) -> Path:
    return tiny_models["bert"]


def _write(tmp_path: Path, teacher: Path, sgns_epochs: int = 2, max_sentences: int = 0) -> Path:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(SENTENCES) for _ in range(20)) + "\n")
    (tmp_path / "syn.txt").write_text("king queen\nboy girl\nman woman\n")
    study = tmp_path / "study.toml"
    study.write_text(
        f"""
[corpus]
files = ["corpus.txt"]
min_count = 1

[teachers.tiny]
model = "{teacher}"
vectors = true
max_sentences = {max_sentences}

[students.sgns]
options = {{ dim = 8, epochs = {sgns_epochs}, threads = 1, sample = 0.0 }}

[students.ase]
teacher = "tiny"

[[retrofit]]
vectors = "sgns"
lexicons = ["syn.txt"]

[eval]
families = ["similarity"]

[report]
words = ["king", "while"]
neighbours = 3
"""
    )
    return study


def _run(study, out, caplog):
    """Run the study; return its results and the runner's step messages."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ctx2static"):
        results = run_study(study, out)
    return results, [r.getMessage() for r in caplog.records if r.name.startswith("ctx2static.study")]


def _mtimes(out: Path) -> dict[str, int]:
    return {str(p.relative_to(out)): p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_run_writes_every_output_and_a_rerun_skips_every_step(tmp_path, teacher, caplog):
    study = load_study(_write(tmp_path, teacher))
    out = tmp_path / "run"
    results, log = _run(study, out, caplog)
    assert list(results.common) == list(results.own) == ["sgns", "ase", "sgns+syn"]
    assert all(any(s.benchmark == "avg5" for s in scores) for scores in results.common.values())
    for name in results.own:
        assert (out / "vectors" / name / "vectors.npy").is_file()
        assert (out / "eval" / f"{name}.json").is_file() and (out / "eval" / f"{name}.common.json").is_file()
    # the main table scores every output on the same items; ase covers fewer words than sgns
    for bench in ("ws353", "men3k"):
        counts = {n: next(s.covered for s in v if s.benchmark == bench) for n, v in results.common.items()}
        own = {n: next(s.covered for s in v if s.benchmark == bench) for n, v in results.own.items()}
        assert len(set(counts.values())) == 1 and counts["ase"] == own["ase"] <= own["sgns"]
    assert (out / "caches" / "tiny" / "manifest.json").is_file()
    report = (out / "report.md").read_text()
    assert "| benchmark | metric | common | sgns | ase | sgns+syn |" in report  # common items
    summary = report.split("## Summary\n\n")[1].split("## Results")[0]
    assert "**What to use**: " in summary or "Fewer than two outputs have a usable score" in summary
    assert "| benchmark | metric | sgns | ase | sgns+syn |" in report  # each on its own items
    assert "peak RSS (MiB)" in report
    assert "| ase − sgns | sgns+syn − sgns |" in report  # deltas against the plain baseline and the input
    assert "**king**" in report and "(not in the vocabulary)" in report  # 'while' is not in this corpus
    assert "king/queen" in report and "extract tiny" in report and "bytes/token" in report
    for png in ("pairs.png", "curves.png"):
        assert (out / png).read_bytes()[:8] == PNG
        assert f"]({png})" in report
    assert any(line.startswith("run extract tiny") for line in log)

    before = _mtimes(out)
    again, log = _run(load_study(tmp_path / "study.toml"), out, caplog)
    steps = [line for line in log if not line.startswith("report:")]
    assert steps and all(line.startswith("skip ") for line in steps), steps
    assert not any("extract" in line for line in log)  # every student is done: the cache is not even opened
    changed = {k for k, t in _mtimes(out).items() if before.get(k) != t}
    rewritten = {"report.md", "results.md", "pairs.png", "curves.png", "study.toml", ".lock"}  # .lock: holder
    assert changed <= rewritten
    assert {k: [s.cell() for s in v] for k, v in again.common.items()} == {
        k: [s.cell() for s in v] for k, v in results.common.items()
    }


@pytest.mark.slow
def test_changing_an_option_redoes_only_what_depends_on_it(tmp_path, teacher, caplog):
    out = tmp_path / "run"
    run_study(load_study(_write(tmp_path, teacher)), out)
    _, log = _run(load_study(_write(tmp_path, teacher, sgns_epochs=3)), out, caplog)
    steps = {line.split(":")[0] for line in log if line.startswith(("run ", "redo ", "skip "))}
    assert steps == {
        "redo student sgns (sgns)",
        "redo retrofit sgns+syn",
        "run eval sgns",
        "run eval sgns+syn",
        "skip student ase (ase)",
        "skip eval ase",
        "run eval sgns (common items)",  # the items all outputs cover are the same: ase's stay valid
        "run eval sgns+syn (common items)",
        "skip eval ase (common items)",
    }

    _, log = _run(load_study(_write(tmp_path, teacher, sgns_epochs=3, max_sentences=50)), out, caplog)
    assert any(line.startswith("redo extract tiny") for line in log)
    assert any(line.startswith("redo student ase") for line in log)
    assert any(line.startswith("skip student sgns") for line in log)


@pytest.mark.slow
def test_a_deleted_output_is_rebuilt_with_everything_downstream(tmp_path, teacher, caplog):
    import shutil

    out = tmp_path / "run"
    study = load_study(_write(tmp_path, teacher))
    run_study(study, out)
    shutil.rmtree(out / "vectors" / "sgns")
    _, log = _run(study, out, caplog)
    steps = {line.split(":")[0] for line in log if line.startswith(("run ", "redo "))}
    assert steps == {
        "run student sgns (sgns)",
        "redo retrofit sgns+syn",
        "run eval sgns",
        "run eval sgns+syn",
        "run eval sgns (common items)",
        "run eval sgns+syn (common items)",
    }


def test_a_reference_is_evaluated_and_reported_and_redone_when_its_file_changes(tmp_path, caplog):
    import numpy as np

    from ctx2static.eval import evaluate, load_benchmarks
    from ctx2static.eval.analogy import AnalogyConfig
    from ctx2static.eval.benchmarks import Family
    from ctx2static.vectors import Vectors

    (tmp_path / "corpus.txt").write_text("\n".join(SENTENCES * 20) + "\n")
    words = ["king", "queen", "man", "woman", "boy", "girl", "cat", "tree"]
    peer = tmp_path / "peer" / "m2v.bin"
    peer.parent.mkdir()
    Vectors(words, np.random.default_rng(0).normal(size=(8, 6)), None, {"train_seconds": 12.5}).save(peer)
    study = tmp_path / "study.toml"
    study.write_text(
        '[corpus]\nfiles = ["corpus.txt"]\nmin_count = 1\n'
        "[students.sgns]\noptions = { dim = 8, epochs = 1, threads = 1 }\n"
        '[references.m2v]\nvectors = "peer/m2v.bin"\n[eval]\nfamilies = ["similarity"]\n'
    )
    out = tmp_path / "run"
    results, log = _run(load_study(study), out, caplog)
    assert list(results.own) == ["sgns", "m2v"] and "run reference m2v" in log
    direct = evaluate(Vectors.load(peer), load_benchmarks((Family.SIMILARITY,)), AnalogyConfig())
    assert [s.cell() for s in results.own["m2v"]] == [s.cell() for s in direct]
    assert any(s.coverage > 0 for s in direct)  # king/queen, man/woman ... are scored
    report = (out / "report.md").read_text()
    assert f"Reference (not trained): m2v = {peer}." in report
    assert "| reference m2v | " in report and " | 12.5 | " in report
    assert "m2v −" not in report  # a reference has no baseline: no delta column

    _, log = _run(load_study(study), out, caplog)
    assert "skip reference m2v" in " ".join(log) and not any(line.startswith("run ") for line in log)
    Vectors(words, np.ones((8, 6)), None, {}).save(peer)
    _, log = _run(load_study(study), out, caplog)
    steps = {line.split(":")[0] for line in log if line.startswith(("run ", "redo ", "skip "))}
    assert steps == {
        "skip student sgns (sgns)",
        "redo reference m2v",
        "skip eval sgns",
        "run eval m2v",
        "skip eval sgns (common items)",  # the same words: the common items did not change
        "run eval m2v (common items)",
    }


def test_a_combination_is_made_after_the_students_and_evaluated_like_one(tmp_path, caplog):
    (tmp_path / "corpus.txt").write_text("\n".join(SENTENCES * 20) + "\n")
    study = tmp_path / "study.toml"
    text = (
        '[corpus]\nfiles = ["corpus.txt"]\nmin_count = 1\n'
        "[students.sgns]\noptions = { dim = 8, epochs = 1, threads = 1 }\n"
        "[students.cbow]\noptions = { dim = 6, epochs = 1, threads = 1 }\n"
        '[combine.both]\ninputs = ["sgns", "cbow"]\n[eval]\nfamilies = ["similarity"]\n'
    )
    study.write_text(text)
    out = tmp_path / "run"
    results, log = _run(load_study(study), out, caplog)
    assert list(results.own) == ["sgns", "cbow", "both"] and "run combine both" in log
    both = Vectors.load(out / "vectors" / "both")
    assert both.dim == 14 and both.meta["combine"]["inputs"][1]["path"] == str(out / "vectors" / "cbow")
    report = (out / "report.md").read_text()
    assert "| combine both | " in report and "both − sgns" in report  # against its first input
    study.write_text(text.replace('"cbow"]', '"cbow"]\ndim = 4'))
    _, log = _run(load_study(study), out, caplog)
    ran = {line.split(":")[0] for line in log if line.startswith(("run ", "redo "))}
    assert ran == {"redo combine both", "run eval both", "run eval both (common items)"}
    assert Vectors.load(out / "vectors" / "both").dim == 4


@pytest.mark.parametrize(
    "text,message",
    [
        ("[corpus\n", "not valid TOML"),
        (
            '[corpus]\nfiles = ["c.txt"]\n[students.sgns]\n[combine.both]\ninputs = ["sgns", "cbw"]\n',
            "combine.both.inputs[1]: no student, reference or retrofit named 'cbw' in the study",
        ),
        (
            '[corpus]\nfiles = ["c.txt"]\n[students.sgns]\n[combine.both]\ninputs = ["sgns"]\n',
            "combine.both: combine needs at least two vectors inputs, got 1 (sgns)",
        ),
        (
            '[corpus]\nfiles = ["c.txt"]\n[students.sgns]\n[combine.both]\ninput = ["sgns"]\n',
            "combine.both.input: unknown key (did you mean 'inputs'?)",
        ),
        (
            '[corpus]\nfiles = ["c.txt"]\n[students.sgns]\n[students.cbow]\n[combine.both]\n'
            'inputs = ["sgns", "cbow"]\nmethod = "max"\n',
            'combine.both: method = "max": choose one of concat, mean',
        ),
        (
            '[corpus]\nfiles = ["c.txt"]\nmin_cout = 3\n[students.sgns]\n',
            "corpus.min_cout: unknown key (did you mean 'min_count'?)",
        ),
        (
            '[corpus]\nfiles = ["missing.txt"]\n[students.sgns]\n',
            "corpus.files[0]: missing.txt: no such file",
        ),
        (
            '[corpus]\nfiles = ["c.txt"]\n[students.sgnss]\n',
            "students.sgnss.student: unknown student 'sgnss' (did you mean 'sgns'?)",
        ),
        (
            '[corpus]\nfiles = ["c.txt"]\n[students.sgns]\noptions = { negatives = 3 }\n',
            "students.sgns.options: sgns has no option 'negatives' (did you mean 'negative'?)",
        ),
        ('[corpus]\nfiles = ["c.txt"]\n[students.ase]\n', "students.ase.teacher: missing"),
        (
            '[corpus]\nfiles = ["c.txt"]\n[teachers.t]\nvector = true\n[students.ase]\nteacher = "t"\n',
            "teachers.t.vector: unknown key (did you mean 'vectors'?)",
        ),
        (
            '[corpus]\nfiles = ["c.txt"]\n[teachers.t]\nprecision = "half"\n[students.ase]\nteacher = "t"\n',
            'teachers.t: precision = "half": choose one of auto, float32, bfloat16, float16',
        ),
        (
            '[corpus]\nfiles = ["c.txt"]\n[students.sgns]\n[[retrofit]]\nvectors = "cbow"\n',
            "retrofit[0].vectors: no student named 'cbow'",
        ),
        (
            '[corpus]\nfiles = ["c.txt"]\n[students.sgns]\n[references.m2v]\nvectors = "nope.bin"\n',
            "references.m2v.vectors: nope.bin: no such vectors file or folder",
        ),
        (
            '[corpus]\nfiles = ["c.txt"]\n[students.sgns]\n[references.m2v]\nvector = "c.txt"\n',
            "references.m2v.vector: unknown key (did you mean 'vectors'?)",
        ),
        (
            '[corpus]\nfiles = ["c.txt"]\n[students.sgns]\n[references.sgns]\nvectors = "c.txt"\n',
            "two outputs are named 'sgns'",
        ),
        (
            '[corpus]\nfiles = ["c.txt"]\n[students.sgns]\n[eval]\ntop_n = "many"\n',
            'eval: top_n = "many" is not a valid int',
        ),
        pytest.param(  # its folder's name would fit, not its scores' temporary file names
            f'[corpus]\nfiles = ["c.txt"]\n[students.{"s" * 220}]\nstudent = "sgns"\n',
            ".common.json (.NAME.PID.XXXXXXXX-old.tmp) is 258 bytes, over the 255",
            id="a student name whose files' temporary names are too long",
        ),
        pytest.param(
            f'[corpus]\nfiles = ["c.txt"]\n[students.{"s" * 300}]\nstudent = "sgns"\n',
            "is 300 bytes, over the 255 a name may hold",
            id="a student name of 300 bytes",
        ),
        pytest.param(
            f'[corpus]\nfiles = ["c.txt"]\n[teachers.{"t" * 300}]\n[students.sgns]\n',
            "is 300 bytes, over the 255 a name may hold",
            id="a teacher name of 300 bytes",
        ),
        pytest.param(
            '[corpus]\nfiles = ["c.txt"]\n[students.sgns]\nx = ' + "[" * 50_000 + "]" * 50_000,
            "nest deeper",
            id="arrays nested 50k deep",
        ),
        pytest.param(
            "a = " + "{ b = " * 50_000 + "1" + " }" * 50_000, "nest deeper", id="tables nested 50k deep"
        ),
    ],
)
def test_a_bad_study_is_a_one_line_error_naming_file_and_key(tmp_path, text, message):
    (tmp_path / "c.txt").write_text("a b c\n")
    (tmp_path / "s.toml").write_text(text)
    with pytest.raises(UserError) as err:
        load_study(tmp_path / "s.toml")
    assert str(err.value).startswith(str(tmp_path / "s.toml"))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_report_names_each_teachers_options_that_differ_from_the_defaults(tmp_path):
    (tmp_path / "c.txt").write_text("a b c\n")
    (tmp_path / "s.toml").write_text(
        '[corpus]\nfiles = ["c.txt"]\n\n[teachers.plain]\nmodel = "minilm"\n\n'
        '[teachers.last8]\nmodel = "minilm"\nprecision = "int8"\nlayer = "-1"\nvectors = true\n\n'
        '[students.ase]\nteacher = "plain"\n'
    )
    header = " ".join(report._header_lines(load_study(tmp_path / "s.toml")))
    assert "plain = minilm (defaults); last8 = minilm (layer=-1, precision=int8, vectors=True)." in header


def test_the_bundled_default_study_loads():
    study = load_study(DEFAULT_STUDY)
    assert {"sgns", "cbow", "ase", "x2static", "sentence", "ctx2vec", "bert-sg"} <= set(study.outputs)
    assert study.baseline("x2static") == "cbow" and study.baseline("ctx2vec") == "sgns"
    assert study.corpus.files[0].is_file() and study.teachers["minilm"].extract.max_sentences > 0
    ar = next(r for r in study.retrofits if r.name == "x2static+attract-repel")
    assert ar.antonyms == ("wordnet-antonyms",) and ar.config.lr == 0.01


def test_the_default_studys_corpus_covers_enough_of_every_avg5_set_for_avg5():
    """Its report opens on avg5: every set keeps MIN_ITEMS pairs that the teacher's sentences cover too.

    Counted as the study reads its corpus: the vocabulary (``min_count``) from every sentence,
    ``ase``'s words (the fewest of any output) from the ones the teacher reads.
    """
    from collections import Counter
    from itertools import islice

    from ctx2static.eval.results import MIN_ITEMS
    from ctx2static.eval.similarity import read_similarity
    from ctx2static.eval.suite import AVG5
    from ctx2static.resources import BENCHMARK_DIR
    from ctx2static.text.corpus import Corpus

    study = load_study(DEFAULT_STUDY)
    corpus = Corpus(list(study.corpus.files), study.corpus.text)
    counts: Counter[str] = Counter()
    for sentence in corpus:
        counts.update(sentence)
    vocab = {w for w, n in counts.items() if n >= study.corpus.vocab.min_count}
    taught = study.teachers["minilm"].extract.max_sentences
    seen = vocab & {w for sentence in islice(iter(corpus), taught) for w in sentence}
    for name in AVG5:
        pairs = read_similarity(BENCHMARK_DIR / "similarity" / f"{name}.txt").pairs
        covered = sum(a in seen and b in seen for a, b in pairs)
        assert covered >= MIN_ITEMS, (name, covered)


def test_a_long_student_name_is_refused_before_any_work(tmp_path, cli_main):
    (tmp_path / "c.txt").write_text("a b c\n")
    study = f'[corpus]\nfiles = ["c.txt"]\n[students.{"s" * 300}]\nstudent = "sgns"\n'
    (tmp_path / "s.toml").write_text(study)
    code, out, err = cli_main("run", tmp_path / "s.toml", "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and "is 300 bytes" in err
    assert out == "" and not (tmp_path / "o").exists()


def test_run_command_reports_a_bad_study_in_one_line(tmp_path, cli_main):
    (tmp_path / "s.toml").write_text('[corpus]\nfiles = ["nope.txt"]\n[students.sgns]\n')
    code, _, err = cli_main("run", tmp_path / "s.toml", "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1
    assert "s.toml: corpus.files[0]: nope.txt: no such file" in err


def test_each_step_hands_back_what_earlier_steps_freed_before_its_peak_is_sampled(monkeypatch):
    events = []
    monkeypatch.setattr(runner, "release_freed", lambda: events.append("trim") or True)
    monkeypatch.setattr(runner, "PeakRss", lambda: events.append("sample") or PeakRss())
    with runner.measured() as step:
        pass
    assert events == ["trim", "sample"] and step["peak_rss_mb"] > 0


def test_a_teachers_default_layer_counts_as_the_layers_it_resolves_to(tmp_path, tiny_models):
    (tmp_path / "corpus.txt").write_text("\n".join(SENTENCES) + "\n")

    def teacher_hash(model: str, layer: str) -> str:
        study = tmp_path / "study.toml"
        option = f'layer = "{layer}"' if layer else ""
        study.write_text(
            f'[corpus]\nfiles = ["corpus.txt"]\n[teachers.t]\nmodel = "{tiny_models[model]}"\n{option}\n'
            '[students.ase]\nteacher = "t"\n'
        )
        return runner.StudyRunner(load_study(study), StudyLayout(tmp_path / "run")).teacher_hash("t")

    # an encoder's auto is 1: (a study run with it spelled out stays up to date); a causal LM's is not
    assert teacher_hash("bert", "") == teacher_hash("bert", "1:") != teacher_hash("bert", "-1")
    assert teacher_hash("gpt2", "") == teacher_hash("gpt2", "1") != teacher_hash("gpt2", "1:")


def test_auto_word_settings_key_a_teachers_cache_by_the_families_defaults(tmp_path, tiny_models, monkeypatch):
    """The family that picks them is the loaded teacher's: a changed default of any family re-extracts."""
    from ctx2static.pipeline import models

    (tmp_path / "corpus.txt").write_text("\n".join(SENTENCES) + "\n")

    def teacher_hash(option: str) -> str:
        study = tmp_path / "study.toml"
        study.write_text(
            f'[corpus]\nfiles = ["corpus.txt"]\n[teachers.t]\nmodel = "{tiny_models["bert"]}"\n{option}\n'
            '[students.word]\nteacher = "t"\n'
        )
        return runner.StudyRunner(load_study(study), StudyLayout(tmp_path / "run")).teacher_hash("t")

    spelled = 'word_template = "x {w}"\nword_layer = "-1"'
    auto, given = teacher_hash(""), teacher_hash(spelled)
    assert len({auto, given, teacher_hash('word_template = "x {w}"')}) == 3
    monkeypatch.setitem(models.WORD_DEFAULTS, models.TeacherKind.ENCODER, ("the word {w}", "-1"))
    assert teacher_hash("") != auto and teacher_hash(spelled) == given


def test_a_study_teacher_runs_on_the_engine_it_names(tmp_path, teacher, monkeypatch):
    """The study's extract is the command line's (extract_with): `engine = "ray"` reaches it, and the
    engine is not part of the cache's identity (the same cache whichever engine wrote it)."""
    from ctx2static.pipeline import extract as pipeline_extract
    from ctx2static.pipeline.config import Engine

    path = _write(tmp_path, teacher)
    local = load_study(path)
    path.write_text(path.read_text().replace("vectors = true", 'vectors = true\nengine = "ray"\nworkers = 1'))
    study = load_study(path)
    assert study.teachers["tiny"].engine.engine is Engine.RAY and study.teachers["tiny"].engine.workers == 1
    seen = []

    def fake(teacher, teacher_config, inputs, out, cfg, engine):
        seen.append(engine)
        raise UserError("stop here")

    monkeypatch.setattr(pipeline_extract, "extract_with", fake)
    monkeypatch.setattr(runner, "check_engines", lambda study: None)  # Ray need not be installed here
    with pytest.raises(UserError, match="stop here"):
        run_study(study, tmp_path / "run")
    assert seen == [study.teachers["tiny"].engine]
    layout = StudyLayout(tmp_path / "run")
    ray_hash = runner.StudyRunner(study, layout).teacher_hash("tiny")
    assert ray_hash == runner.StudyRunner(local, StudyLayout(tmp_path / "run2")).teacher_hash("tiny")


def test_a_study_on_ray_without_ray_is_one_line_before_anything_runs(tmp_path, teacher, monkeypatch):
    import sys

    from ctx2static.pipeline import extract as pipeline_extract

    path = _write(tmp_path, teacher)
    path.write_text(path.read_text().replace("vectors = true", 'vectors = true\nengine = "ray"'))
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as where it is not installed
    monkeypatch.setattr(pipeline_extract, "extract_with", lambda *_: pytest.fail("extracted first"))
    with pytest.raises(UserError, match=r"teacher tiny runs on engine ray, and Ray is not installed: pip"):
        run_study(load_study(path), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_student_missing_its_signal_is_refused_with_the_study_key(tmp_path, teacher):
    """The registry's one missing-signal policy, spelled as a study file writes the option."""
    path = _write(tmp_path, teacher)
    text = path.read_text().replace("vectors = true\n", "").replace("[students.ase]", "[students.bert-sg]")
    path.write_text(text)
    with pytest.raises(
        UserError,
        match=r"students\.bert-sg: student 'bert-sg' needs the cache signal 'occ_vec', which this teacher "
        r"does not extract; set vectors = true in \[teachers\.tiny\]$",
    ):
        load_study(path)


def test_a_teachers_backend_keys_its_cache_and_torch_keeps_the_key_it_had(tmp_path, tiny_models, monkeypatch):
    (tmp_path / "corpus.txt").write_text("\n".join(SENTENCES) + "\n")
    keys = []
    digest = runner.digest
    monkeypatch.setattr(runner, "digest", lambda key: keys.append(key) or digest(key))

    def teacher_hash(option: str) -> str:
        study = tmp_path / "study.toml"
        study.write_text(
            f'[corpus]\nfiles = ["corpus.txt"]\n[teachers.t]\nmodel = "{tiny_models["bert"]}"\n{option}\n'
            '[students.ase]\nteacher = "t"\n'
        )
        return runner.StudyRunner(load_study(study), StudyLayout(tmp_path / "run")).teacher_hash("t")

    assert teacher_hash("") == teacher_hash('backend = "torch"') != teacher_hash('backend = "onnx"')
    # a torch teacher's key is the one studies made before the backend existed had
    teacher_keys = [k for k in keys if isinstance(k, dict) and "model" in k]
    assert len(teacher_keys) == 3 and "backend" not in teacher_keys[0] | teacher_keys[1]
    assert teacher_keys[2]["backend"] == "onnx"


def test_run_prints_the_verdict_and_the_report_and_the_tables_with_verbose(tmp_path, teacher, cli_main):
    """A newcomer's terminal gets the summary and where the report is; the 20-row tables go to -v."""
    study = _write(tmp_path, teacher)
    code, out, err = cli_main("-q", "run", study, "--out", tmp_path / "run")
    assert code == 0, err
    assert out.rstrip().endswith(f"tables and figures: {tmp_path / 'run' / 'report.md'}")
    assert f"- vectors: {tmp_path / 'run' / 'vectors'}/, a folder per output" in out
    assert f" MB in {tmp_path / 'run'}/, " in out and "of it the teacher caches" in out
    assert "benchmark" not in out and "**" not in out and "`" not in out
    code, out, err = cli_main("-v", "run", study, "--out", tmp_path / "run")  # a rerun: every step kept
    assert code == 0 and "benchmark" in err and "spearman" in err, err


def test_a_misspelt_teacher_is_refused_before_the_corpus_is_read(tmp_path, cli_main, monkeypatch):
    """The text students run first: unchecked, sgns would read the corpus before the teacher failed."""
    (tmp_path / "big.txt.gz").write_bytes(b"not gzip: reading this fails")
    study = '[corpus]\nfiles = ["big.txt.gz"]\n[teachers.t]\nmodel = "minlm"\n[students.sgns]\n'
    (tmp_path / "s.toml").write_text(study + '[students.ase]\nteacher = "t"\n')
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, out, err = cli_main("run", tmp_path / "s.toml", "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and "big.txt.gz" not in err, err
    assert "s.toml: teachers.t: model = \"minlm\": not a short name (did you mean 'minilm'?)" in err
    assert out == "" and not (tmp_path / "o").exists()


def test_the_reports_next_command_works_as_printed_in_a_clone(tmp_path, teacher, cli_main, monkeypatch):
    """Run where a newcomer runs it, the clone (here tmp_path stands for it): outputs go under runs/ only."""
    import re
    import shlex

    from ctx2static.export.reader import TokenBag
    from ctx2static.fileio import outputs

    study = _write(tmp_path, teacher)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(outputs, "PACKAGE_DIR", tmp_path)
    # the tiny corpus covers too few pairs for a score: the report is given one, to name its pick
    monkeypatch.setattr(
        report, "_family_scores", lambda _: {"similarity": ("avg5", {"sgns": 5.0, "ase": 6.0})}
    )
    code, out, err = cli_main("-q", "run", study.name, "--out", "runs/t")
    assert code == 0, err
    printed = re.search(r"next: `(ctx2static [^`]+)`", Path("runs/t/report.md").read_text())
    assert printed, "the report names no next command"
    command = printed.group(1)
    assert f"next: {command}." in out  # the console prints the same one
    program, *args = shlex.split(command)
    code, _, err = cli_main(*args)
    assert program == "ctx2static" and code == 0, f"{command}: {err}"
    written = Path(args[args.index("-o") + 1])
    assert written.is_relative_to("runs/t") and TokenBag.load(written).encode(["the king"]).shape[0] == 1
    code, _, err = cli_main("export", args[0], "--format", "model2vec", "-o", "ase-m2v")
    assert code == 2 and "inside the ctx2static package" in err  # where the old next command wrote


def test_a_layer_the_teacher_lacks_is_refused_before_the_corpus_is_read(tmp_path, cli_main, tiny_models):
    (tmp_path / "big.txt.gz").write_bytes(b"not gzip: reading this fails")
    study = f'[corpus]\nfiles = ["big.txt.gz"]\n[teachers.t]\nmodel = "{tiny_models["bert"]}"\nlayer = "99"\n'
    (tmp_path / "s.toml").write_text(study + '[students.sgns]\n[students.ase]\nteacher = "t"\n')
    code, out, err = cli_main("run", tmp_path / "s.toml", "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and "big.txt.gz" not in err, err
    assert 's.toml: teachers.t: layer = "99": names no hidden state of 3 (-3..2)' in err
    assert out == "" and not (tmp_path / "o").exists()
