"""Every study under bench/studies loads and runs end to end on a tiny variant of itself.

The variant is the same file with the corpus, the teachers' model, the references' vectors and the
lexicons swapped for small ones (a random 1-layer BERT, the bundled 2,000-sentence test corpus,
three-line lexicons), and each teacher stopped after 40 sentences: the students, their options, the
retrofits and the evaluation are the file's own, but for the families that train probes (downstream,
sentences: minutes on any vectors). The full-corpus runs take hours (commands in each file's header).
"""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from ctx2static.eval.families import FAMILIES
from ctx2static.study.loader import load_study
from ctx2static.study.runner import run_study
from ctx2static.vectors import Vectors

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from ..tiny_models import WORDS, save_model, wordpiece_tokenizer

STUDIES = sorted((Path(__file__).parents[2] / "bench" / "studies").glob("*.toml"))


def _value(v) -> str:
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(v)


def _dump(data: dict) -> str:
    """TOML of a parsed study: tables of values (inline tables inside) and arrays of tables."""
    lines = []
    for key, v in data.items():
        for item in v if isinstance(v, list) else [v]:
            lines.append(f"[[{key}]]" if isinstance(v, list) else f"[{key}]")
            lines += [f"{json.dumps(k)} = {_value(x)}" for k, x in item.items()]
    return "\n".join(lines) + "\n"


SMALL_LEXICONS = {  # words of the test corpus
    "lexicons": "great good large\nsmall little\npeople nation country world\n",
    "antonyms": "large small little\ngreat little\n",
}


def tiny_variant(study: Path, tmp: Path, teacher: Path, corpus: Path, bundled: bool = False) -> Path:
    """``study`` with its inputs swapped for small ones, written to ``tmp``.

    Lexicon files become three-line ones of the same stem (so retrofits keep their default names);
    with ``bundled`` the bundled lexicons too, whose reading (WordNet's 110,000 lines, once per
    retrofit) would otherwise be most of a study's run.
    """
    data = tomllib.loads(study.read_text(encoding="utf-8"))
    data["corpus"]["files"] = [str(corpus)]
    students = data.get("students", {}).items()
    embedded = {s.get("teacher") for name, s in students if s.get("student", name) == "embed"}
    for name, t in data.get("teachers", {}).items():
        t.update(model=str(teacher), max_sentences=40)
        if name in embedded:  # the tiny BERT names no prompt: auto writes no embed table for it
            t["embed_template"] = "{w}"
        if t.get("prompt"):  # nor a corpus prompt to name: a text of the same words stands in
            t["prompt"] = "title: none | text:"
    rng = np.random.default_rng(0)
    for name, ref in data.get("references", {}).items():
        path = tmp / f"{name}.bin"
        Vectors(WORDS, rng.normal(size=(len(WORDS), 8)), None, {"train_seconds": 1.0}).save(path)
        ref["vectors"] = str(path)
    for r in data.get("retrofit", []):
        for key, default in (("lexicons", ["wordnet"]), ("antonyms", [])):
            given = r.get(key, default)
            if given:
                r[key] = [_small_lexicon(lex, tmp, key) if bundled or "/" in lex else lex for lex in given]
    for name in list(data.get("eval", {}).get("families", [])):
        if not FAMILIES[name].default:  # probes trained for minutes on any vectors (tested in tests/eval)
            data["eval"]["families"].remove(name)
            data["eval"].pop(name, None)
    out = tmp / study.name
    out.write_text(_dump(data), encoding="utf-8")
    return out


def _small_lexicon(lex: str, tmp: Path, key: str) -> str:
    path = tmp / key / f"{Path(lex).name.split('.')[0]}.txt"
    path.parent.mkdir(exist_ok=True)
    path.write_text(SMALL_LEXICONS[key])
    return str(path)


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> Path:
    """A random 1-layer BERT with MiniLM's width (384): the students' default dims (up to 300) fit."""
    from transformers import BertConfig, BertForMaskedLM

    tok = wordpiece_tokenizer()
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden_size=384,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        pad_token_id=tok.pad_token_id,
    )
    return save_model(BertForMaskedLM(cfg), tok, tmp_path_factory.mktemp("bert") / "tiny-bert")


@pytest.mark.parametrize("study", STUDIES, ids=[s.stem for s in STUDIES])
def test_a_bench_study_loads_as_a_tiny_variant_that_keeps_its_runs(tmp_path, teacher, mini_corpus, study):
    data = tomllib.loads(study.read_text(encoding="utf-8"))
    tiny = tiny_variant(study, tmp_path, teacher, mini_corpus)
    spec = load_study(tiny)
    assert [s.name for s in spec.students] == list(data["students"])
    given = data.get("retrofit", [])  # a retrofit without a name takes VECTORS+LEXICON
    assert len(spec.retrofits) == len(given)
    assert all(r.name == g.get("name", r.name) for r, g in zip(spec.retrofits, given, strict=True))
    assert [r.name for r in spec.references] == list(data.get("references", {}))
    assert spec.corpus.vocab.min_count == data["corpus"].get("min_count", 5)
    assert tomllib.loads(tiny.read_text(encoding="utf-8"))["students"] == data["students"]


@pytest.mark.slow
@pytest.mark.parametrize("study", STUDIES, ids=[s.stem for s in STUDIES])
def test_a_bench_study_runs_end_to_end_on_a_tiny_variant(tmp_path, teacher, mini_corpus, study):
    spec = load_study(tiny_variant(study, tmp_path, teacher, mini_corpus, bundled=True))
    results = run_study(spec, tmp_path / "run")
    assert list(results.common) == spec.outputs and len(spec.outputs) >= 3
    assert all(any(s.benchmark == "avg5" for s in scores) for scores in results.common.values())
    report = (tmp_path / "run" / "report.md").read_text()
    for name in spec.outputs:
        assert f"| eval {name} |" in report
    for ref in spec.references:
        assert f"| reference {ref.name} |" in report
