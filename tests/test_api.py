"""The Python API: `distill` in one call, the stages as functions, the examples of the README and the docs."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ctx2static
from ctx2static import api
from ctx2static.cache import Cache
from ctx2static.errors import OptionError, UserError
from ctx2static.vectors import Vectors

from . import tiny_models as tm

EXAMPLE = """\
from ctx2static import distill

vectors = distill("my_text.txt", teacher="minilm", student="x2static", max_words=100_000)
vectors.most_similar("king", topn=5)  # the nearest words: [(word, cosine), ...]
vectors.query(["cat", "unbelievableness"])  # a vector for any word, one outside the table too
vectors.composed(["cat", "unbelievableness"])  # [False, True]: the second is made from the teacher's pieces
vectors.save("x2static/")  # then `ctx2static export` writes it for gensim or Model2Vec
"""
ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
API_PAGE = ROOT / "docs" / "reference" / "api.md"


def run_example(corpus, teacher, max_words):
    code = EXAMPLE.replace('"my_text.txt"', repr(str(corpus))).replace('"minilm"', repr(str(teacher)))
    code = code.replace("max_words=100_000", f"max_words={max_words}")
    scope: dict = {}
    exec(compile(code, "README example", "exec"), scope)
    return scope["vectors"]


def check_example_output(vectors):
    assert isinstance(vectors, Vectors) and vectors.composer is not None
    back = Vectors.load("x2static")
    assert back.words == vectors.words and back.composer is not None
    np.testing.assert_array_equal(back.query(["unbelievableness"]), vectors.query(["unbelievableness"]))


def test_readme_example_with_a_tiny_teacher(tmp_path, monkeypatch, mini_corpus, tiny_models):
    monkeypatch.chdir(tmp_path)
    check_example_output(run_example(mini_corpus, tiny_models["bert"], 6000))


@pytest.mark.slow
def test_readme_example_with_minilm(tmp_path, monkeypatch, mini_corpus):
    monkeypatch.chdir(tmp_path)
    vectors = run_example(mini_corpus, "minilm", 4000)
    check_example_output(vectors)
    assert vectors.meta["teacher"] == "minilm" and "cache" not in vectors.meta  # the temporary cache is gone


def test_the_readme_shows_the_tested_example():
    blocks = re.findall(r"```python\n(from ctx2static import distill\n.*?)```", README.read_text(), re.S)
    assert blocks, "README.md lost its quickstart: a Python block starting `from ctx2static import distill`"
    assert blocks[0] == EXAMPLE


def page_block(first_line):
    blocks = re.findall(r"```python\n(.*?)```", API_PAGE.read_text(), re.S)
    found = [b for b in blocks if b.startswith(first_line)]
    assert found, f"{API_PAGE.name} has no Python block starting with {first_line!r}"
    return found[0]


def test_api_page_stage_and_vectors_blocks_run(tmp_path, monkeypatch, mini_corpus, tiny_models):
    """The API page's stage-by-stage and `Vectors` blocks, as written (corpus, teacher and size made tiny)."""
    monkeypatch.chdir(tmp_path)
    # writes x2static/, which the Vectors block loads; all of the corpus, as the block's "bank" (5
    # times in it) must be in the vocabulary, which a budget counts from the text read only
    run_example(mini_corpus, tiny_models["bert"], 50_000)
    stages = page_block("from ctx2static.api import").replace('"corpus.txt.xz"', repr(str(mini_corpus)))
    stages = stages.replace('"minilm"', repr(str(tiny_models["bert"]))).replace("=20000", "=300")
    stages = stages.replace('"bert-sg", epochs=1', '"bert-sg", epochs=1, dim=8')  # the tiny teacher is 16-d
    scope: dict = {}
    exec(compile(stages, "API page stages", "exec"), scope)
    assert scope["bert_sg"].meta["student"] == "bert-sg" and scope["sgns"].meta["student"] == "sgns"
    ws353 = next(s for s in scope["scores"] if s.benchmark == "ws353")
    assert ws353.covered == ws353.total  # compose=True: every pair scored
    assert (tmp_path / "bert-sg-m2v" / "README.md").read_text().startswith("---\nlibrary_name: model2vec")
    scope = {}
    exec(compile(page_block("from ctx2static.vectors import Vectors"), "API page Vectors", "exec"), scope)
    v = scope["v"]
    [(answer, _)] = v.most_similar(["king", "woman"], negative=["man"], topn=1)
    assert answer not in ("king", "woman", "man") and v.most_similar(v["bank"], topn=1)[0][0] == "bank"
    assert "riverbank" not in v and v.with_composed(["riverbank"]).words[-1] == "riverbank"


def test_distill_from_sentences_into_a_folder_resumes_and_matches_the_stages(tmp_path, tiny_models):
    sentences = [*tm.SENTENCES, "", *tm.SENTENCES]  # "" ends a paragraph
    teacher = str(tiny_models["bert"])
    v = api.distill(sentences, teacher, "ase", out=tmp_path / "cache", min_count=1)
    assert Cache.open(tmp_path / "cache").complete
    assert (tmp_path / "cache" / api.CORPUS_FILE).read_text().splitlines()[len(tm.SENTENCES)] == ""
    again = api.distill(sentences, teacher, "ase", out=tmp_path / "cache", min_count=1)  # resumes: done
    np.testing.assert_array_equal(again.matrix, v.matrix)
    staged = api.fit(api.extract(sentences, teacher, tmp_path / "c2", min_count=1, vectors=True), "ase")
    assert staged.words == v.words
    np.testing.assert_allclose(staged.matrix, v.matrix, rtol=1e-6)
    scores = {s.benchmark: s for s in api.evaluate(v, compose=True)}
    assert scores["ws353"].covered == scores["ws353"].total


def test_evaluate_runs_the_families_and_files_asked_for(tmp_path):
    # cos(a, b) = 1, cos(a, c) = 0, cos(a, d) = -1 against gold 9, 5, 1: rho = 1 on the user's file
    v = Vectors(["a", "b", "c", "d"], np.array([[1, 0], [2, 0], [0, 1], [-1, 0]], dtype=np.float32))
    (tmp_path / "mine.tsv").write_text("a\tb\t9\na\tc\t5\na\td\t1\n")
    only_mine = api.evaluate(v, benchmarks={"similarity": [tmp_path / "mine.tsv"]}, bundled=False)
    assert [(s.benchmark, round(s.score, 9), s.covered) for s in only_mine] == [("mine", 100.0, 3)]
    families = {s.family for s in api.evaluate(v, families=["similarity"])}
    assert families == {"similarity", "summary"}  # avg5; analogy and categorization not run
    with pytest.raises(
        OptionError, match=r"^families=\['simlarity'\]: unknown benchmark family 'simlarity' \(did"
    ):
        api.evaluate(v, families=["simlarity"])
    with pytest.raises(
        OptionError, match=r"^benchmarks=\{'analogies': .*unknown benchmark family 'analogies'"
    ):
        api.evaluate(v, benchmarks={"analogies": [tmp_path / "mine.tsv"]})
    with pytest.raises(UserError, match=r"^no benchmarks to run: give benchmarks= files with bundled=False$"):
        api.evaluate(v, bundled=False)


def test_distill_turns_on_the_signals_the_student_needs(tmp_path, tiny_models):
    v = api.distill(
        tm.SENTENCES, str(tiny_models["bert"]), "x2static", tmp_path / "c", min_count=1, context="para"
    )
    assert "para_ctx" in Cache.open(tmp_path / "c").signals and v.meta["config"]["context"] == "para"


def test_text_students_fit_and_retrofit(tmp_path, mini_corpus):
    v = api.fit(mini_corpus, "sgns", epochs=1, dim=8, min_count=3, threads=1)
    assert v.dim == 8 and v.meta["student"] == "sgns" and v.meta["vocab_config"]["min_count"] == 3
    r = api.retrofit(v, "wordnet", iterations=2)
    assert r.meta["retrofit"][-1]["config"]["iterations"] == 2 and r.words == v.words
    path = api.export(r, "word2vec", tmp_path / "r.txt")
    assert Vectors.load(path).words == v.words


def test_extract_takes_the_engine_options_of_the_command_line(tiny_models, mini_corpus, tmp_path):
    """The engine is chosen below the command line: the API checks its options as ``extract`` does."""
    with pytest.raises(UserError, match="workers=2 must be 0 unless --engine ray"):
        api.extract(mini_corpus, str(tiny_models["bert"]), tmp_path / "c", workers=2)
    folder = api.extract(
        mini_corpus, str(tiny_models["bert"]), tmp_path / "c", engine="local", max_sentences=20
    )
    assert Cache.open(folder).complete


def test_a_mistyped_keyword_is_one_short_line_naming_what_was_meant(tiny_models, mini_corpus, tmp_path):
    """distill's and fit's keywords are a stage's and the student's: a typo names the closest, no list."""
    bert = str(tiny_models["bert"])
    for call, want in [
        (
            lambda: api.distill(mini_corpus, bert, max_sentence=10),
            "max_sentence' (did you mean 'max_sentences'?)",
        ),
        (lambda: api.distill(mini_corpus, bert, epoch=3), "epoch' (did you mean 'epochs'?)"),
        (lambda: api.fit(mini_corpus, "sgns", max_vocb=10), "max_vocb' (did you mean 'max_vocab'?)"),
        (lambda: api.fit(mini_corpus, "sgns", dimm=10), "dimm' (did you mean 'dim'?)"),
    ]:
        with pytest.raises(UserError) as err:
            call()
        assert str(err.value) == f"unknown option '{want}"
    with pytest.raises(UserError, match=r"'iteration' \(did you mean 'iterations'\?\)"):
        api.retrofit(api.Vectors(["a"], np.ones((1, 2), np.float32)), "wordnet", iteration=3)
    with pytest.raises(UserError, match=r"fmt='word2vc' \(did you mean 'word2vec'\?\): choose one of"):
        api.export(api.Vectors(["a"], np.ones((1, 2), np.float32)), "word2vc", tmp_path / "e.txt")
    with pytest.raises(UserError, match=r"method='farqui' \(did you mean 'faruqui'\?\): choose one"):
        api.retrofit(api.Vectors(["a"], np.ones((1, 2), np.float32)), "wordnet", method="farqui")


def test_unknown_options_and_text_students_are_one_line_errors(tiny_models, mini_corpus):
    with pytest.raises(UserError, match="unknown option 'epoch'; the options are: .*max_sentences"):
        api.extract(mini_corpus, str(tiny_models["bert"]), epoch=3)
    with pytest.raises(UserError, match=r"trains from text, not a teacher: call fit\(corpus, 'sgns'\)"):
        api.distill(mini_corpus, str(tiny_models["bert"]), "sgns")
    with pytest.raises(
        UserError, match=r"^unknown option 'colour' \(help\(ctx2static.distill\) lists the options\)$"
    ):
        api.distill(mini_corpus, str(tiny_models["bert"]), colour=1)
    with pytest.raises(UserError, match=r"^unknown option 'max_word' \(did you mean 'max_words'\?\)$"):
        api.distill(mini_corpus, str(tiny_models["bert"]), max_word=100)
    with pytest.raises(
        UserError, match=r"'epochs' for student 'ase'; the students that take it: sgns, .*x2static"
    ):
        api.distill(mini_corpus, str(tiny_models["bert"]), "ase", epochs=3)
    with pytest.raises(UserError, match="needs the cache signal 'topk_ids'.*; pass topk=K$"):
        api.distill(mini_corpus, str(tiny_models["bert"]), "semglove", cooc="lm")


def test_the_package_root_stays_light():
    """`import ctx2static` loads nothing else; the API comes on first use."""
    code = "import sys, ctx2static; assert not [m for m in sys.modules if m.startswith('ctx2static.')]"
    env_path = str(Path(ctx2static.__file__).parent.parent)
    res = subprocess.run(
        [sys.executable, "-c", code], env={"PYTHONPATH": env_path}, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    assert ctx2static.distill is api.distill and ctx2static.Vectors is Vectors
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ctx2static.nope  # noqa: B018


def test_the_root_names_are_the_api_functions_after_every_subpackage_is_imported():
    import importlib

    import ctx2static
    from ctx2static import api

    for sub in ("retrofit", "export", "eval", "pipeline", "students", "cache", "study"):
        importlib.import_module(f"ctx2static.{sub}")
    for name in ctx2static.__all__:
        assert getattr(ctx2static, name) is getattr(api, name)


def _gen(items):
    yield from items


TINY = Vectors(["a", "b"], np.eye(2, dtype=np.float32))


@pytest.mark.parametrize(
    "corpus,message",
    [
        (lambda: _gen([1, 2, None]), "corpus[0]=1: pass sentences as str (decode bytes first), not int"),
        (lambda: ["a fine sentence", None], "corpus[1]=None: pass sentences as str"),
        (lambda: [b"a b"], "corpus[0]=b'a b': pass sentences as str (decode bytes first), not bytes"),
        (lambda: 123, "corpus=123: pass a file, a list of files or an iterable of sentences (str), not int"),
        (lambda: b"corpus.txt", "corpus=b'corpus.txt': pass a file"),
    ],
)
def test_sentences_must_be_str_and_the_first_other_item_is_named(tmp_path, tiny_models, corpus, message):
    """The old code wrote the words 1, 2, none and b'a silently (or raised a TypeError for 123)."""
    with pytest.raises(UserError, match="^" + re.escape(message)):
        api.distill(corpus(), str(tiny_models["bert"]), out=tmp_path / "c")
    assert not (tmp_path / "c" / api.CORPUS_FILE).exists()


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda m: api.distill(["a b"], teacher=5), "teacher=5: pass a short name"),
        (
            lambda m: api.distill(["a b"], m, student=["x2static"]),
            "student=['x2static']: pass a student's name",
        ),
        (lambda m: api.extract(["a b"], m, out=7), "out=7: pass a path, not int"),
        (
            lambda m: api.extract(["a b"], m, min_count="many"),
            "min_count='many' must be int, not text",
        ),
        (lambda m: api.fit(5, "x2static"), "source=5: pass a cache folder, not int"),
        (lambda m: api.fit(["a b"], "sgns", compose="no"), "compose='no': pass True or False"),
        (lambda m: api.retrofit(TINY, [5]), "lexicons[0]=5: pass a lexicon name or file"),
        (lambda m: api.retrofit(TINY, iterations=[2]), "iterations=[2] must be int"),
        (lambda m: api.evaluate(5), "vectors=5: pass Vectors, or a vectors file or folder"),
        (lambda m: api.export(TINY, "nope", "o.txt"), "fmt='nope': choose one of word2vec"),
        (lambda m: api.export(TINY, "word2vec", None), "out=None: pass a path"),
    ],
)
def test_every_api_function_names_a_parameter_of_the_wrong_type(tiny_models, call, message):
    with pytest.raises(UserError, match="^" + re.escape(message)):
        call(str(tiny_models["bert"]))


@pytest.mark.parametrize(
    "call,param,message",
    [
        (
            lambda m: api.distill(["a b"], m, max_sentences="10"),
            "max_sentences",
            "max_sentences='10' must be int",
        ),
        (
            lambda m: api.extract(["a b"], m, lowercase="yes"),
            "lowercase",
            "lowercase='yes' must be bool",
        ),
        (lambda m: api.fit(["a b"], "sgns", epochs="3"), "epochs", "epochs='3' must be int, not text"),
        (
            lambda m: api.evaluate(TINY, benchmarks="similarity"),
            "benchmarks",
            "benchmarks='similarity': pass a dict of lists",
        ),
        (
            lambda m: api.evaluate(TINY, benchmarks={"similarity": "pairs.tsv"}),
            "benchmarks['similarity']",
            "benchmarks['similarity']='pairs.tsv': pass a list of files or task names, not str",
        ),
        (
            lambda m: api.evaluate(TINY, benchmarks={"similarity": [123]}),
            "benchmarks['similarity'][0]",
            "benchmarks['similarity'][0]=123: pass a file or a task's name, not int",
        ),
        (
            lambda m: api.distill(["a b"], m, student="nope"),
            "student",
            "student='nope': unknown student; choose",
        ),
        (
            lambda m: api.distill(["a b"], m, student="x2statc"),
            "student",
            "student='x2statc': unknown student (did you mean 'x2static'?); choose one of: sgns",
        ),
        (
            lambda m: api.fit(["a b"], "nope"),
            "student",
            "student='nope': unknown student; choose one of: sgns",
        ),
        (
            lambda m: api.evaluate(TINY, families=["similarity", "analogi"]),
            "families",
            "families=['similarity', 'analogi']: unknown benchmark family 'analogi' (did you mean 'analogy'",
        ),
        (
            lambda m: api.evaluate(TINY, benchmarks={"nofamily": ["x.tsv"]}),
            "benchmarks",
            "benchmarks={'nofamily': ['x.tsv']}: unknown benchmark family 'nofamily'; choose one of",
        ),
        (
            lambda m: api.evaluate(TINY, benchmarks={"downstream": ["po"]}),
            "benchmarks['downstream']",
            "benchmarks['downstream']=['po']: unknown task 'po' (did you mean 'pos'?)",
        ),
    ],
)
def test_the_api_checks_types_and_names_as_the_command_line_does(tiny_models, call, param, message):
    """The old code read "10" as 10, a string as a list of its letters, and named no argument for a name."""
    with pytest.raises(OptionError, match="^" + re.escape(message)) as err:
        call(str(tiny_models["bert"]))
    assert err.value.options == (param,)


_SPEAKS = """
import logging, sys
from ctx2static import fit
if sys.argv[2] == "own":
    logging.basicConfig(level=logging.WARNING, format="own: %(message)s")
fit(sys.argv[1], "sgns", epochs=1, dim=8, min_count=50)
"""


@pytest.mark.parametrize("logging_of_its_own", [False, True])
def test_a_python_caller_sees_the_command_lines_lines_unless_it_set_up_logging(
    mini_corpus, logging_of_its_own
):
    """The API says what the CLI says (one summary line a step) to a program that configured nothing."""
    run = subprocess.run(
        [sys.executable, "-c", _SPEAKS, str(mini_corpus), "own" if logging_of_its_own else "none"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    said = [ln for ln in run.stderr.split("\n") if ln.startswith(("corpus: ", "sgns: 1 epochs over "))]
    if logging_of_its_own:  # its level keeps the INFO lines out; its format carries the warning
        cut = [ln for ln in run.stderr.split("\n") if "longer than 256 words" in ln]
        assert not said and cut and all(ln.startswith("own: ") for ln in cut), run.stderr[-2000:]
    else:
        assert [ln.split(":")[0] for ln in said] == ["corpus", "sgns"], run.stderr[-2000:]
