"""The hostile-input cases, run as a user would: the exact line printed, the exit code, and whether
anything the user had changed (a sha256 of every file the case did not name as an output).

    python bench/probes/hostile_cases.py --out bench/results/hostile_cases.md
    python bench/probes/hostile_cases.py --round 4 --out bench/results/hostile_cases_4.md
    python bench/probes/hostile_cases.py --round 5 --out bench/results/hostile_cases_5.md
    python bench/probes/hostile_cases.py --round 6 --out bench/results/hostile_cases_6.md  # as root: mounts
    python bench/probes/hostile_cases.py --round 7 --out bench/results/hostile_cases_7.md

Small data only (the bundled test corpus, the packaged MiniLM for the extract cases); a few minutes.
Each case is also a test in tests/ (named in the table); this script is the table of the closing note.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, str(ROOT / "cli.py")]
MINI = ROOT / "tests" / "data" / "mini.txt.xz"


def digest(folder: Path) -> dict[str, str]:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            out[str(p)] = "link->" + os.readlink(p)
        elif p.is_file():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def run(
    args: list[str],
    cwd: Path,
    term_after: float | None = None,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
) -> tuple[int, str]:
    if term_after is None:
        p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=900, input=stdin, env=env)
        rc, err, out = p.returncode, p.stderr, p.stdout
    else:
        proc = subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(term_after)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
        rc = proc.returncode
    # the tool's own line: the last of stderr that is not a progress bar or a library's log
    lines = [ln for ln in err.splitlines() if ln.strip() and "%|" not in ln and not ln.startswith(" ")]
    lines = lines or out.strip().splitlines() or [""]
    return rc, lines[-1][:220]


def cases() -> list[tuple[str, list[str], dict]]:
    """(name, command, options) per case; ``options["setup"]`` names what :func:`setup` prepares."""
    sgns = [*CLI, *f"fit-student -s sgns --corpus {MINI} --epochs 1 --dim 20".split()]
    extract = [*CLI, *"extract --corpus mini.txt --teacher minilm --max-sentences 50".split()]
    ray = [*extract, "--out", "r", "--engine", "ray", "--address"]
    return [
        ("1 lock is a symlink (extract)", [*extract, "--out", "c"], {"setup": "lock"}),
        ("2 fit-student --out a char device", [*sgns, "--out", "dev"], {"setup": "device"}),
        ("2 eval --json a char device", [*CLI, "eval", "v.txt", "--json", "dev"], {"setup": "device"}),
        (
            "3 --out = --corpus",
            [*CLI, *"fit-student -s sgns --corpus same.txt --out same.txt".split()],
            {"setup": "same"},
        ),
        (
            "3 --out = --corpus via ..",
            [*CLI, *"fit-student -s sgns --corpus same.txt --out sub/../same.txt".split()],
            {"setup": "same"},
        ),
        (
            "4 manifest names ../precious.h5 (extract resumes)",
            [*extract, "--out", "c"],
            {"setup": "manifest"},
        ),
        ("6 word twice in word2vec text", [*CLI, "neighbours", "dup.txt", "king"], {"setup": "dup"}),
        ("7 subwords.npy truncated", [*CLI, "neighbours", "vec", "king"], {"setup": "composer"}),
        ("7 meta.json composer: 5", [*CLI, "neighbours", "vec2", "king"], {"setup": "meta"}),
        ("8 --set lr=1", [*sgns, "--out", "o.txt", "--set", "lr=1"], {}),
        ("9 --seed -1", [*sgns, "--out", "o.txt", "--seed", "-1"], {}),
        ("10 ray://127.0.0.1:1", [*ray, "ray://127.0.0.1:1"], {"setup": "mini"}),
        ("10 127.0.0.1:1", [*ray, "127.0.0.1:1"], {"setup": "mini"}),
        (
            "11 SIGTERM fit-student",
            [*CLI, *f"fit-student -s sgns --corpus {MINI} --out t.txt --epochs 5000".split()],
            {"term": 15.0},
        ),
        ("13 --teacher minilm --out minilm, twice", [*extract, "--out", "minilm"], {"setup": "twice"}),
        (
            "14 export model2vec onto a file",
            [*CLI, *"export v.txt --format model2vec --out F --no-eval".split()],
            {"setup": "file"},
        ),
        (
            "minor x2static --threads",
            [*CLI, *"fit-student -s x2static --cache c --out x.txt --threads 2".split()],
            {},
        ),
        (
            "minor lexicon with 0 pairs",
            [*CLI, *"retrofit v.txt --lexicon /etc/passwd --out r.txt".split()],
            {"setup": "vec"},
        ),
    ]


def setup(kind: str, w: Path) -> None:
    (w / "precious.txt").write_text("precious\n")
    if kind in ("lock", "mini", "twice", "manifest"):
        shutil.copy(MINI, w / "mini.txt.xz")
        subprocess.run(["xz", "-dkf", str(w / "mini.txt.xz")], check=True)
    if kind == "lock":
        (w / "c").mkdir()
        (w / "c" / ".lock").symlink_to(w / "precious.txt")
    if kind in ("device", "file", "vec", "dup", "composer", "meta"):
        words = ["king", "queen", "man", "woman"]
        (w / "v.txt").write_text("4 3\n" + "".join(f"{x} {i} 1 0\n" for i, x in enumerate(words)))
    if kind == "device":
        os.mknod(w / "dev", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    if kind == "same":
        shutil.copy(MINI, w / "same.txt.xz")
        subprocess.run(["xz", "-dkf", str(w / "same.txt.xz")], check=True)
        (w / "sub").mkdir()
    if kind == "dup":
        (w / "dup.txt").write_text("3 2\nking 1 0\nqueen 0 1\nking 1 0\n")
    if kind in ("composer", "meta"):
        import numpy as np

        for name in ("vec", "vec2"):
            (w / name).mkdir()
            np.save(w / name / "vectors.npy", np.eye(3, dtype=np.float32))
            (w / name / "vocab.tsv").write_text("king\t3\nqueen\t2\nman\t1\n")
            (w / name / "meta.json").write_text(json.dumps({"composer": {"lowercase": True}}))
        (w / "vec" / "subwords.npy").write_bytes(b"\x93NUMPY\x01\x00")
        (w / "vec" / "tokenizer.json").write_text("{}")
        (w / "vec2" / "meta.json").write_text(json.dumps({"composer": 5}))
    if kind == "manifest":  # a real cache, its manifest then made to name a file outside it
        subprocess.run(
            [
                *CLI,
                "extract",
                "--corpus",
                "mini.txt",
                "--teacher",
                "minilm",
                "--out",
                "c",
                "--max-sentences",
                "50",
            ],
            cwd=w,
            check=True,
            capture_output=True,
        )
        shutil.copy(w / "c" / "vocab.h5", w / "precious.h5")
        manifest = json.loads((w / "c" / "manifest.json").read_text())
        manifest["vocab_files"]["../precious.h5"] = manifest["vocab_files"].pop("vocab.h5")
        manifest["complete"] = False
        (w / "c" / "manifest.json").write_text(json.dumps(manifest))
    if kind == "file":
        (w / "F").write_text("mine\n")


EVIL_CONFIG = {
    "model_type": "evil",
    "architectures": ["EvilModel"],
    "auto_map": {"AutoConfig": "configuration_evil.EvilConfig", "AutoModel": "modeling_evil.EvilModel"},
}
PWN = "import pathlib\npathlib.Path(__file__).with_name('PWNED').write_text('ran')\n"


ROUND_4_ELSEWHERE = """\
Round 4's cases that are not one command on small data, each a test instead: 4 two saves to one
folder at once (`test_faults_paths.py`: a real race of 2 processes x 40 saves, and the lost race
simulated: the loser's folder kept and named); 5 and 6 memory that follows the input
(`bench/results/memory_corpus_3g.md`: peak RSS 43-75 MiB on the 3 GB short-line and one-line files,
as at 30 MB; `tests/text/test_corpus_hostile.py`); 7 a 3M-word vocabulary
(`tests/pipeline/test_extract_memory.py`; by hand: 3,000,000 random words refused in one line after
40 s, peak RSS 1.4 GB); 10 NFD text (`tests/text/test_corpus_hostile.py`,
`tests/eval/test_similarity.py`, `tests/retrofit/test_lexicon.py`); 12 a corpus edited during
extract (`tests/pipeline/test_extract_resume.py`); a full TMPDIR (`test_faults_paths.py`, a real
tmpfs); a second extract into a locked folder (`test_faults_io.py`: refused in about a second,
before the teacher loads)."""


def cases_4() -> list[tuple[str, list[str], dict]]:
    """Round 4 (issue 38): what a careless or hostile user hands over, one command each."""
    sgns = [*CLI, "fit-student", "-s", "sgns", "--epochs", "1", "--dim", "20", "--min-count", "1"]
    ext = [*CLI, "extract", "--corpus", "s.txt", "--max-sentences", "50", "--out", "c"]
    return [
        (
            "1 auto_map teacher, stdin says yes",
            [*ext, "--teacher", "evil"],
            {"setup": "evil", "stdin": "y\n" * 50},
        ),
        ("1 pickled pytorch_model.bin", [*ext, "--teacher", "pickled"], {"setup": "pickled"}),
        ("1 weights of the wrong shape", [*ext, "--teacher", "shapes"], {"setup": "shapes"}),
        ("1 tokenizer.json of the wrong structure", [*ext, "--teacher", "tok"], {"setup": "tok"}),
        ("1 truncated safetensors", [*ext, "--teacher", "trunc"], {"setup": "trunc"}),
        ("1 no weights", [*ext, "--teacher", "noweights"], {"setup": "noweights"}),
        (
            "2 export -o the input's sidecar",
            [*CLI, *"export V.txt --format word2vec --out V.txt.meta.json --no-eval".split()],
            {"setup": "sidecar"},
        ),
        (
            "2 retrofit -o the input's sidecar",
            [*CLI, *"retrofit V.txt --lexicon wordnet --out V.txt.meta.json".split()],
            {"setup": "sidecar"},
        ),
        (
            "2 eval --json the input's sidecar",
            [*CLI, *"eval V.txt --json V.txt.meta.json".split()],
            {"setup": "sidecar"},
        ),
        (
            "3 compose VECTORS --cache C --out W",
            [*CLI, *"compose V.txt --cache c --out W".split()],
            {"setup": "compose"},
        ),
        (
            "8 fit-student --dim 2000000",
            [*sgns, "--corpus", "s.txt", "--dim", "2000000", "--out", "o.txt"],
            {"setup": "s"},
        ),
        ("9 CSV quote never closed", [*sgns, "--corpus", "q.csv", "--out", "o.txt"], {"setup": "csv"}),
        (
            "11 .bin word holding a newline, exported as text",
            [*CLI, *"export nl.bin --format word2vec --out nl.txt --no-eval".split()],
            {"setup": "nl"},
        ),
        ("t corrupt .csv.xz", [*sgns, "--corpus", "bad.csv.xz", "--out", "o.txt"], {"setup": "badxz"}),
        ("t JSONL nested 200k deep", [*sgns, "--corpus", "deep.jsonl", "--out", "o.txt"], {"setup": "deep"}),
        ("t JSONL 100k-digit number", [*sgns, "--corpus", "num.jsonl", "--out", "o.txt"], {"setup": "num"}),
        (
            "t JSONL lone surrogate, --split none",
            [*sgns, "--corpus", "sur.jsonl", "--split", "none", "--out", "o.txt"],
            {"setup": "sur"},
        ),
        (
            "t a path part over 255 bytes",
            [*sgns, "--corpus", "s.txt", "--out", "x" * 300 + "/o.txt"],
            {"setup": "s"},
        ),
        ("t a 246-byte -o name", [*sgns, "--corpus", "s.txt", "--out", "y" * 246], {"setup": "s"}),
        ("t TOML nested 50k deep", [*CLI, "run", "deep.toml", "--out", "r"], {"setup": "toml"}),
        (
            "t study student name of 300 characters",
            [*CLI, "run", "long.toml", "--out", "r"],
            {"setup": "longname"},
        ),
        ("minor .csv.GZ upper case", [*sgns, "--corpus", "u.csv.GZ", "--out", "o.txt"], {"setup": "gz"}),
        ("minor CSV with a BOM header", [*sgns, "--corpus", "bom.csv", "--out", "o.txt"], {"setup": "bom"}),
        (
            "minor one file given twice",
            [*sgns, "--corpus", "s.txt", "--corpus", "./s.txt", "--out", "o.txt"],
            {"setup": "s"},
        ),
        (
            "minor --json X --markdown X",
            [*CLI, *"eval V.txt --json X --markdown X".split()],
            {"setup": "sidecar"},
        ),
        (
            "minor --vocab with a word twice",
            [*ext, "--teacher", "minilm", "--vocab", "dup.tsv"],
            {"setup": "dupvocab"},
        ),
    ]


def _broken_teacher(kind: str, teacher: Path) -> None:
    """A teacher folder with foreign code, or a tiny BERT with one part broken."""
    if kind == "evil":
        teacher.mkdir()
        (teacher / "config.json").write_text(json.dumps(EVIL_CONFIG))
        (teacher / "configuration_evil.py").write_text(PWN)
        (teacher / "modeling_evil.py").write_text(PWN)
        return
    sys.path.insert(0, str(ROOT.parent))  # the tests' tiny models
    from importlib import import_module

    import_module(f"{ROOT.name}.tests.tiny_models").save_tiny_bert(teacher)
    weights = teacher / "model.safetensors"
    if kind == "pickled":
        weights.unlink()
        (teacher / "pytorch_model.bin").write_bytes(b"\x80\x04cos\nsystem\n(S'touch PWNED'\ntR.")
    elif kind == "shapes":
        config = json.loads((teacher / "config.json").read_text())
        config["hidden_size"] *= 2
        config["intermediate_size"] *= 2
        (teacher / "config.json").write_text(json.dumps(config))
    elif kind == "tok":
        (teacher / "tokenizer.json").write_text(json.dumps({"model": [1, 2, 3]}))
    elif kind == "trunc":
        weights.write_bytes(weights.read_bytes()[:1000])
    else:
        weights.unlink()


def _files_4(lines: list[str]) -> dict[str, tuple[str, bytes]]:
    """The one-file cases: setup name -> (file name, bytes)."""
    import gzip
    import lzma

    import numpy as np

    row = np.ones(2, dtype=np.float32).tobytes()
    xz = lzma.compress(b"id,text\n" + b"1,the king sat on the mat\n" * 5000)
    bom = "\ufefftext,id\n" + "".join(f"{ln.replace(',', ' ')},{i}\n" for i, ln in enumerate(lines))
    return {
        "csv": ("q.csv", b'id,text\n1,the king sat\n2,"the queen never closes\n' + b"3,a line\n" * 500),
        "nl": ("nl.bin", b"2 2\n" + b"".join(w + b" " + row + b"\n" for w in (b"new\nline", b"tab\tword"))),
        "badxz": ("bad.csv.xz", xz[: len(xz) // 2] + b"\0" * 64 + xz[len(xz) // 2 :]),
        "deep": ("deep.jsonl", b'{"text": ' + b"[" * 200_000 + b"]" * 200_000 + b"}\n"),
        "num": ("num.jsonl", b'{"text": "a b", "n": ' + b"9" * 100_000 + b"}\n"),
        "sur": ("sur.jsonl", b'{"text": "the king \\ud800 sat"}\n' * 50),
        "toml": ("deep.toml", b"a = " + b"[" * 50_000 + b"]" * 50_000 + b"\n"),
        "longname": (
            "long.toml",
            b'[corpus]\nfiles = ["s.txt"]\n\n[students.' + b"n" * 300 + b']\nstudent = "sgns"\n',
        ),
        "gz": ("u.csv.GZ", gzip.compress(("text\n" + "\n".join(lines) + "\n").encode())),
        "bom": ("bom.csv", bom.encode()),
        "dupvocab": ("dup.tsv", b"king\t3\nqueen\t2\nking\t1\n"),
    }


def setup_4(kind: str, w: Path) -> None:
    """What a round-4 case needs in its folder (``s.txt``: 400 lines of the test corpus)."""
    import lzma

    lines = lzma.open(MINI, "rt").read().splitlines()[:400]
    (w / "s.txt").write_text("\n".join(lines) + "\n")
    if kind in ("evil", "pickled", "shapes", "tok", "trunc", "noweights"):
        _broken_teacher(kind, w / kind)
    files = _files_4(lines)
    if kind in files:
        name, data = files[kind]
        (w / name).write_bytes(data)
    if kind in ("sidecar", "compose"):
        words = ["king", "queen", "man", "woman", "cat", "dog"]
        (w / "V.txt").write_text(f"{len(words)} 3\n" + "".join(f"{x} {i} 1 0\n" for i, x in enumerate(words)))
        (w / "V.txt.meta.json").write_text(json.dumps({"student": "sgns", "teacher": "minilm"}))
    if kind == "compose":
        extract = "extract --corpus s.txt --teacher minilm --out c --max-sentences 50 --min-count 1"
        subprocess.run([*CLI, *extract.split()], cwd=w, check=True, capture_output=True)


ROUND_5_ELSEWHERE = """\
Round 5's cases that are not one command on small data, each a test instead: a package piece with a
flipped byte, for each kind of assembly (`tests/pipeline/test_teacher_digests.py`: split zip, GPT4All
slices; the pins checked for every assembled teacher); crafted GGUF headers (`tests/pipeline/
test_nomic.py`: tensor count 2^40, key count 2^40, string length 2^62, dims 2^62, dtype 9999, an
offset past the end, truncated, a hypothesis fuzz); a signal at every rename of combine, retrofit,
fit-student and export (`tests/reliability/test_replacement_signals.py`: each rename hit in turn, by
a raised interrupt and by a real SIGINT or SIGTERM, with renameat2's exchange and without); export
--add-words beyond memory (`tests/export/test_export_encode.py`); ONNX Runtime's telemetry
(`tests/pipeline/test_onnx.py`: a fresh HOME stays empty).

The last column compares every file of the case's folder before and after (new ones too, outside
the case's outputs); until this round it left out every path under /tmp/, which held the whole
folder, so rounds 3 and 4's "yes" compared nothing (their cases were not run again here)."""


def cases_5() -> list[tuple[str, list[str], dict]]:
    """Round 5 (issue 56): teachers that must prove what they are, and the silently wrong cases."""
    ext = [*CLI, "extract", "--corpus", "s.txt", "--max-sentences", "20", "--out", "c"]
    comb = [*CLI, "combine", "A.txt", "B.txt", "--out", "AB.txt", "--weights"]
    sgns = [*CLI, "fit-student", "-s", "sgns", "--epochs", "1", "--dim", "20", "--min-count", "1"]
    semglove = [*CLI, *"fit-student -s semglove --cache c --set cooc=lm --out g.txt".split()]
    return [
        (
            "1 mpnet: a byte flipped in the assembled weights",
            [*ext, "--teacher", "mpnet"],
            {"setup": "mpnet"},
        ),
        (
            "1 onnx: a byte flipped in the exported graph",
            [*ext, "--teacher", "minilm", "--backend", "onnx"],
            {"setup": "onnx"},
        ),
        ("4 combine --weights 1e300,1", [*comb, "1e300,1"], {"setup": "ab", "outputs": ["AB.txt"]}),
        ("4 combine --weights inf,1", [*comb, "inf,1"], {"setup": "ab"}),
        (
            "4 combine --weights 1e-200,1e-200",
            [*comb, "1e-200,1e-200"],
            {"setup": "ab", "outputs": ["AB.txt"]},
        ),
        (
            "4 --word-template of 100 kB",
            [*ext, "--teacher", "minilm", "--word-template", "x " * 50_000 + "{w}"],
            {"setup": "s"},
        ),
        ("4 a FIFO as corpus", [*sgns, "--corpus", "fifo", "--out", "o.txt"], {"setup": "fifo"}),
        ("4 /dev/zero as corpus", [*sgns, "--corpus", "/dev/zero", "--out", "o.txt"], {"setup": "s"}),
        ("5 XDG_CACHE_HOME a file, --teacher mpnet", [*ext, "--teacher", "mpnet"], {"setup": "xdgfile"}),
        ("5 HOME/.cache a file, --teacher mpnet", [*ext, "--teacher", "mpnet"], {"setup": "homefile"}),
        (
            "5 XDG_CACHE_HOME under /proc, --backend onnx",
            [*ext, "--teacher", "minilm", "--backend", "onnx"],
            {"setup": "xdgproc"},
        ),
        ("5 teacher_tokens.parquet declaring 17M rows", semglove, {"setup": "tokens"}),
        (
            "5 --overwrite onto a folder of user files",
            [*sgns, "--corpus", "s.txt", "--epochs", "50", "--out", "mine", "--overwrite"],
            {"setup": "mine"},
        ),
        ("5 a study on Ray without Ray", [*CLI, "run", "ray.toml", "--out", "r"], {"setup": "ray"}),
        (
            "6 --backend onnx writes nothing under HOME",
            [*ext, "--teacher", "minilm", "--backend", "onnx"],
            {"setup": "telemetry", "outputs": ["c", "xdg"]},
        ),
    ]


_SHARED: dict[str, Path] = {}


def _shared(name: str) -> Path:
    """A user cache made once per run of this script (an assembled mpnet, minilm's exported graph)."""
    if name not in _SHARED:
        _SHARED[name] = Path(tempfile.mkdtemp(prefix=f"hostile5-{name}-"))
    return _SHARED[name]


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _damaged_user_cache(kind: str, w: Path, env: dict[str, str]) -> None:
    """An assembled mpnet or minilm's exported graph (made once per run), copied in with a byte flipped."""
    if kind == "mpnet":
        shared = _shared("mpnet")
        if not (shared / "ctx2static" / "mpnet").exists():
            code = "from ctx2static.pipeline.models import resolve; resolve('mpnet')"
            subprocess.run(
                [sys.executable, "-c", code], env={**env, "XDG_CACHE_HOME": str(shared)}, check=True
            )
        shutil.copytree(shared / "ctx2static", w / "xdg" / "ctx2static")
        _flip(w / "xdg" / "ctx2static" / "mpnet" / "model.safetensors")
    else:
        shared = _shared("onnx")
        if not (shared / "ctx2static" / "onnx").exists():
            export = [
                *CLI,
                *"extract --corpus s.txt --max-sentences 5 --teacher minilm --backend onnx --out c0".split(),
            ]
            subprocess.run(
                export, cwd=w, env={**env, "XDG_CACHE_HOME": str(shared)}, check=True, capture_output=True
            )
            shutil.rmtree(w / "c0")
        shutil.copytree(shared / "ctx2static", w / "xdg" / "ctx2static")
        (graph,) = (w / "xdg" / "ctx2static" / "onnx").glob("*/float32/model.onnx")
        _flip(graph)


def setup_5(kind: str, w: Path) -> dict[str, str]:
    """What a round-5 case needs in its folder; returns the environment it runs in."""
    import lzma

    import numpy as np

    env = {**os.environ, "HOME": str(w / "home"), "XDG_CACHE_HOME": str(w / "xdg")}
    (w / "home").mkdir()
    lines = lzma.open(MINI, "rt").read().splitlines()[:400]
    (w / "s.txt").write_text("\n".join(lines) + "\n")
    if kind in ("mpnet", "onnx"):
        _damaged_user_cache(kind, w, env)
    if kind == "ab":
        rng = np.random.default_rng(0)
        words = ["king", "queen", "man", "woman", "cat", "dog"]
        for name in ("A", "B"):
            rows = rng.normal(size=(len(words), 4))
            text = "".join(
                f"{x} {' '.join(f'{v:.4f}' for v in r)}\n" for x, r in zip(words, rows, strict=True)
            )
            (w / f"{name}.txt").write_text(f"{len(words)} 4\n{text}")
    if kind == "fifo":
        os.mkfifo(w / "fifo")
    if kind == "xdgfile":
        (w / "xdg").write_text("a file\n")
    if kind == "homefile":
        env.pop("XDG_CACHE_HOME")
        (w / "home" / ".cache").write_text("a file\n")
    if kind == "xdgproc":
        env["XDG_CACHE_HOME"] = "/proc/self/cache"
    if kind == "tokens":
        _tokens_declared(w)
    if kind == "mine":
        (w / "mine").mkdir()
        (w / "mine" / "thesis.tex").write_text("precious\n")
    if kind == "ray":
        (w / "ray.toml").write_text(
            '[corpus]\nfiles = ["s.txt"]\n[teachers.t]\nmodel = "minilm"\nengine = "ray"\n'
            '[students.ase]\nteacher = "t"\n'
        )
        env["PYTHONPATH"] = str(w / "noray")  # a Ray that does not import, wherever one is installed
        (w / "noray" / "ray").mkdir(parents=True)
        (w / "noray" / "ray" / "__init__.py").write_text("raise ImportError('hidden by hostile_cases')\n")
    return env


def _tokens_declared(w: Path) -> None:
    """A real cache whose teacher_tokens.parquet declares 17M rows in one row group, resealed."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    extract = "extract --corpus s.txt --teacher minilm --out c --max-sentences 50 --topk 2"
    subprocess.run([*CLI, *extract.split()], cwd=w, check=True, capture_output=True)
    n = 17_000_000
    columns = {"id": np.zeros(n, np.int32), "token": pa.repeat(pa.scalar(""), n), "word": np.full(n, -1)}
    pq.write_table(pa.table(columns), w / "c" / "teacher_tokens.parquet", row_group_size=n)
    manifest = json.loads((w / "c" / "manifest.json").read_text())
    sealed = hashlib.sha256((w / "c" / "teacher_tokens.parquet").read_bytes()).hexdigest()
    manifest["vocab_files"]["teacher_tokens.parquet"] = sealed
    (w / "c" / "manifest.json").write_text(json.dumps(manifest))


ROUND_6_ELSEWHERE = """\
Round 6's cases that are not one command on small data, each a test instead: a feeder killed while
it writes its shard, and one stopped (SIGSTOP) or hung, are one line (`tests/pipeline/test_feed.py`,
the patience shortened); SIGHUP and SIGQUIT to the whole process group mid-extract are one line and
the feeders end at their pipe's end (`tests/pipeline/test_feed.py`); SIGKILL before each rename and
removal of a word2vec save, with and without a composer on either side
(`tests/reliability/test_replacement_kill.py`); a typed API (`tests/test_api.py`); --add-words under a
real `ulimit -v` below and above its estimate (`tests/export/test_add_words_memory.py`).

Cases `r5 ...` are round 5's, run again. A SIGKILL case kills `export -o o.txt` (a table, its
sidecar and two composer files) before its Nth rename (the old set: the same vectors at other
dims), then the line is what the next load prints. Mount points are tmpfs mounts made by the probe
(it runs as root)."""

API = "from ctx2static import distill, evaluate, fit, Vectors; import numpy as np; "
V2 = "V = Vectors(['king', 'queen'], np.eye(2, dtype=np.float32)); "
CORE = """
import sys

class Blocker:  # a Python without the teacher stage's packages, as the core install is
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers", "sentence_transformers", "onnxruntime"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Blocker())
from ctx2static.cli import main
main(sys.argv[1:])
"""
KILL_AT = """
import os, signal, sys
from ctx2static import cli
real, n = os.replace, [0]

def replace(a, b):
    n[0] += 1
    if n[0] == int(sys.argv[1]):
        os.kill(os.getpid(), signal.SIGKILL)
    real(a, b)

os.replace = replace
cli.main(sys.argv[2:])
"""


def cases_6() -> list[tuple[str, list[str], dict]]:
    """Round 6 (issue 67): feeding processes, seals, replacements, typed API, the clone, regen --run."""
    ext = [*CLI, "extract", "--corpus", "s.txt", "--max-sentences", "20", "--out", "c", "--teacher", "minilm"]
    api = [sys.executable, "-c"]
    regen = [sys.executable, str(ROOT / "bench" / "regen.py"), "x.md", "--run"]
    exp = [*CLI, "export", "W", "--no-eval", "--format"]
    new = [
        (
            "1 numpy.py, signal.py in the working folder, --feeders 2",
            [*ext, "--feeders", "2"],
            {"setup": "plant", "outputs": ["c"]},
        ),
        (
            "1 python -E, sitecustomize.py on PYTHONPATH, --feeders 2",
            [sys.executable, "-E", *CLI[1:], *ext[2:], "--feeders", "2"],
            {"setup": "sitecustomize", "outputs": ["c"]},
        ),
        ("2 mpnet: weights changed and SHA256SUMS forged", [*ext[:-1], "mpnet"], {"setup": "forged"}),
        *[
            (
                f"3 SIGKILL before rename {k} of export -o o.txt, then a load",
                [*CLI, "neighbours", "o.txt", "king"],
                {"setup": f"kill{k}"},
            )
            for k in (1, 2, 3, 4)
        ],
        ("3 export -o a mount point (word2vec)", [*exp, "word2vec", "-o", "mnt"], {"setup": "mount"}),
        ("3 export -o a mount point (model2vec)", [*exp, "model2vec", "-o", "mnt"], {"setup": "mount"}),
        (
            "5 distill(max_sentences='10')",
            [*api, API + "distill('s.txt', max_sentences='10')"],
            {"setup": "s"},
        ),
        (
            "5 evaluate(benchmarks='similarity')",
            [*api, API + V2 + "evaluate(V, benchmarks='similarity')"],
            {},
        ),
        (
            "5 evaluate(benchmarks={'similarity': 'pairs.tsv'})",
            [*api, API + V2 + "evaluate(V, benchmarks={'similarity': 'pairs.tsv'})"],
            {},
        ),
        (
            "5 evaluate(benchmarks={'similarity': [123]})",
            [*api, API + V2 + "evaluate(V, benchmarks={'similarity': [123]})"],
            {},
        ),
        ("5 distill(student='nope')", [*api, API + "distill('s.txt', student='nope')"], {"setup": "s"}),
        ("5 evaluate(families=['nope'])", [*api, API + V2 + "evaluate(V, families=['nope'])"], {}),
        (
            "5 evaluate(benchmarks={'nofamily': []})",
            [*api, API + V2 + "evaluate(V, benchmarks={'nofamily': []})"],
            {},
        ),
        *[
            (
                f"6 export -o {where}x.txt inside the clone",
                [*exp, "word2vec", "-o", str(ROOT / where / PROBE_OUT)],
                {"setup": "w", "clone": where},
            )
            for where in ("docs/", ".git/", "bench/results/", "")
        ],
        (
            "7 core install: a study that must extract",
            [*api, CORE, "run", "study.toml", "--out", "r"],
            {"setup": "core"},
        ),
        ("8 regen.py --run, the user types no", regen, {"setup": "regen", "stdin": "no\n"}),
        ("8 regen.py --run, no input", regen, {"setup": "regen", "stdin": ""}),
    ]
    old = [
        (f"r5 {name}", cmd, {**opts, "setup": "r5:" + opts.get("setup", "")}) for name, cmd, opts in cases_5()
    ]
    return new + old


PROBE_OUT = "hostile-probe-x.txt"
"""The name a clone case asks for: removed after the case, should the clone ever let it be written."""


def _composed(w: Path, env: dict[str, str]) -> None:
    """``W``: MiniLM ``ase`` vectors with their composer (made once per run), copied into ``w``."""
    shared = _shared("composer")
    if not (shared / "W").exists():
        steps = [
            "extract --corpus s.txt --teacher minilm --out c --max-sentences 50 --min-count 1",
            "fit-student -s ase --cache c --out V.txt",
            "compose V.txt --cache c --out W",
        ]
        shutil.copy(w / "s.txt", shared / "s.txt")
        for step in steps:
            subprocess.run([*CLI, *step.split()], cwd=shared, env=env, check=True, capture_output=True)
    shutil.copytree(shared / "W", w / "W")


def setup_6(kind: str, w: Path) -> dict[str, str]:
    """What a round-6 case needs in its folder; returns the environment it runs in."""
    if kind.startswith("r5:"):
        return setup_5(kind[3:], w)
    env = setup_5("", w)
    if kind == "plant":
        for name in ("numpy.py", "signal.py", "tokenizers.py"):
            (w / name).write_text(PWN)
    if kind == "sitecustomize":
        (w / "site").mkdir()
        (w / "site" / "sitecustomize.py").write_text(
            PWN.replace("__file__", "'" + str(w / "site" / "x") + "'")
        )
        env["PYTHONPATH"] = str(w / "site")
    if kind == "forged":
        _damaged_user_cache("mpnet", w, env)
        folder = w / "xdg" / "ctx2static" / "mpnet"
        sums = (folder / "SHA256SUMS").read_text().splitlines()
        digest_now = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
        forged = [
            f"{digest_now}  {ln.split(maxsplit=1)[1]}" if ln.endswith("model.safetensors") else ln
            for ln in sums
        ]
        (folder / "SHA256SUMS").write_text("\n".join(forged) + "\n")
        for stamp in folder.glob(".SHA256SUMS*"):
            stamp.unlink()
    if kind.startswith("kill"):
        _composed(w, env)
        run([*CLI, *"export W --format word2vec -o o.txt --no-eval --dims 8".split()], w, env=env)
        cmd = [
            sys.executable,
            "-c",
            KILL_AT,
            kind[4:],
            *"export W --format word2vec -o o.txt --no-eval".split(),
        ]
        subprocess.run(cmd, cwd=w, env=env, capture_output=True)
    if kind in ("mount", "w"):
        _composed(w, env)
    if kind == "mount":
        (w / "mnt").mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "none", str(w / "mnt")], check=True)
    if kind == "core":
        (w / "study.toml").write_text(
            '[corpus]\nfiles = ["s.txt"]\n[teachers.t]\nmodel = "minilm"\n[students.ase]\nteacher = "t"\n'
        )
    if kind == "regen":
        (w / "x.md").write_text(f"# a results file\n\nCommand: `python -c 1; touch {w / 'RAN'}`\n")
    return env


def teardown_6(w: Path) -> str:
    """Unmount what a case mounted; remove an output a clone case was let write, and say so."""
    if (w / "mnt").is_mount():
        subprocess.run(["umount", str(w / "mnt")], check=False)
    wrote = [where for where in ("docs", ".git", "bench/results", ".") if (ROOT / where / PROBE_OUT).exists()]
    for where in wrote:
        (ROOT / where / PROBE_OUT).unlink()
    return "; WROTE IN THE CLONE: " + ", ".join(wrote) if wrote else ""


ROUND_7_ELSEWHERE = """\
Round 7's cases that need a 0.4-1.3 GB teacher or a real download, each a test instead: a sealed
teacher's weights, tokenizer or config changed after a use, with the seal pinned
(`tests/pipeline/test_teacher_digests.py`; no stamp exists to rewrite); a damaged downloaded piece,
two fetches at once, a killed fetch's leftovers and pip's partial download
(`tests/pipeline/test_fetch.py`, a tiny row through a local index); a feeder stopped halfway through
its result (`tests/pipeline/test_feed.py`, the patience shortened). The cost of the seal check at
extract start: `bench/results/seal_check.md`. Written outside the request, not by ctx2static: on
this machine pip itself writes `~/.rustup/settings.toml` (a plain `python -m pip download` does
too), and Ray writes `~/.ray/auth_token` and its session folder under TMPDIR (`--engine ray`).
"""


def cases_7() -> list[tuple[str, list[str], dict]]:
    """Round 7 (issue 78): every child process, prompts, the smaller cases."""
    ext = [*CLI, "extract", "--corpus", "s.txt", "--max-sentences", "20", "--out", "c", "--teacher", "minilm"]
    fetch = [*CLI, "fetch", "embeddinggemma"]
    return [
        ("1 fetch in a folder holding pip/ (no index: pip fails at once)", fetch, {"setup": "pip"}),
        (
            "1 python -E fetch, sitecustomize.py on PYTHONPATH (no index)",
            [sys.executable, "-E", *fetch[1:]],
            {"setup": "pip-site"},
        ),
        (
            "1 tokenizers.py, transformers.py in the working folder, --engine ray",
            [*ext, "--engine", "ray", "--workers", "1"],
            {"setup": "plant-ray", "outputs": ["c"]},
        ),
        ("4 --prompt of 100 kB", [*ext, "--prompt", "word " * 20_000], {}),
        ("4 --prompt with bytes that are not UTF-8", [*ext, "--prompt", os.fsdecode(b"bad \xff\xfe")], {}),
        (
            "6 extract --out inside the teacher's folder",
            [*ext[:-4], "--out", "t/c", "--teacher", "t"],
            {"setup": "t"},
        ),
        (
            "6 sentence-kd on a cache of one sentence",
            [*CLI, "fit-student", "-s", "sentence-kd", "--cache", "one", "-o", "kd"],
            {"setup": "one"},
        ),
        (
            "6 export --tokens wordpiece, vectors without a composer",
            [
                *CLI,
                "export",
                "A.txt",
                "--format",
                "model2vec",
                "--tokens",
                "wordpiece",
                "-o",
                "m",
                "--no-eval",
            ],
            {"setup": "ab"},
        ),
        ("6 extract --pca 1000 without --vectors", [*ext, "--pca", "1000"], {}),
    ]


def setup_7(kind: str, w: Path) -> dict[str, str]:
    """What a round-7 case needs in its folder; returns the environment it runs in."""
    env = setup_5("ab" if kind == "ab" else "", w)
    if kind.startswith("pip"):
        env["PIP_NO_INDEX"] = "1"  # pip fails at once: the case is who runs, not the download
        (w / "pip").mkdir()
        for name in ("__init__.py", "__main__.py"):
            (w / "pip" / name).write_text(PWN.replace("__file__", repr(str(w / "pip" / "x"))))
    if kind == "pip-site":
        (w / "site").mkdir()
        (w / "site" / "sitecustomize.py").write_text(PWN.replace("__file__", repr(str(w / "site" / "x"))))
        env["PYTHONPATH"] = str(w / "site")
    if kind == "plant-ray":
        for name in ("tokenizers.py", "transformers.py"):
            (w / name).write_text(PWN)
    if kind == "t":
        from ctx2static.pipeline.models import resolve

        shutil.copytree(resolve("minilm"), w / "t")
    if kind == "one":
        (w / "one.txt").write_text("the only sentence there is .\n")
        extract = "extract --corpus one.txt --teacher minilm --out one --sentence-embedding --min-count 1"
        subprocess.run([*CLI, *extract.split()], cwd=w, env=env, check=True, capture_output=True)
    return env


ROUNDS = {
    3: (cases, setup, ""),
    4: (cases_4, setup_4, ROUND_4_ELSEWHERE),
    5: (cases_5, setup_5, ROUND_5_ELSEWHERE),
    6: (cases_6, setup_6, ROUND_6_ELSEWHERE),
    7: (cases_7, setup_7, ROUND_7_ELSEWHERE),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", nargs="*", help="case number prefixes to run")
    ap.add_argument(
        "--round",
        type=int,
        default=3,
        choices=sorted(ROUNDS),
        help="3: the earlier cases; 4: issue 38's; 5: 56's; 6: 67's (and 5's again); 7: 78's",
    )
    args = ap.parse_args()
    make_cases, make_setup, elsewhere = ROUNDS[args.round]
    rows = []
    for name, cmd, opts in make_cases():
        if args.only and not any(name.startswith(o + " ") for o in args.only):
            continue
        with tempfile.TemporaryDirectory() as d:
            w = Path(d)
            env_tmp = w / "tmp"
            env_tmp.mkdir()
            env = make_setup(opts.get("setup", ""), w)
            if opts.get("setup") == "twice":
                run(cmd, w)
            # every file but TMPDIR's (w itself lies in the system's temporary folder)
            before = {k: v for k, v in digest(w).items() if not k.startswith(str(env_tmp))}
            os.environ["TMPDIR"] = str(env_tmp)
            env = {**env, "TMPDIR": str(env_tmp)} if env else None
            rc, line = run(cmd, w, opts.get("term"), opts.get("stdin"), env)
            after = digest(w)
            lost = [k for k, v in before.items() if after.get(k) != v and not k.endswith((".lock",))]
            outputs = [str(w / o) for o in opts.get("outputs", [])]
            # files outside the request (round 5: ONNX Runtime's telemetry under HOME)
            new = [k for k in after if k not in before and not k.startswith((str(env_tmp), *outputs))]
            leftovers = [
                p for p in env_tmp.iterdir() if not p.name.startswith("torchinductor")
            ]  # torch's own cache
            if leftovers:
                print("  left in TMPDIR:", [p.name for p in leftovers])
            kept = "yes" if not lost else "CHANGED: " + ", ".join(Path(k).name for k in lost[:3])
            if args.round >= 5 and new:
                kept += "; WROTE: " + ", ".join(str(Path(k).relative_to(w)) for k in new[:3])
            if any(p.name == "PWNED" for p in w.rglob("PWNED")):
                kept += "; FOREIGN CODE RAN"
            if leftovers:
                kept += f"; {len(leftovers)} temporaries left"
            if args.round == 6:
                kept += teardown_6(w)
            # the clone's own folder is this machine's: the table names it CLONE
            rows.append((name, rc, line.replace(str(w), "W").replace(str(ROOT), "CLONE"), kept))
            print(f"{name}: rc {rc}: {line} [{kept}]", flush=True)
    for shared in _SHARED.values():
        shutil.rmtree(shared, ignore_errors=True)
    if args.out:
        title = "Hostile inputs" + f", round {args.round}" * (args.round > 3)
        round_flag = f" --round {args.round}" * (args.round > 3)
        text = [
            f"# {title}: the line printed, the exit code, nothing lost",
            "",
            f"`python bench/probes/hostile_cases.py{round_flag} --out {args.out}` ({time.strftime('%F')})",
            "",
            "| case | exit | line printed | everything else unchanged |",
            "|---|---:|---|---|",
        ]
        text += [f"| {n} | {rc} | `{ln.replace('|', '/')}` | {k} |" for n, rc, ln, k in rows]
        if elsewhere:
            text += ["", elsewhere]
        args.out.write_text("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
