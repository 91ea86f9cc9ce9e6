"""docs/contributing.md's checklists walked with toys: a student, a cache signal, a teacher, a family.

The toy student is written to a temporary module and registered by the documented row alone; the toy
signal is the documented rows and option alone; the toy teacher is its row and its assembler; the toy
evaluation family its module's functions and its row. Nothing else is edited, so a step a checklist
forgets fails here.
"""

import sys
import textwrap
from dataclasses import dataclass

import click
import numpy as np
import pytest
import torch

from ctx2static import api, api_options_gen, teachers
from ctx2static.cache import Cache
from ctx2static.cache.layout import SIGNALS, Rows, Signal
from ctx2static.errors import UserError
from ctx2static.eval.families import FAMILIES, FamilySpec, Headline
from ctx2static.eval.results import Score
from ctx2static.export.card import Card
from ctx2static.options import click_options, configure, opt
from ctx2static.pipeline import models, shard
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.teacher import Teacher
from ctx2static.students import registry
from ctx2static.students.registry import STUDENTS, Source, StudentSpec
from ctx2static.study.loader import load_study
from ctx2static.study.report import _family_scores
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig
from ctx2static.vectors import Vectors

from . import tiny_models as tm
from .synthetic_cache import write_cache

TOY = '''
"""A toy cache student: each word's mean contextual vector, scaled."""

from dataclasses import dataclass

from ctx2static.cache import Cache
from ctx2static.options import opt
from ctx2static.students.cache_input import CacheConfig, occurrence_means
from ctx2static.students.student import CacheStudent
from ctx2static.vectors import Vectors


@dataclass(frozen=True)
class Config(CacheConfig):
    """One option, to see it reach every entry point."""

    scale: float = opt(1.0, "Multiply every vector by this.")

    def signals(self) -> tuple[str, ...]:
        """Only the per-word sums every cache holds."""
        return ()


def fit(cache: Cache, config: Config) -> Vectors:
    """The per-word means times ``scale``; the telemetry goes in the train section."""
    means, seen = occurrence_means(cache)
    train = {"seen": int(seen.sum())}
    return Vectors(list(cache.vocab.words), means * config.scale, cache.vocab.counts.copy(), {"train": train})


STUDENT = CacheStudent(Config, fit)
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """Steps 1 and 2: ``students/toy.py`` (here a temporary module) and its ``StudentSpec`` row."""
    (tmp_path / "toy_student.py").write_text(textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(STUDENTS, "toy", StudentSpec("toy", "toy_student", Source.CACHE, "a toy", "sgns"))
    yield "toy"
    sys.modules.pop("toy_student", None)


@pytest.fixture
def cache(tmp_path):
    sents = [[0, 1, 2], [1, 2, 3]]
    occ = np.arange(6 * 2, dtype=np.float32).reshape(6, 2)
    return write_cache(tmp_path / "c", ["w0", "w1", "w2", "w3"], sents, 2, np.zeros((2, 2)), occ_vec=occ)


def test_a_registered_toy_student_is_fitted_by_the_cli_and_the_api(toy, cache, tmp_path, cli_main):
    code, _, err = cli_main("fit-student", "--student", toy, "--cache", cache, "--set", "scale=2",
                            "--out", tmp_path / "v.txt", "--no-compose")  # fmt: skip
    assert code == 0, err
    by_cli = Vectors.load(tmp_path / "v.txt")
    assert by_cli.meta["student"] == "toy" and by_cli.meta["config"] == {"scale": 2.0}
    by_api = api.fit(cache, student=toy, compose=False, scale=2.0)
    np.testing.assert_allclose(by_api.matrix, by_cli.matrix, rtol=1e-6)
    assert by_api.meta["train"] == {"seen": 6}
    plain = api.fit(cache, student=toy, compose=False)
    np.testing.assert_allclose(by_api.matrix, 2 * plain.matrix, rtol=1e-6)
    code, _, err = cli_main("fit-student", "--student", toy, "--cache", cache, "--set", "scale=x",
                            "--out", tmp_path / "w.txt")  # fmt: skip
    assert code == 2 and err.strip().splitlines()[-1] == "error: --set scale=x is not a valid float"
    code, out, _ = cli_main("fit-student", "--help")  # the help's student list is the registry's
    assert code == 0 and "semglove, ase, token, word, embed, toy (from --cache" in " ".join(out.split())


def test_a_registered_toy_student_is_a_study_student_and_an_api_keyword(toy, tmp_path, tiny_models):
    (tmp_path / "corpus.txt").write_text("the cat sat .\n")
    (tmp_path / "study.toml").write_text(
        f"""
[corpus]
files = ["corpus.txt"]

[teachers.tiny]
model = "{tiny_models["bert"]}"

[students.toy]
teacher = "tiny"
options = {{ scale = 3.0 }}
"""
    )
    study = load_study(tmp_path / "study.toml")
    run = next(s for s in study.students if s.student == toy)
    assert run.config.scale == 3.0 and registry.spec(toy).baseline == "sgns"
    assert "    scale: float\n" in api_options_gen.render()  # step 3: api_options.py gains it


@dataclass(frozen=True)
class ToyExtractConfig(ExtractConfig):
    """Step 2 of "Add a cache signal": the field ``pipeline/config.py``'s ``ExtractConfig`` gains."""

    norms: int = opt(0, "Toy: each occurrence's vector norm times N (0 = off).")


def _norms(f, n):
    """Step 3, the reduction: each group's pooled vector's norm, times the option's value."""
    return {"occ_norm": torch.linalg.vector_norm(torch.bmm(f.padded.pool, f.hidden), dim=-1) * n}


def test_a_toy_signal_declared_in_the_three_documented_places_is_extracted_and_validated(
    tiny_models, tmp_path, monkeypatch
):
    # 1. cache/layout.py: its row of SIGNALS
    toy = Signal("occ_norm", "norms", "each occurrence's vector norm times N", Rows.OCCURRENCE, 1, size="N")
    monkeypatch.setitem(SIGNALS, "occ_norm", toy)
    # 3. pipeline/shard.py: its reduction under its option, and its array
    monkeypatch.setitem(shard.REDUCTIONS, "norms", shard.Reduction(_norms))
    monkeypatch.setitem(shard.SHARD_ARRAYS, "occ_norm", lambda p: shard.per_occurrence(p, "occ_norm"))
    corpus_file = tmp_path / "c.txt"
    corpus_file.write_text("\n".join(tm.SENTENCES) + "\n")
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    teacher = Teacher.load(str(tiny_models["bert"]))
    extract(corpus, vocab, teacher, tmp_path / "c", ToyExtractConfig(shard_size=4, vectors=True, norms=3))
    cache = Cache.open(tmp_path / "c")
    assert "occ_norm" in cache.signals and cache.complete and cache.verify() == []
    for s in cache.shards(["occ_norm", "occ_vec"]):  # read through validation against the row
        want = 3 * np.linalg.norm(s["occ_vec"].astype(np.float32), axis=1)
        assert len(want) > 0
        np.testing.assert_allclose(s["occ_norm"], want, rtol=1e-2)
    extract(corpus, vocab, teacher, tmp_path / "off", ToyExtractConfig(shard_size=4))
    with pytest.raises(UserError, match=r"has no 'occ_norm'; extract again with --norms N$"):
        Cache.open(tmp_path / "off").shard(0, ["occ_norm"])

    @click.command()
    @click_options(ToyExtractConfig)
    def command(**_: object) -> None:
        """What ``extract`` is made of: its flags follow from the config's fields."""

    assert "--norms" in {name for p in command.params for name in p.opts}
    assert configure(ToyExtractConfig, {"norms": 2}).norms == 2  # a study key, an API keyword


TOY_TEACHER = teachers.Teacher(
    name="toyteacher",
    hub_id="example-org/toy-bert-tiny",
    licence="mit",
    assemble="toy-folder",
    model="a tiny random BERT",
    family="masked LM",
    params="0.1M",
    download="0",
    on_disk="0",
    licence_name="MIT",
    install="pip install toy-teacher-package",
)


def test_a_toy_teacher_row_and_its_assembler_make_a_short_name_everywhere(tiny_models, tmp_path, monkeypatch):
    # 1. teachers.py: its row (BY_NAME is made from TEACHERS); pipeline/models.py: its assembler
    monkeypatch.setitem(teachers.BY_NAME, TOY_TEACHER.name, TOY_TEACHER)
    monkeypatch.setitem(models.ASSEMBLERS, "toy-folder", lambda row: tiny_models["bert"])
    assert models.resolve("toyteacher") == str(tiny_models["bert"])
    vectors = api.distill(list(tm.SENTENCES), "toyteacher", "ase", out=tmp_path / "cache", min_count=1)
    assert vectors.meta["teacher"] == "toyteacher"
    card = Card.of(vectors)
    assert (card.base_model(), card.license()) == ("example-org/toy-bert-tiny", "mit")
    assert teachers.teacher_hint("toy-bert-tiny") == " (did you mean 'toyteacher'?)"  # its model's name
    # 2. the README's table, as python -m ctx2static.teachers prints it
    assert "| `toyteacher` | a tiny random BERT | masked LM |" in teachers.markdown_table()


@dataclass(frozen=True)
class ToySet:
    """Step 1 of "Add an evaluation family": the set type of ``eval/toyfam.py``."""

    name: str
    words: tuple[str, ...]


def _read_toy(path):
    return ToySet(str(path).rsplit("/", 1)[-1].split(".")[0], tuple(open(path).read().split()))


def _toy_coverage(vectors, bench, analogy):
    return np.array([vectors.row_of(w) is not None for w in bench.words])


def _toy_evaluate(vectors, bench, analogy, only):
    found = _toy_coverage(vectors, bench, analogy) & (True if only is None else only)
    return [Score(bench.name, "toyfam", "found", 100.0 * found.mean(), int(found.sum()), len(bench.words))]


def test_a_toy_family_row_is_scored_by_the_api_a_study_key_and_the_summary(tmp_path, monkeypatch):
    # 2. eval/families.py: its row (the CLI's --toyfam is made from the rows when the CLI is imported:
    # tests/eval/test_families.py checks the options a registered row gets)
    row = FamilySpec("toyfam", (ToySet,), _toy_evaluate, _toy_coverage, read=_read_toy, help="Words to find.",
                     headline=Headline("share of the toy words found"))  # fmt: skip
    monkeypatch.setitem(FAMILIES, "toyfam", row)
    (tmp_path / "mine.txt").write_text("a b zz\n")
    small = Vectors(["a", "b"], np.eye(2, dtype=np.float32))
    (score,) = api.evaluate(small, families=["toyfam"], benchmarks={"toyfam": [tmp_path / "mine.txt"]})
    assert (score.family, score.covered, score.total) == ("toyfam", 2, 3)
    (tmp_path / "corpus.txt").write_text("a b c\n")
    (tmp_path / "study.toml").write_text(
        '[corpus]\nfiles = ["corpus.txt"]\n\n[students.sgns]\n\n[eval]\ntoyfam = ["mine.txt"]\n'
    )
    assert load_study(tmp_path / "study.toml").eval.extra()["toyfam"] == ((tmp_path / "mine.txt").resolve(),)
    bigger = Vectors(["a", "b", "zz"], np.eye(3, dtype=np.float32))
    results = {
        name: api.evaluate(v, families=["toyfam"], benchmarks={"toyfam": [tmp_path / "mine.txt"]})
        for name, v in (("small", small), ("bigger", bigger))
    }
    words, scores = _family_scores(results)["toyfam"]  # the study summary's number, from the headline
    assert words == "share of the toy words found" and scores == pytest.approx(
        {"small": 200 / 3, "bigger": 100}
    )
