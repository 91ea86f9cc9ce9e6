"""Fault injection into caches: every damaged file and every bad array is one line, never a crash.

A synthetic cache holds every signal; each test damages a copy (a flipped byte or a truncation in
each signal's file: the checksums catch it before any training) or writes a bad value and reseals
the checksum, as a writer that wrote bad data would have (the array checks catch it before any
Numba kernel indexes with it). The last part damages caches made by a tiny teacher and checks
that re-running extract rebuilds exactly what was lost.
"""

import json
import logging
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctx2static.cache import Cache
from ctx2static.cache.layout import SIGNALS, Ids, Rows, Signal
from ctx2static.cache.validate import first_nonfinite, shard_problem
from ctx2static.cache.writer import write_shard_files
from ctx2static.errors import UserError
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.teacher import Teacher
from ctx2static.students.registry import fit_cache_student
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

from .. import tiny_models as tm
from ..faults import cli_subprocess, dataset_offset, flip, poke, reseal, truncate
from ..synthetic_cache import write_cache

V, T, D, K = 30, 20, 8, 3  # words, teacher tokens, width, substitutes per occurrence


def _synthetic(folder, finish=True):
    rng = np.random.default_rng(0)
    sents = [list(rng.integers(0, V, size=rng.integers(3, 9))) for _ in range(40)]
    n_occ = sum(len(s) for s in sents)
    attention = {
        "occ": np.arange(n_occ, dtype=np.int32),
        "ctx": rng.integers(0, V, n_occ).astype(np.int32),
        "offset": np.ones(n_occ, np.int16),
        "weight": rng.random(n_occ).astype(np.float32),
    }
    return write_cache(
        folder,
        [f"w{i}" for i in range(V)],
        sents,
        10,
        rng.normal(size=(40, D)).astype(np.float32),
        occ_vec=rng.normal(size=(n_occ, D)).astype(np.float32),
        para_ctx=rng.normal(size=(40, D)).astype(np.float32),
        topk=(rng.integers(0, T, (n_occ, K)), rng.normal(size=(n_occ, K))),
        token_words=np.where(np.arange(T) < V, np.arange(T), -1),
        attention=attention,
        vocab_tables={"token_emb": np.ones((V, D), np.float32), "word_emb": np.ones((V, D), np.float32)},
        finish=finish,
    )


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return _synthetic(tmp_path_factory.mktemp("synthetic") / "cache")


@pytest.fixture
def cache_dir(pristine, tmp_path):
    return shutil.copytree(pristine, tmp_path / "cache")


# The student that reads each signal (and the options that make it read it).
READER = {
    "sent_para": ("x2static", {}),
    "sent_offsets": ("x2static", {}),
    "word_ids": ("x2static", {}),
    "word_aligned": ("x2static", {}),
    "sent_ctx": ("x2static", {}),
    "para_ctx": ("x2static", {"context": "para"}),
    "occ_vec": ("bert-sg", {"dim": 4}),
    "topk_ids": ("semglove", {"cooc": "lm"}),
    "topk_scores": ("semglove", {"cooc": "lm"}),
    "attention": ("semglove", {"cooc": "attention"}),
}


def _fails(cli_main, tmp_path, student, options, *expected):
    sets = [a for k, v in options.items() for a in ("--set", f"{k}={v}")]
    code, _, err = cli_main(
        "-q", "fit-student", "-s", student, "--cache", tmp_path / "cache", "-o", tmp_path / "v.txt", *sets
    )
    assert code == 2, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: ") and "Traceback" not in err, err
    for text in expected:
        assert text in last, err
    assert not (tmp_path / "v.txt").exists()


@pytest.mark.parametrize("signal", list(READER))
def test_a_flipped_byte_in_any_signal_is_caught_before_training(cache_dir, tmp_path, cli_main, signal):
    if signal == "attention":
        path = cache_dir / "shard_00002.attn.parquet"
        flip(path)
    else:
        path = cache_dir / "shard_00002.h5"
        flip(path, dataset_offset(path, signal))
    student, options = READER[signal]
    _fails(cli_main, tmp_path, student, options, f"{path}: damaged (checksum mismatch)", "rebuild shard 2")


@pytest.mark.parametrize(
    "name, student, options, fix",
    [
        ("shard_00001.h5", "x2static", {}, "rebuild shard 1"),
        ("shard_00003.attn.parquet", "semglove", {"cooc": "attention"}, "rebuild shard 3"),
        ("vocab.h5", "ase", {}, "rebuild it"),
        ("vocab.h5", "word", {}, "rebuild it"),
        ("teacher_tokens.parquet", "semglove", {"cooc": "lm"}, "rebuild it"),
    ],
)
def test_a_truncated_file_is_caught_before_training(
    cache_dir, tmp_path, cli_main, name, student, options, fix
):
    truncate(cache_dir / name)
    _fails(cli_main, tmp_path, student, options, f"{cache_dir / name}: damaged", fix)


def test_a_missing_shard_file_names_the_shard(cache_dir, tmp_path, cli_main):
    (cache_dir / "shard_00003.h5").unlink()
    _fails(cli_main, tmp_path, "x2static", {}, "shard_00003.h5: missing", "rebuild shard 3")


def test_damaged_running_sums_of_an_unfinished_cache(tmp_path, cli_main):
    folder = _synthetic(tmp_path / "cache", finish=False)
    sums = next(folder.glob("word_sums.*.h5"))
    flip(sums)
    _fails(cli_main, tmp_path, "ase", {}, f"{sums}: damaged", "recompute the per-word sums")


def test_a_damaged_vocabulary_or_manifest_is_one_line(cache_dir, tmp_path, cli_main):
    vocab = cache_dir / "vocab.tsv"
    text = vocab.read_text()
    vocab.write_text(text.replace("w1\t", "w1x\t", 1))
    with pytest.raises(UserError, match="vocab.tsv: damaged"):
        Cache.open(cache_dir)
    vocab.write_bytes(b"\xff\xfe" + text.encode())
    with pytest.raises(UserError, match="vocab.tsv: line 1 is not valid UTF-8"):
        Cache.open(cache_dir)
    (cache_dir / "manifest.json").write_text('{"shards": 3}')
    _fails(cli_main, tmp_path, "x2static", {}, "manifest.json: is not a cache manifest (damaged); delete")


# ------------------------------------------------------------------ bad arrays with valid checksums


@pytest.mark.parametrize(
    "key, index, value, student, options, message",
    [
        ("word_ids", (3,), -5, "x2static", {}, "word ids outside -1..29"),
        ("word_ids", (3,), V, "x2static", {}, "word ids outside -1..29"),
        ("sent_offsets", (4,), 0, "x2static", {}, "sentence offsets"),
        ("sent_para", (0,), 7, None, {}, None),  # paragraph ids are labels: any value is valid
        ("sent_ctx", (1, 2), np.nan, "x2static", {}, "NaN or infinity (sent_ctx row 1)"),
        ("para_ctx", (4, 0), np.inf, "x2static", {"context": "para"}, "NaN or infinity (para_ctx row 4)"),
        ("occ_vec", (7, 1), -np.inf, "bert-sg", {"dim": 4}, "NaN or infinity (occ_vec row 7)"),
        ("topk_scores", (2, 0), np.nan, "semglove", {"cooc": "lm"}, "NaN or infinity (topk_scores row 2)"),
        ("topk_ids", (2, 0), T, "semglove", {"cooc": "lm"}, "teacher token ids outside 0..19 (topk_ids)"),
    ],
)
def test_bad_values_are_refused_before_any_kernel(cache_dir, key, index, value, student, options, message):
    poke(cache_dir / "shard_00000.h5", key, index, value)
    reseal(cache_dir, "shard_00000.h5")
    if student is None:
        assert Cache.open(cache_dir).shard(0)[key][index] == value
        return
    with pytest.raises(UserError, match="shard_00000.h5: ") as err:
        fit_cache_student(student, cache_dir, options)
    assert message in str(err.value) and "rebuild shard 0" in str(err.value)


def _shard_arrays():
    """A valid shard of 2 sentences, 5 words and 4 occurrences (one word outside the vocabulary)."""
    return {
        "sent_para": np.zeros(2, np.int32),
        "sent_offsets": np.array([0, 3, 5]),
        "word_ids": np.array([0, 1, -1, 2, 3], np.int32),
        "word_aligned": np.ones(5, bool),
        "sent_ctx": np.zeros((2, D), np.float16),
    }


@pytest.mark.parametrize(
    "rows, value, message",
    [
        (4, 0, None),  # one row per occurrence: valid
        (5, 0, "has made_up of shape (5, 2), expected 4 rows (one per occurrence)"),
        (4, V, "has word ids outside -1..29 (made_up)"),
        (4, -2, "has word ids outside -1..29 (made_up)"),
    ],
)
def test_a_new_signal_is_checked_from_its_row_of_the_table_alone(monkeypatch, rows, value, message):
    """Adding a row to SIGNALS is enough for its arrays to be checked before any kernel reads them."""
    made_up = Signal("made_up", "made_up", "word ids per row", Rows.OCCURRENCE, kinds="iu", ids=Ids.WORD)
    monkeypatch.setitem(SIGNALS, "made_up", made_up)
    arrays = {**_shard_arrays(), "made_up": np.full((rows, 2), value, np.int32)}
    assert shard_problem(arrays, None, {}, V) == message
    floats = {**_shard_arrays(), "made_up": np.zeros((4, 2), np.float32)}
    assert shard_problem(floats, None, {}, V) == "has made_up of type float32, not an integer type"


def _rewrite_attention(cache_dir, column, index, value):
    path = cache_dir / "shard_00000.attn.parquet"
    cols = {c: pq.read_table(path).column(c).to_numpy().copy() for c in ("occ", "ctx", "offset", "weight")}
    cols[column][index] = value
    pq.write_table(pa.table(cols), path)
    reseal(cache_dir, path.name)


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("weight", np.inf, "NaN or infinity (attention weight row 5)"),
        ("occ", 10_000, "occurrence rows outside"),
    ],
)
def test_bad_attention_rows_are_refused(cache_dir, column, value, message):
    _rewrite_attention(cache_dir, column, 5, value)
    with pytest.raises(UserError, match="attn.parquet|shard_00000.h5") as err:
        fit_cache_student("semglove", cache_dir, {"cooc": "attention"})
    assert message in str(err.value)


@pytest.mark.parametrize("key, student", [("occ_sum", "ase"), ("word_emb", "word")])
def test_nan_in_the_vocabulary_tables_is_refused(cache_dir, key, student):
    poke(cache_dir / "vocab.h5", key, (3, 0), np.nan)
    reseal(cache_dir, "vocab.h5")
    with pytest.raises(UserError, match=rf"vocab.h5: holds NaN/inf \({key} row 3\)"):
        fit_cache_student(student, cache_dir)


def test_a_shard_that_disagrees_with_its_manifest_record_is_refused(cache_dir):
    m = json.loads((cache_dir / "manifest.json").read_text())
    m["shards"][1]["n_occurrences"] += 1
    (cache_dir / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(UserError, match="shard_00001.h5: holds .* for n_occurrences, the manifest"):
        Cache.open(cache_dir).shard(1)


@pytest.mark.slow
def test_an_id_far_out_of_range_is_one_line_not_a_segfault(cache_dir, tmp_path):
    """The issue's case: a flipped byte made a word id of 16,711,861; x2static crashed with SIGSEGV."""
    poke(cache_dir / "shard_00001.h5", "word_ids", (5,), 16_711_861)
    reseal(cache_dir, "shard_00001.h5")
    done = cli_subprocess(
        "-q", "fit-student", "-s", "x2static", "--cache", cache_dir, "-o", tmp_path / "v.txt"
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith("to rebuild shard 1")
    assert "word ids outside -1..29" in done.stderr and "delete its files (shard_00001.*)" in done.stderr


def test_the_array_checks_accept_every_shard_the_writer_wrote(pristine):
    cache = Cache.open(pristine)
    n_tokens = len(cache.teacher_tokens()["id"])
    for i, record in enumerate(cache.manifest["shards"]):
        shard = cache.shard(i)
        assert shard_problem(shard.arrays, shard.attention, record, V, n_tokens) is None


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_the_finite_check_finds_the_first_bad_row_in_every_float_type(dtype, value):
    a = np.full((300, 7), np.finfo(np.float16).max, dtype)  # large but finite everywhere
    assert first_nonfinite(a) is None
    a[211, 6] = a[250, 0] = value
    assert first_nonfinite(a) == 211
    assert first_nonfinite(np.asfortranarray(a)) == 211
    assert first_nonfinite(a[:, 6]) == 211
    assert first_nonfinite(np.arange(5)) is None  # integers are finite by construction


def test_the_writer_refuses_a_shard_holding_nan(tmp_path):
    arrays = {
        "sent_para": np.zeros(1, np.int32),
        "sent_offsets": np.array([0, 2]),
        "word_ids": np.array([0, 1], np.int32),
        "word_aligned": np.ones(2, bool),
        "sent_ctx": np.array([[1.0, np.inf]], np.float16),  # as 7e4 cast to float16
    }
    with pytest.raises(
        UserError, match=r"shard 4: the teacher's output holds NaN or infinity \(sent_ctx row 0\)"
    ):
        write_shard_files(tmp_path, 4, arrays, None)
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------ extract repairs what it finds damaged


CFG = ExtractConfig(shard_size=4, max_length=14, vectors=True, topk=2, attention=2, paragraph=True)


def _corpus(tmp_path_factory):
    p = tmp_path_factory.mktemp("corpus") / "c.txt"
    p.write_text("\n\n".join("\n".join(tm.SENTENCES) for _ in range(3)) + "\n")
    corpus = Corpus([p])
    return corpus, Vocab.build(corpus, VocabConfig(min_count=1))


@pytest.fixture(scope="module")
def extracted(tiny_models, tmp_path_factory):
    corpus, vocab = _corpus(tmp_path_factory)
    teacher = Teacher.load(str(tiny_models["bert"]))
    folder = tmp_path_factory.mktemp("extracted") / "cache"
    extract(corpus, vocab, teacher, folder, CFG)
    return corpus, vocab, teacher, folder


def _files(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.name != ".lock"}


def _rerun(extracted, folder, caplog, monkeypatch=None):
    corpus, vocab, teacher, _ = extracted
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ctx2static"):
        extract(corpus, vocab, teacher, folder, CFG)
    return [r.getMessage() for r in caplog.records]


def _count_shards(monkeypatch):
    import ctx2static.pipeline.shard as ex

    calls = []
    real = ex.shard_arrays
    monkeypatch.setattr(ex, "shard_arrays", lambda *a: calls.append(1) or real(*a))
    return calls


@pytest.mark.parametrize("damage", [flip, truncate, lambda p: p.unlink()])
def test_extract_rebuilds_a_damaged_shard_and_only_it(extracted, tmp_path, caplog, monkeypatch, damage):
    folder = shutil.copytree(extracted[3], tmp_path / "cache")
    damage(folder / "shard_00002.h5")
    with pytest.raises(UserError, match="rebuild shard 2"):
        fit_cache_student("x2static", folder)
    calls = _count_shards(monkeypatch)
    log = _rerun(extracted, folder, caplog)
    assert len(calls) == 1 and "shard 2 rebuilt" in log
    assert any("shard(s) 2 damaged or missing" in line for line in log), log
    assert _files(folder) == _files(extracted[3])
    assert Cache.open(folder).verify() == []


def test_extract_rebuilds_the_attention_file_of_a_shard(extracted, tmp_path, caplog):
    folder = shutil.copytree(extracted[3], tmp_path / "cache")
    flip(folder / "shard_00001.attn.parquet")
    assert "shard 1 rebuilt" in _rerun(extracted, folder, caplog)
    assert _files(folder) == _files(extracted[3])


@pytest.mark.slow
def test_a_damaged_vocab_h5_restarts_extract_from_shard_0(extracted, tmp_path, caplog, monkeypatch):
    """vocab.h5 holds the only copy of the per-word sums once a cache is complete: the teacher reruns."""
    folder = shutil.copytree(extracted[3], tmp_path / "cache")
    flip(folder / "vocab.h5")
    calls = _count_shards(monkeypatch)
    log = _rerun(extracted, folder, caplog)
    assert any("only the teacher can recompute: extract starts again from shard 0" in line for line in log)
    assert len(calls) == Cache.open(folder).n_shards
    assert _files(folder) == _files(extracted[3])


@pytest.mark.parametrize("name", ["teacher_tokens.parquet", "teacher_tokenizer.json", "vocab.tsv"])
def test_damaged_token_and_vocabulary_files_are_rewritten_without_the_shards(
    extracted, tmp_path, caplog, monkeypatch, name
):
    folder = shutil.copytree(extracted[3], tmp_path / "cache")
    flip(folder / name)
    calls = _count_shards(monkeypatch)
    _rerun(extracted, folder, caplog)
    assert calls == []
    assert _files(folder) == _files(extracted[3])


@pytest.mark.slow
def test_damaged_running_sums_restart_an_unfinished_extract(extracted, tmp_path, caplog, monkeypatch):
    import ctx2static.pipeline.shard as ex

    corpus, vocab, teacher, whole = extracted
    folder = tmp_path / "cache"
    real, calls = ex.shard_arrays, []

    def dies_at_the_third(*args):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(ex, "shard_arrays", dies_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        extract(corpus, vocab, teacher, folder, CFG)
    monkeypatch.setattr(ex, "shard_arrays", real)
    sums = next(folder.glob("word_sums.*.h5"))
    truncate(sums)
    log = _rerun(extracted, folder, caplog)
    assert any(f"{sums}: damaged" in line and "starts again from shard 0" in line for line in log)
    assert _files(folder) == _files(whole)


def test_an_intact_complete_cache_runs_no_teacher(extracted, tmp_path, caplog, monkeypatch):
    folder = shutil.copytree(extracted[3], tmp_path / "cache")
    calls = _count_shards(monkeypatch)
    _rerun(extracted, folder, caplog)
    assert calls == []


def test_students_that_read_only_the_word_tables_do_not_hash_the_shards(cache_dir):
    flip(cache_dir / "shard_00001.h5")
    assert len(fit_cache_student("ase", cache_dir)) == V  # reads vocab.h5 only
    with pytest.raises(UserError, match="rebuild shard 1"):
        fit_cache_student("semglove", cache_dir, {"cooc": "window"})  # no signal, but the word ids


@pytest.mark.parametrize(
    "student, options, signal, flag",
    [
        ("bert-sg", {}, "occ_vec", "--vectors"),
        ("ctx2vec", {}, "occ_vec", "--vectors"),
        ("x2static", {"context": "para"}, "para_ctx", "--paragraph"),
        ("semglove", {"cooc": "lm"}, "topk_ids", "--topk K"),
        ("semglove", {"cooc": "attention"}, "attention", "--attention S"),
    ],
)
def test_a_missing_signal_is_one_line_in_fit_student_and_in_run_before_any_extract(
    tmp_path, cli_main, tiny_models, student, options, signal, flag
):
    """The issue's case 5: bert-sg on a cache made without --vectors was a KeyError traceback."""
    rng = np.random.default_rng(0)
    write_cache(tmp_path / "cache", ["a", "b"], [[0, 1, 0]], 4, rng.normal(size=(1, 4)))
    _fails(
        cli_main,
        tmp_path,
        student,
        options,
        f"needs the cache signal '{signal}'",
        f"extract again with {flag}",
    )
    (tmp_path / "c.txt").write_text("a b a\n")
    opts = ", ".join(f'{k} = "{v}"' for k, v in options.items())
    (tmp_path / "s.toml").write_text(
        f'[corpus]\nfiles = ["c.txt"]\nmin_count = 1\n[teachers.t]\nmodel = "{tiny_models["bert"]}"\n'
        f'[students.{student}]\nteacher = "t"\noptions = {{ {opts} }}\n'
    )
    code, _, err = cli_main("run", tmp_path / "s.toml", "--out", tmp_path / "run")
    assert code == 2 and err.count("\n") == 1 and f"needs the cache signal '{signal}'" in err, err
    assert not (tmp_path / "run").exists()  # refused before the study folder, let alone an extract


@pytest.mark.parametrize("with_embeddings", [False, True])
def test_a_token_table_declaring_millions_of_rows_is_refused_before_it_is_read(
    tmp_path, monkeypatch, with_embeddings
):
    from ctx2static import memory

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(6)]
    tables = None
    if with_embeddings:  # what a real extract writes: one embedding row per teacher token
        zeros = np.zeros((6, 4), np.float32)
        tables = {"token_emb": zeros, "word_emb": zeros, "teacher_token_emb": np.zeros((5, 4), np.float16)}
    folder = write_cache(
        tmp_path / "c", words, [[0, 1, 2], [3, 4, 5]], 2, rng.normal(size=(2, 4)).astype(np.float32),
        vocab_tables=tables, token_words=np.array([0, 1, -1, 2, 3]),
    )  # fmt: skip
    n = 5_000_000  # one value repeated: a few kB on disk
    table = pa.table(
        {"id": pa.array(np.zeros(n, np.int32)), "token": pa.array([""] * n), "word": np.full(n, -1)}
    )
    pq.write_table(table, folder / "teacher_tokens.parquet", row_group_size=n)
    assert (folder / "teacher_tokens.parquet").stat().st_size < 200_000
    reseal(folder, "teacher_tokens.parquet")
    monkeypatch.setattr(memory, "available_bytes", lambda: 100_000_000)
    monkeypatch.setattr(pq, "read_table", lambda *_a, **_k: pytest.fail("read before the check"))
    said = (
        "declares 5,000,000 rows, not one for each of the teacher's 5 tokens"
        if with_embeddings
        else (r"\(5,000,000 rows as its metadata declares\) needs about .* more than the 95\.4 MiB available")
    )
    with pytest.raises(UserError, match=said):
        Cache.open(folder).teacher_tokens()


def test_an_hdf5_array_declaring_terabytes_is_refused_before_it_is_read(tmp_path):
    import h5py

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(6)]
    folder = write_cache(
        tmp_path / "c", words, [[0, 1, 2], [3, 4, 5]], 2, rng.normal(size=(2, 4)).astype(np.float32)
    )
    with h5py.File(folder / "vocab.h5", "a") as f:  # 4 TB declared, nothing written: a few kB on disk
        del f["word_emb"]
        f.create_dataset(
            "word_emb", shape=(10**9, 1024), dtype=np.float32, chunks=(1024, 64), compression="gzip"
        )
    assert (folder / "vocab.h5").stat().st_size < 1_000_000
    reseal(folder, "vocab.h5")
    with pytest.raises(
        UserError, match=r"vocab\.h5 \(its arrays as their headers declare them\) needs about 3\.73 TiB"
    ):
        Cache.open(folder).vocab_arrays()
