"""Every option's range is checked when its config is built, before any kernel runs.

The configs are found by walking the package, so a new config or a new numeric option without a
rule here fails ``test_every_numeric_option_has_a_bad_value_here``. ``BAD`` holds, per config class
(inherited down the class tree), values that must be refused; each is tried alone.
"""

import dataclasses
import importlib
import inspect
import math
import pkgutil
import re
import typing

import numpy as np
import pytest

import ctx2static
from ctx2static.errors import Style, UserError, speaking_to
from ctx2static.eval.analogy import AnalogyConfig
from ctx2static.eval.downstream.probes import ProbeConfig
from ctx2static.eval.sentences import SentenceConfig
from ctx2static.export import ExportConfig
from ctx2static.options import SEED_LIMIT, Options, configure
from ctx2static.pipeline.config import EngineConfig, ExtractConfig, TeacherConfig
from ctx2static.retrofit.config import RetrofitConfig
from ctx2static.students import ase, contextual, ctx2vec, glove, sentence, sentence_kd, word2vec, x2static
from ctx2static.study.schema import ReportSpec
from ctx2static.text.corpus import CorpusConfig
from ctx2static.text.vocab import VocabConfig
from ctx2static.threads import THREADS_PER_CPU, usable_cpus
from ctx2static.transforms.combine import CombineConfig
from ctx2static.vectors.encoding import EncodeConfig

SEEDS = {"seed": [-1, SEED_LIMIT]}
THREADS = {"threads": [-1, THREADS_PER_CPU * usable_cpus() + 1]}  # the second: more than this machine takes
BAD: dict[type, dict[str, list]] = {
    word2vec.Word2VecConfig: {
        "dim": [0], "window": [0], "negative": [0], "sample": [-1e-3], "epochs": [0], **THREADS,
        "lr": [0.0, 1.0, 1.5],  # from 1 up the updates diverge (a Numba ZeroDivisionError once)
        "min_lr": [-1e-4, 0.5], "ns_exponent": [2.0, -1.5], "abtt": [-1, 100], **SEEDS,
    },
    glove.Config: {
        "dim": [0], "window": [0], "xmax": [0.0], "alpha": [0.0], "lr": [0.0, 1.0], "epochs": [0],
        "grad_clip": [0.0], **THREADS, "checkpoint_every": [-1], "abtt": [-1, 100], **SEEDS,
    },
    contextual.ContextualConfig: {
        "dim": [0], "window": [0], "negative": [0], "ns_exponent": [2.0], "lr": [0.0, 1.0],
        "min_lr": [-1e-4, 0.5], "clip": [0.0, -1.0], "epochs": [0], "batch": [0], **THREADS,
        "abtt": [-1, 300], "sample": [-1e-4], **SEEDS,
    },
    ctx2vec.Config: {"e1": [-1.0], "e2": [-1.0], "e3": [-1.0], "mix": [-0.1, 1.5]},
    x2static.Config: {
        "epochs": [0], "negative": [-1], "ns_exponent": [2.0], "sample": [-1e-6], "lr": [0.0, 1.0],
        "beta1": [1.0, -0.1], "beta2": [1.0, 1.5], "eps": [0.0], "batch_sentences": [0], "abtt": [-1],
        **SEEDS,
    },
    ase.Config: {"min_occurrences": [0]},
    sentence.Config: {"ridge": [0.0, -1.0], "iterations": [0], "tolerance": [0.0]},
    sentence_kd.Config: {
        "temperature": [0.0], "epochs": [0], "batch_sentences": [1], "lr": [0.0, 1.0], "ridge": [-1.0],
        **SEEDS,
    },
    RetrofitConfig: {
        "iterations": [-1], "alpha": [0.0], "a": [0.0], "b": [0.0], "nu": [0.0], "sigma": [0.0],
        "epochs": [-1], "batch_size": [1], "l2_reg": [-1.0], "lr": [0.0, 1.0],
        "mix": [1.5], "ridge": [-1.0], **SEEDS,
    },
    CorpusConfig: {"min_sentence_len": [-1], "max_sentence_len": [-1]},
    VocabConfig: {"min_count": [0], "max_vocab": [0]},
    TeacherConfig: {**THREADS},
    ExtractConfig: {
        "pca": [-1, 1000], "paragraph_max_length": [1], "topk": [-1], "attention": [-1], "shard_size": [0],
        "max_length": [1], "token_budget": [0], "max_sentences": [-1], "max_words": [-1], "shard_words": [-1],
        "word_template": ["meaning", "{w} {w}"], "word_layer": ["last"],
    },
    EngineConfig: {
        "workers": [-1],
        "feeders": [-1, 65],
        "gpus_per_worker": [-1.0],
        "connect_timeout": [0.0, -1.0],
    },
    AnalogyConfig: {"top_n": [0], "eps": [0.0, -1e-3], "group_words": [0], "chunk": [0]},
    ProbeConfig: {
        "window": [-1], "pos_c": [0.0], "ner_c": [0.0], "sentiment_c": [0.0], "max_iter": [0],
        "pos_stride": [0], "ner_folds": [1], "sentiment_folds": [1],
    },
    SentenceConfig: {"c": [0.0], "max_iter": [0], "folds": [1], **SEEDS, "max_texts": [4]},
    ReportSpec: {"neighbours": [0], "max_pairs": [1]},
    EncodeConfig: {"sif_a": [0.0, 1.0]},
    ExportConfig: {"dims": [-1], "pca_drop": [-1], "lexical_dims": [-1], "lexical_weight": [0, -1.5]},
    CombineConfig: {"dim": [-1], "weights": [(1.0, 0.0), "1,-2"]},
}  # fmt: skip
# numeric options any finite value suits (NaN and infinity are still refused, as for every number)
ANY_FINITE = {(RetrofitConfig, "delta_att"), (RetrofitConfig, "delta_rep")}


def _configs() -> list[type[Options]]:
    found = set()  # the bases (Options, the abstract CacheConfig) are not configs: their subclasses are
    for info in pkgutil.walk_packages(ctx2static.__path__, "ctx2static."):
        if info.name.split(".")[1] in ("tests", "bench"):
            continue
        for value in vars(importlib.import_module(info.name)).values():
            concrete = value is not Options and not inspect.isabstract(value)
            if isinstance(value, type) and issubclass(value, Options) and concrete:
                found.add(value)
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


CONFIGS = _configs()


def _bad(cls: type[Options]) -> dict[str, list]:
    """The bad values of ``cls``: its own entries over those of the classes it derives from."""
    merged: dict[str, list] = {}
    for base in reversed(cls.__mro__):
        merged.update(BAD.get(base, {}))
    return merged


def _numeric(cls: type[Options]) -> list[str]:
    hints = typing.get_type_hints(cls)
    numbers = (int, float, int | None, float | None)
    return [f.name for f in dataclasses.fields(cls) if hints[f.name] in numbers]


def _name(cls: type) -> str:
    return f"{cls.__module__.removeprefix('ctx2static.')}.{cls.__qualname__}"


CASES = [
    pytest.param(cls, name, value, id=f"{_name(cls)}.{name}={value}")
    for cls in CONFIGS
    for name, values in _bad(cls).items()
    for value in values
]


def test_the_walk_finds_every_student_and_stage_config():
    names = {_name(c) for c in CONFIGS}
    assert {"students.sgns.Config", "students.x2static.Config", "pipeline.config.EngineConfig"} <= names
    assert len(CONFIGS) >= 18


@pytest.mark.parametrize("cls", CONFIGS, ids=_name)
def test_every_numeric_option_has_a_bad_value_here(cls):
    bad = _bad(cls)
    missing = [n for n in _numeric(cls) if n not in bad and (cls, n) not in ANY_FINITE]
    assert not missing, f"{_name(cls)}: give these options a rule and a bad value in BAD: {missing}"


@pytest.mark.parametrize("cls,name,value", CASES)
def test_a_value_out_of_range_is_one_line_naming_the_option_as_its_caller_writes_it(cls, name, value):
    """``--min-count 0`` on the command line, ``min_count = 0`` in a study file, ``min_count=0`` in Python."""
    spellings = {
        Style.FLAG: f"--{name.replace('_', '-')} ",
        Style.KEY: f"{name} = ",
        Style.KEYWORD: f"{name}=",
    }
    for style, start in spellings.items():
        with speaking_to(style), pytest.raises(UserError, match="^" + re.escape(start)):
            cls(**{name: value})
    with pytest.raises(UserError, match="^" + re.escape(f"--set {name}=")):
        configure(cls, {name: value})  # the command line sets a student's options as --set KEY=VALUE


@pytest.mark.parametrize("cls", CONFIGS, ids=_name)
def test_defaults_pass_and_numbers_must_be_finite(cls):
    cls()
    hints = typing.get_type_hints(cls)
    floats = [f.name for f in dataclasses.fields(cls) if hints[f.name] in (float, float | None)]
    for name in floats:
        for value in (math.nan, math.inf, "nan", "-inf"):
            with pytest.raises(UserError, match=f"--{name.replace('_', '-')} .* must be a finite number"):
                cls(**{name: value})


def test_values_are_typed_whatever_the_way_in():
    """API keywords reach the configs unparsed: strings parse, numpy numbers count, the wrong type fails."""
    assert VocabConfig(min_count="3").min_count == 3
    assert CorpusConfig(lowercase="no").lowercase is False
    assert word2vec.Word2VecConfig(dim=np.int64(8), lr=np.float32(0.5)).dim == 8
    with pytest.raises(UserError, match=r"--min-count \[3\] must be int"):
        VocabConfig(min_count=[3])
    with pytest.raises(UserError, match="--lowercase 1 must be bool"):
        CorpusConfig(lowercase=1)


@pytest.mark.parametrize("cls", CONFIGS, ids=_name)
def test_a_config_repr_lists_only_the_fields_that_differ_from_the_defaults(cls):
    assert repr(cls()) == f"{cls.__name__}()"


def test_a_changed_field_is_all_a_config_repr_shows():
    assert repr(x2static.Config(epochs=3)) == "Config(epochs=3)"
    corpus = CorpusConfig(split="lines", lowercase=False)
    assert repr(corpus) == "CorpusConfig(lowercase=False, split='lines')"
    assert str(corpus).startswith("CorpusConfig(lowercase=False, min_sentence_len=0, max_sentence_len=0, ")


def test_a_thread_count_past_this_machine_is_one_line_before_any_work(cli_main, tmp_path, mini_corpus):
    many = THREADS_PER_CPU * usable_cpus() + 1
    out = tmp_path / "v.txt"
    code, _, err = cli_main(
        "fit-student", "-s", "sgns", "--corpus", mini_corpus, "--threads", many, "--out", out
    )
    [line] = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert code == 2 and line.startswith(f"error: --set threads={many} must be 0 (all cores numba may use)")
    assert not out.exists()
