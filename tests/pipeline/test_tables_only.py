"""``--tables-only``: the vocabulary and the per-word tables without the pass over the sentences.

The tables are the same bits as a full cache's: each word is encoded alone, whatever the pass.
"""

import json
from dataclasses import replace

import numpy as np
import pytest

from ctx2static import api
from ctx2static.errors import OptionError, UserError
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.students.registry import STUDENTS, Reads, fit_cache_student

from .. import tiny_models as tm
from .test_word_table import CFG, _extract


@pytest.mark.slow
def test_the_tables_are_the_full_caches_bits_and_no_shard_is_made(tiny_models, corpus_file, tmp_path):
    full, _, _ = _extract(tiny_models["embeddinggemma"], corpus_file, tmp_path / "full")
    only, _, m = _extract(
        tiny_models["embeddinggemma"], corpus_file, tmp_path / "only", replace(CFG, tables_only=True)
    )
    assert m["complete"] and m["shards"] == [] and m["signals"] == []
    assert not list((tmp_path / "only").glob("shard_*"))
    assert only.vocab.words == full.vocab.words
    for student in ("token", "word", "embed"):
        np.testing.assert_array_equal(
            fit_cache_student(student, tmp_path / "only").matrix,
            fit_cache_student(student, tmp_path / "full").matrix,
        )
    composed = fit_cache_student("embed", tmp_path / "only").with_composed(["unseenword"])
    assert np.linalg.norm(composed.matrix[-1]) > 0  # the composer comes from the tables alone


def test_a_full_cache_keeps_its_identity_and_the_flag_makes_another(corpus_file, tmp_path):
    from ctx2static.pipeline.extract import options_identity

    assert "tables_only" not in options_identity(ExtractConfig())  # caches made before it still resume
    assert options_identity(ExtractConfig(tables_only=True))["tables_only"] is True


def test_options_that_act_in_the_pass_are_refused_with_it():
    with pytest.raises(OptionError, match="off with --vectors, --sentence-embedding, --prompt"):
        ExtractConfig(tables_only=True, vectors=True, sentence_embedding=True, prompt="a:")
    ExtractConfig(tables_only=True, max_words=10)  # a budget bounds the words counted


@pytest.mark.slow
def test_every_entry_point_refuses_a_student_that_needs_the_pass(
    tiny_models, corpus_file, tmp_path, cli_main
):
    teacher = str(tiny_models["bert"])
    code, out, err = cli_main(
        "extract", "--corpus", corpus_file, "--teacher", teacher, "--min-count", "1", "--tables-only",
        "--out", tmp_path / "c",
    )  # fmt: skip
    assert code == 0, err
    assert out.strip().endswith("words (no pass over the sentences)")
    for student in ("ase", "x2static"):
        code, _, err = cli_main(
            "fit-student", "-s", student, "--cache", tmp_path / "c", "-o", tmp_path / "v.txt"
        )
        assert code == 2 and err.count("\n") == 1
        assert (
            f"student '{student}' learns from the pass over the sentences, which --tables-only skips" in err
        )
        assert "extract again with --no-tables-only" in err
    code, out, err = cli_main(
        "fit-student", "-s", "word", "--cache", tmp_path / "c", "-o", tmp_path / "w.txt"
    )
    assert code == 0, err
    assert "tokens/s" not in out  # no corpus token was read
    with pytest.raises(UserError, match="pass tables_only=False"):
        api.distill(tm.SENTENCES, teacher, "ase", tables_only=True, min_count=1)
    study = tmp_path / "study.toml"
    study.write_text(
        f'[corpus]\nfiles = ["{corpus_file}"]\n[teachers.t]\nmodel = "{teacher}"\n'
        'tables_only = true\n[students.a]\nstudent = "ase"\nteacher = "t"\n'
    )
    code, _, err = cli_main("run", study, "--out", tmp_path / "run")
    assert code == 2 and "set tables_only = false in [teachers.t]" in err, err


@pytest.mark.slow
def test_distill_of_a_table_student_skips_the_pass(tiny_models, tmp_path):
    v = api.distill(tm.SENTENCES, str(tiny_models["bert"]), "word", out=tmp_path / "c", min_count=1)
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert manifest["shards"] == [] and manifest["identity"]["options"]["tables_only"] is True
    full = api.distill(
        tm.SENTENCES, str(tiny_models["bert"]), "word", out=tmp_path / "f", min_count=1, vectors=True
    )
    assert full.words == v.words
    np.testing.assert_array_equal(full.matrix, v.matrix)


def test_only_the_teacher_table_students_read_tables_alone():
    assert {s.name for s in STUDENTS.values() if s.reads is Reads.TABLES} == {"token", "word", "embed"}
