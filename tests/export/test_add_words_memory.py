"""export --add-words says what it needs before it composes, and what it says bounds what it takes.

Measured as ``ulimit -v`` counts it (the address space, which bounds what becomes resident): a real
limit below the estimate is refused in one line, one just above it is enough. The peak without a limit
is no measure: glibc maps twice a new thread arena's 64 MiB to align it and unmaps the excess at once,
so ``VmPeak`` may count up to 64 MiB a tokenizer thread that no run under a limit needs (there glibc
maps the arena exactly, or shares one).
"""

import json
import subprocess
import sys

import pytest

from ctx2static.students.registry import fit_cache_student

from ..faults import cli_env

PROBE = """
import json, resource, sys

limit = int(sys.argv[2])
if limit:
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
from ctx2static import cli, export

def vm(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024

checks, real = [], export.check_fits

def check_fits(nbytes, what, fix):
    checks.append({"estimate": nbytes, "size": vm("VmSize")})  # the API's check, the last, binds
    return real(nbytes, what, fix)

export.check_fits = check_fits
try:
    cli.main(sys.argv[3:])
finally:
    with open(sys.argv[1], "w") as fh:
        json.dump(checks[-1] if checks else {}, fh)
"""


def _export(tmp_path, src, fmt, out, limit=0):
    """``export SRC --add-words`` in a process of its own (``limit``: its ``ulimit -v``, 0 none)."""
    report = tmp_path / f"report-{limit}.json"
    args = ["export", src, "--format", fmt, "-o", out, "--no-eval", "--add-words", tmp_path / "words.txt"]
    env = {**cli_env(), "TOKENIZERS_PARALLELISM": "true", "RAYON_NUM_THREADS": "2"}  # its threads reserve
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(report), str(limit), *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, json.loads(report.read_text()) if report.exists() else {}  # none: it died on the limit


@pytest.mark.slow
@pytest.mark.parametrize(
    ("teacher", "fmt", "out"),
    [("bert", "word2vec-bin", "e.bin"), ("bert", "model2vec", "m"), ("gpt2", "sentence-transformers", "s")],
)
def test_the_estimate_bounds_the_growth_and_a_limit_below_it_is_one_line(
    tiny_caches, tmp_path, teacher, fmt, out
):
    src = fit_cache_student("ase", tiny_caches[teacher]).save(tmp_path / "v")
    (tmp_path / "words.txt").write_text("".join(f"zq{i}x\n" for i in range(20_000)))
    done, got = _export(tmp_path, src, fmt, tmp_path / out)
    assert done.returncode == 0, done.stderr
    below = got["size"] + got["estimate"] // 2
    done, _ = _export(tmp_path, src, fmt, tmp_path / f"below-{out}", below)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    said = f"error: --add-words (20,000 words to compose into {src}'s table) needs about "
    assert done.stderr.startswith(said) and "add fewer words" in done.stderr, done.stderr
    assert not (tmp_path / f"below-{out}").exists()
    above = got["size"] + got["estimate"] + (16 << 20)  # the size at the check varies a little
    done, _ = _export(tmp_path, src, fmt, tmp_path / f"above-{out}", above)
    assert done.returncode == 0, done.stderr
