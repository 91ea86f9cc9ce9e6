"""--backend onnx: the torch teacher's hidden states from ONNX Runtime, exported once, a cache of its own."""

import itertools
import sys

import numpy as np
import pytest

from ctx2static.cache import Cache
from ctx2static.cache.info import describe
from ctx2static.errors import UserError
from ctx2static.pipeline import onnx
from ctx2static.pipeline.config import ExtractConfig, TeacherConfig
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.shard import ShardMaker
from ctx2static.pipeline.teacher import Request, Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

pytest.importorskip("onnxruntime")

ONNX = TeacherConfig(backend="onnx")
ONNX_INT8 = TeacherConfig(backend="onnx", precision="int8")


@pytest.fixture(autouse=True)
def user_cache(tmp_path, monkeypatch):
    """Exports go to this test's own user cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "ctx2static" / "onnx"


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


@pytest.mark.parametrize("family", ["bert", "mpnet", "roberta", "gpt2", "llama", "gemma3"])
def test_onnx_float32_gives_the_torch_hidden_states_and_int8_comes_close(
    tiny_models, corpus_sentences, family
):
    exact = Teacher.load(str(tiny_models[family]))
    ort = Teacher.load(str(tiny_models[family]), ONNX)
    encs = exact.encode(corpus_sentences)
    request = Request(vectors=True, hidden_states=True)
    # the whole padded batch, and one input alone (no padding, another length than the export's)
    for batch in (encs, encs[3:4]):
        for a, b in zip(exact.forward(batch, request), ort.forward(batch, request), strict=True):
            for name in ("mean", "vectors", "hidden", "hidden_mean"):
                np.testing.assert_allclose(getattr(b, name), getattr(a, name), atol=1e-4, err_msg=name)
    int8 = Teacher.load(str(tiny_models[family]), ONNX_INT8)
    assert (ort.precision, int8.precision) == ("float32", "int8")
    for a, b in zip(exact.forward(encs, request), int8.forward(encs, request), strict=True):
        assert cosines(a.vectors, b.vectors).min() > 0.99 and cosines(a.mean, b.mean) > 0.99
        assert not np.allclose(a.vectors, b.vectors, atol=1e-6)  # quantized: close, yet not the float32 pass


def test_a_cache_begun_with_torch_is_not_continued_with_onnx(tiny_models, corpus_file, tmp_path):
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=2))
    cfg = ExtractConfig(shard_size=4)
    torch_teacher = Teacher.load(str(tiny_models["bert"]))
    m = extract(corpus, vocab, torch_teacher, tmp_path / "c", cfg)
    assert m["identity"]["teacher"]["backend"] == "torch"
    ort = Teacher.load(str(tiny_models["bert"]), ONNX)
    with pytest.raises(
        UserError, match=r"^\S+: holds a cache from a different run \(differs in teacher\.backend\)"
    ):
        extract(corpus, vocab, ort, tmp_path / "c", cfg)
    assert extract(corpus, vocab, torch_teacher, tmp_path / "c", cfg)["complete"]
    m = extract(corpus, vocab, ort, tmp_path / "o", cfg)
    assert m["identity"]["teacher"]["backend"] == "onnx" and m["complete"]
    assert "float32 on onnx (" in describe(tmp_path / "o", verify=False)[0]


def test_the_word_table_reads_its_own_layers_from_the_onnx_graph(tiny_models, corpus_file, tmp_path):
    """The graph returns only the hidden states asked for: the word layer is not the cache's (1:)."""
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    cfg = ExtractConfig(shard_size=4, word_template="x {w}", word_layer="0")
    tables = {}
    for config in (TeacherConfig(), ONNX):
        out = tmp_path / config.backend.value
        extract(corpus, vocab, Teacher.load(str(tiny_models["bert"]), config), out, cfg)
        tables[config.backend.value] = Cache.open(out).vocab_arrays()["word_emb"]
    np.testing.assert_allclose(tables["onnx"], tables["torch"], atol=1e-4)
    layers_1_2 = ExtractConfig(shard_size=4, word_template="x {w}")
    extract(
        corpus, vocab, Teacher.load(str(tiny_models["bert"]), ONNX), tmp_path / "cache_layers", layers_1_2
    )
    assert not np.allclose(Cache.open(tmp_path / "cache_layers").vocab_arrays()["word_emb"], tables["onnx"])


def test_the_export_is_made_once_per_teacher_and_precision(tiny_models, user_cache, monkeypatch):
    Teacher.load(str(tiny_models["bert"]), ONNX_INT8)  # int8 exports float32 first, then quantizes it
    (key,) = [p.name for p in user_cache.iterdir()]
    graphs = {p: p.stat().st_mtime_ns for p in user_cache.glob("*/*/model.onnx")}
    assert {p.parent.name for p in graphs} == {"float32", onnx.recipe(ONNX_INT8.precision)}
    import onnx as onnx_format

    ops = {p.parent.name: {n.op_type for n in onnx_format.load(p).graph.node} for p in graphs}
    assert "Attention" in ops["float32"] and "QAttention" in ops[onnx.recipe(ONNX_INT8.precision)]  # fused

    def fail(*_args: object) -> None:
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx, "_export", fail)
    monkeypatch.setattr(onnx, "_fuse", fail)
    monkeypatch.setattr(onnx, "_quantize", fail)
    Teacher.load(str(tiny_models["bert"]), ONNX)
    Teacher.load(str(tiny_models["bert"]), ONNX_INT8)
    assert {p: p.stat().st_mtime_ns for p in user_cache.glob("*/*/model.onnx")} == graphs
    assert onnx.teacher_key(str(tiny_models["bert"])) == key
    other = onnx.teacher_key(str(tiny_models["roberta"]))
    assert other != key  # another model is another export


def test_changed_weights_are_exported_again(tiny_models, tmp_path):
    import shutil

    folder = shutil.copytree(tiny_models["bert"], tmp_path / "bert")
    key = onnx.teacher_key(str(folder))
    weights = next(folder.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes())  # rewritten: another time stamp
    assert onnx.teacher_key(str(folder)) != key


def test_signals_the_graph_does_not_compute_are_refused_in_one_line(tiny_models, corpus_file):
    ort = Teacher.load(str(tiny_models["bert"]), ONNX)
    vocab = Vocab.build(Corpus([corpus_file]), VocabConfig(min_count=2))
    for cfg, flag in ((ExtractConfig(topk=2), "--topk"), (ExtractConfig(attention=2), "--attention")):
        with pytest.raises(
            UserError, match=f"^{flag} needs the LM head or attention weights.*use --backend torch$"
        ):
            ShardMaker(ort, vocab, cfg, lowercase=True)


def test_precisions_onnx_does_not_run_and_a_missing_onnxruntime_are_one_line(tiny_models, monkeypatch):
    with pytest.raises(UserError, match=r"^--precision bfloat16 must be auto, float32 or int8 with backend"):
        TeacherConfig(backend="onnx", precision="bfloat16")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails as when not installed
    with pytest.raises(UserError, match=r"pip install 'ctx2static\[onnx\]'"):
        Teacher.load(str(tiny_models["bert"]), ONNX)


def test_a_damaged_export_is_one_line_naming_the_folder_to_delete(tiny_models, user_cache):
    Teacher.load(str(tiny_models["bert"]), ONNX_INT8)
    for graph in user_cache.glob("*/*/model.onnx"):
        clean = graph.read_bytes()
        data = bytearray(clean)
        data[len(data) // 2] ^= 0x01  # one bit: ORT would load it and compute other numbers
        graph.write_bytes(bytes(data))
        with pytest.raises(
            UserError,
            match=rf"^{graph.parent}: model\.onnx does not match the sha256 written when it was made .*"
            rf"delete it \(rm -r {graph.parent}\) and run again: it is made anew from the teacher$",
        ):
            Teacher.load(str(tiny_models["bert"]), ONNX if graph.parent.name == "float32" else ONNX_INT8)
        graph.write_bytes(clean)
    Teacher.load(str(tiny_models["bert"]), ONNX_INT8)  # whole again: loads


@pytest.mark.slow
@pytest.mark.parametrize(
    # int8 floors (word vectors' 1st percentile cosine, sentence means' least) below
    # bench/results/onnx_teacher.md's: MPNet's activations lose more to 8 bits than MiniLM's. The 1st
    # percentile, not the least: where activations keep 7 bits (no VNNI, int8.full_range_activations)
    # a punctuation token with outlier activations falls far (MPNet's "," 0.54 on an AVX2 EPYC, whose
    # 1st percentile is 0.94)
    ("name", "int8_floors"),
    [("minilm", (0.95, 0.98)), ("mpnet", (0.85, 0.93))],
)
def test_the_real_teachers_fused_graphs_give_their_hidden_states(name, int8_floors, mini_corpus, monkeypatch):
    from ctx2static.pipeline.models import resolve

    try:
        resolve(name)
    except UserError as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    words = [t for _, t in itertools.islice(Corpus([mini_corpus]).sentences(), 48)]
    exact, ort, int8 = (Teacher.load(name, c) for c in (TeacherConfig(), ONNX, ONNX_INT8))
    encs = exact.encode(words)
    request = Request(vectors=True)
    words_cos, means_cos = [], []
    for a, b, c in zip(*(t.forward(encs, request) for t in (exact, ort, int8)), strict=True):
        np.testing.assert_allclose(b.vectors, a.vectors, atol=1e-4)
        np.testing.assert_allclose(b.mean, a.mean, atol=1e-4)
        words_cos.append(cosines(a.vectors, c.vectors))
        means_cos.append(cosines(a.mean, c.mean))
    word_floor, mean_floor = int8_floors
    assert np.percentile(np.concatenate(words_cos), 1) > word_floor and min(means_cos) > mean_floor


def test_ort_runs_the_threads_asked_for_or_as_many_as_torch(tiny_models):
    import torch

    from ctx2static.pipeline.teacher import torch_threads

    with torch_threads(1):
        assert torch.get_num_threads() == 1
        ort = Teacher.load(str(tiny_models["bert"]), ONNX)  # 0: as torch (a Ray worker runs 1)
        assert ort.onnx is not None and ort.onnx.session.get_session_options().intra_op_num_threads == 1
        ort = Teacher.load(str(tiny_models["bert"]), TeacherConfig(backend="onnx", threads=2))
        assert ort.onnx is not None and ort.onnx.session.get_session_options().intra_op_num_threads == 2


def test_onnx_runtime_writes_no_telemetry(tmp_path):
    import os
    import subprocess

    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    env.pop("ORT_DISABLE_TELEMETRY", None)
    code = "from ctx2static.pipeline.onnx import onnxruntime_module as m; m().get_available_providers()"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    assert not list(tmp_path.rglob("*")), "onnxruntime wrote files at import"
