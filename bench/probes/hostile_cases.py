"""The hostile-input cases, run as a user would: the exact line printed, the exit code, and whether
anything the user had changed (a sha256 of every file the case did not name as an output).

    python bench/probes/hostile_cases.py --out bench/results/hostile_cases.md

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


def run(args: list[str], cwd: Path, term_after: float | None = None) -> tuple[int, str]:
    if term_after is None:
        p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=900)
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
        ("8 --set alpha=1", [*sgns, "--out", "o.txt", "--set", "alpha=1"], {}),
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", nargs="*", help="case number prefixes to run")
    args = ap.parse_args()
    rows = []
    for name, cmd, opts in cases():
        if args.only and not any(name.startswith(o + " ") for o in args.only):
            continue
        with tempfile.TemporaryDirectory() as d:
            w = Path(d)
            env_tmp = w / "tmp"
            env_tmp.mkdir()
            setup(opts.get("setup", ""), w)
            if opts.get("setup") == "twice":
                run(cmd, w)
            before = {k: v for k, v in digest(w).items() if "/tmp/" not in k}
            os.environ["TMPDIR"] = str(env_tmp)
            rc, line = run(cmd, w, opts.get("term"))
            after = digest(w)
            lost = [k for k, v in before.items() if after.get(k) != v and not k.endswith((".lock",))]
            leftovers = [
                p for p in env_tmp.iterdir() if not p.name.startswith("torchinductor")
            ]  # torch's own cache
            if leftovers:
                print("  left in TMPDIR:", [p.name for p in leftovers])
            kept = "yes" if not lost else "CHANGED: " + ", ".join(Path(k).name for k in lost[:3])
            if leftovers:
                kept += f"; {len(leftovers)} temporaries left"
            rows.append((name, rc, line, kept))
            print(f"{name}: rc {rc}: {line} [{kept}]", flush=True)
    if args.out:
        text = [
            "# Hostile inputs: the line printed, the exit code, nothing lost",
            "",
            f"`python bench/probes/hostile_cases.py --out {args.out}` ({time.strftime('%Y-%m-%d')})",
            "",
            "| case | exit | line printed | everything else unchanged |",
            "|---|---:|---|---|",
        ]
        text += [f"| {n} | {rc} | `{ln.replace('|', '/')}` | {k} |" for n, rc, ln, k in rows]
        args.out.write_text("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
