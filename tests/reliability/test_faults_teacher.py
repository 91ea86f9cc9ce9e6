"""Teacher folders handed over by a careless or hostile user: code of their own, broken files.

A model folder is data: nothing in it is ever run (transformers imports a folder's Python files
for a config with ``auto_map`` when trusted, and asks on stdin when not told), and a folder whose
files do not load is one line naming the folder and the part that failed, never a traceback.
"""

import json
import pickle
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
import transformers

from ctx2static.errors import UserError
from ctx2static.pipeline.teacher import Teacher

from .. import tiny_models as tm
from ..faults import cli_command, cli_env

_CODE = "open({marker!r}, 'w').write('ran')\n"


def _evil_folder(root: Path, marker: Path) -> Path:
    """A model folder whose config maps AutoConfig and AutoModel to its own modules; they write ``marker``."""
    folder = root / "evil"
    folder.mkdir()
    config = {
        "model_type": "evil",
        "architectures": ["EvilModel"],
        "auto_map": {"AutoConfig": "configuration_evil.EvilConfig", "AutoModel": "modeling_evil.EvilModel"},
    }
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "configuration_evil.py").write_text(
        _CODE.format(marker=str(marker))
        + "from transformers import PretrainedConfig\n\n\nclass EvilConfig(PretrainedConfig):\n"
        "    model_type = 'evil'\n"
    )
    (folder / "modeling_evil.py").write_text(
        _CODE.format(marker=str(marker))
        + "from transformers import PreTrainedModel\n\n\nclass EvilModel(PreTrainedModel):\n    pass\n"
    )
    return folder


def test_a_teacher_folder_with_code_of_its_own_is_refused_before_any_of_it_runs(tmp_path):
    marker = tmp_path / "ran"
    folder = _evil_folder(tmp_path, marker)
    corpus = tmp_path / "s.txt"
    corpus.write_text("\n".join(tm.SENTENCES) + "\n")
    out = tmp_path / "cache"
    args = ["extract", "--teacher", folder, "--corpus", corpus, "--out", out, "--min-count", "1"]
    # `yes |`: whatever transformers would ask on stdin is answered yes
    done = subprocess.run(
        cli_command(*args), env=cli_env(), input="y\n" * 100, capture_output=True, text=True, timeout=300
    )
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert errors == [
        f"error: {folder / 'config.json'}: the model names code of its own (auto_map), and ctx2static never "
        "runs code from a model folder; use a model whose architecture transformers implements"
    ]
    assert not marker.exists()


def test_code_named_by_the_tokenizer_config_is_refused_too(tmp_path, tiny_models):
    folder = shutil.copytree(tiny_models["bert"], tmp_path / "bert")
    path = folder / "tokenizer_config.json"
    config = {**json.loads(path.read_text()), "auto_map": {"AutoTokenizer": ["t.T", None]}}
    path.write_text(json.dumps(config))
    with pytest.raises(UserError, match=r"tokenizer_config.json: the model names code of its own"):
        Teacher.load(str(folder))


def test_a_hub_model_with_code_of_its_own_is_refused_and_its_code_never_runs(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    repo = tmp_path / "hub" / "models--someone--evil"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    marker = tmp_path / "ran"
    shutil.copytree(_evil_folder(tmp_path, marker), repo / "snapshots" / ("0" * 40))
    with pytest.raises(
        UserError, match=r"^teacher 'someone/evil' \(someone/evil\): the model needs code of its own"
    ):
        Teacher.load("someone/evil")
    assert not marker.exists()


def test_every_load_passes_trust_remote_code_false(monkeypatch, tiny_models):
    """Hub ids too: no load leaves the choice to transformers' prompt."""
    calls = []
    for cls in (transformers.AutoConfig, transformers.AutoTokenizer, transformers.AutoModelForMaskedLM):
        real = cls.from_pretrained.__func__

        def spy(klass, *args, real=real, **kwargs):
            calls.append((klass.__name__, kwargs.get("trust_remote_code", "unset")))
            return real(klass, *args, **kwargs)

        monkeypatch.setattr(cls, "from_pretrained", classmethod(spy))
    Teacher.load(str(tiny_models["bert"]))
    assert {name for name, _ in calls} >= {"AutoConfig", "AutoTokenizer", "AutoModelForMaskedLM"}
    assert all(trust is False for _, trust in calls), calls


class _Payload:
    """A pickle that runs code when unpickled (torch's weights-only loader must refuse it)."""

    def __reduce__(self):
        return (print, ("payload ran",))


def _no_tensors(folder: Path) -> None:
    header = json.dumps({"__metadata__": {"format": "pt"}}).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)


def _pickled(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload()))


def _wider_config(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    config.update(hidden_size=config["hidden_size"] * 2, intermediate_size=config["intermediate_size"] * 2)
    (folder / "config.json").write_text(json.dumps(config))


def _cut(folder: Path, keep: float) -> None:
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[: int(path.stat().st_size * keep)])


BROKEN = {
    "weights of other shapes": (_wider_config, r"cannot load its weights \(the weights have other shapes"),
    "tokenizer.json of another structure": (
        lambda f: (f / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "WordPiece"}}'),
        r"cannot load its tokenizer \(",
    ),
    "tokenizer.json a list": (
        lambda f: (f / "tokenizer.json").write_text("[1, 2, 3]"),
        r"cannot load its tokenizer \(",
    ),
    "truncated safetensors": (lambda f: _cut(f, 0.5), r"cannot load its weights \(SafetensorError: "),
    "empty safetensors": (lambda f: _cut(f, 0), r"cannot load its weights \(SafetensorError: .*too small"),
    "huge safetensors header": (
        lambda f: (f / "model.safetensors").write_bytes(struct.pack("<Q", 1 << 62) + b"{}"),
        r"cannot load its weights \(SafetensorError: .*header too large",
    ),
    "safetensors without tensors": (_no_tensors, r"its weights lack \d+ of the model's tensors"),
    "no weight file": (
        lambda f: (f / "model.safetensors").unlink(),
        r"cannot load its weights \(OSError: .*no file named model.safetensors",
    ),
    "pickled weights": (_pickled, r"cannot load its weights \(a pickle that holds more than tensors"),
    "config not JSON": (
        lambda f: (f / "config.json").write_text("{not json"),
        r"config.json: not a readable JSON file",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_teacher_folder_is_one_line(case, tmp_path, tiny_models, capfd):
    damage, message = BROKEN[case]
    folder = shutil.copytree(tiny_models["bert"], tmp_path / "bert")
    damage(folder)
    with pytest.raises(UserError, match=message) as exc:
        Teacher.load(str(folder))
    assert "\n" not in str(exc.value) and str(exc.value).startswith(str(folder))
    assert "re-download or re-save the model folder" in str(exc.value)
    assert "payload ran" not in capfd.readouterr().out


BAD_VOCAB = {
    "a repeated word": ("the\t5\ncat\t3\nthe\t2\n", "line 3 repeats the word 'the' of line 1"),
    "a word with a space": ("the\t5\ngrand jury\t3\n", "line 2 holds 'grand jury', a word with a blank"),
    "an empty word": ("the\t5\n\t3\n", "line 2 holds an empty word"),
    "no words": ("", "holds no words"),
}


@pytest.mark.parametrize("case", list(BAD_VOCAB))
def test_a_bad_vocab_list_is_refused_before_the_teacher_loads(
    case, tmp_path, tiny_models, cli_main, monkeypatch
):
    text, message = BAD_VOCAB[case]

    def too_early(*_args, **_kwargs):
        raise AssertionError("the teacher loaded before --vocab was read")

    monkeypatch.setattr(Teacher, "load", too_early)
    vocab, corpus = tmp_path / "v.tsv", tmp_path / "c.txt"
    vocab.write_text(text)
    corpus.write_text("\n".join(tm.SENTENCES) + "\n")
    args = ["-q", "extract", "--teacher", tiny_models["bert"], "--corpus", corpus, "--vocab", vocab]
    code, _, err = cli_main(*args, "--out", tmp_path / "cache")
    assert code == 2 and err.startswith(f"error: {vocab}: {message}") and len(err.splitlines()) == 1
    assert not (tmp_path / "cache").exists()
