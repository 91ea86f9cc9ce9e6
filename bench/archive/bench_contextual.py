"""Benchmark: BERT+Skip-gram and Context-to-Vec against plain SGNS, old implementation against new.

Side by side in one run, at each --threads: ``sgns`` from the corpus text (its defaults: dim 100,
5 epochs, sample 1e-3), ``bert-sg`` and ``ctx2vec`` from a teacher cache with per-occurrence vectors
(their defaults: dim 300, 1 epoch, init=auto (ase), abtt 1) with this checkout's code ("new") and
with the code of --old-rev ("old", unpacked with ``git archive`` into the work folder), and the new
code on a --pca-cache (``extract --pca``). Every run is ``python -m ctx2static.cli fit-student`` in
its own process, as a user runs it; --repeats rounds, interleaved, the new students with seeds
1, 2, ... (their run-to-run noise). tokens/s is corpus tokens x epochs / train seconds as the tool
defines it (meta ``train_seconds``: the fit, the ase init pass and abtt included), with the same
token count for all (the cache's ``n_words``: the corpus' words, out-of-vocabulary ones included).
Scores: ``python -m ctx2static.cli eval --family similarity`` on every vectors file. A cProfile
(process CPU time, 1 thread, one shard, init=random) of the old trainer and of the new step loop
says where the time goes. Hours per epoch at 1.1B tokens extrapolate the per-thread rates (see the
notes the script writes).

    PYTHONPATH=<pkg> python bench/archive/bench_contextual.py --cache CACHE --pca-cache CACHE_PCA \\
        --corpus ../shared/corpus/brown.txt.xz --out bench/results/contextual_speed.md
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

import ctx2static

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))  # machine.py
from machine import cpu_name

NEW_PKG = Path(ctx2static.__file__).resolve().parent
NEW_PATH = str(Path(ctx2static.__file__).parent.parent)
AVG5 = ("ws353", "simlex999", "men3k", "rw", "rg65")
TARGET_TOKENS = 1.1e9


def run(cmd: list[str], pythonpath: str, log: Path) -> float:
    """Run ``cmd`` with the package at ``pythonpath``; returns wall seconds; stdout to ``log``."""
    env = {**os.environ, "PYTHONPATH": pythonpath, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    start = time.perf_counter()
    with open(log, "w") as out, open(str(log) + ".err", "w") as err:
        subprocess.run(cmd, env=env, stdout=out, stderr=err, check=True)
    return time.perf_counter() - start


def fit_cmd(student: str, source: str, threads: int, out: Path, seed: int = 1) -> list[str]:
    """This script's --fit mode: ``student`` from ``source`` (a cache folder, else a corpus file)."""
    return [sys.executable, __file__, "--fit", student, source, str(threads), str(seed), str(out)]


def fit(student: str, source: str, threads: int, seed: int, out: str) -> None:
    """Train as ``fit-student`` does (the registry's calls), timing the fit's wall and CPU seconds.

    Cache students: ``fit_cache_student`` (its train seconds: the fit, init pass and abtt). Text
    students: the vocabulary and encoded corpus first (not timed, as the tool), then the fit.
    Writes the vectors and ``out.run.json`` (wall, cpu, the vectors' meta).
    """
    from ctx2static.students import registry

    config = registry.student_config(student, {"threads": threads, "seed": seed})
    if Path(source).is_dir():
        wall, cpu = time.perf_counter(), time.process_time()
        vectors = registry.fit_cache_student(student, source, config)
    else:
        from ctx2static.text.corpus import Corpus
        from ctx2static.text.encoded import encode_corpus
        from ctx2static.text.vocab import Vocab, VocabConfig

        corpus = Corpus([source])
        vocab = Vocab.build(corpus, VocabConfig())
        work = tempfile.mkdtemp(prefix="bench-enc-")
        encoded = encode_corpus(corpus, vocab, work)
        wall, cpu = time.perf_counter(), time.process_time()
        vectors = registry.load_student(student).fit(encoded, vocab, config)
        shutil.rmtree(work)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    vectors.save(out)
    meta = {k: v for k, v in vectors.meta.items() if isinstance(v, (int, float, str))}
    Path(out + ".run.json").write_text(
        json.dumps({"wall": wall, "cpu": cpu, "epochs": config.epochs, **meta})
    )


def one_shard_view(cache: Path, folder: Path) -> Path:
    """A view of ``cache`` with its first shard only (symlinks), for warm-ups and profiles."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in cache.iterdir():
        if f.name != "manifest.json" and not (folder / f.name).exists():
            (folder / f.name).symlink_to(f.resolve())
    manifest = json.loads((cache / "manifest.json").read_text())
    manifest["shards"] = manifest["shards"][:1]
    manifest["totals"]["n_occurrences"] = manifest["shards"][0]["n_occurrences"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def profile_old(cache: str, student: str) -> str:
    """cProfile of the old trainer (train(), one thread) over the view's shard."""
    from ctx2static.cache import Cache
    from ctx2static.students.registry import load_student

    module = load_student(student)
    config = module.Config(threads=1, init="random", abtt=None)
    pr = cProfile.Profile(timer=time.process_time)
    pr.runcall(module.fit, Cache.open(cache), config)
    return _top(pr)


def profile_new(cache: str, student: str) -> str:
    """cProfile of the new step loop over the view's shard (what one worker runs), one thread."""
    import torch

    from ctx2static.cache import Cache
    from ctx2static.students import contextual
    from ctx2static.students.registry import load_student
    from ctx2static.students.sampling import negative_table

    module = load_student(student)
    c = module.Config(threads=1, init="random", abtt=None)
    params, spreads = ((c.e1, c.e2, c.e3, c.mix), True) if student == "ctx2vec" else ((), False)
    data_cache = Cache.open(cache)
    shard = data_cache.shard(0, ["occ_vec"])
    torch.set_num_threads(1)
    step = contextual.Step(
        module.centre_loss, np.asarray(params, np.float32), spreads,
        contextual.init_table(len(data_cache.vocab), c.dim, c.seed).numpy(),
        contextual.init_projection(shard["occ_vec"].shape[1], c.dim, c.seed),
        negative_table(data_cache.vocab.counts), c.clip, c.batch, c.window, c.negative, c.seed,
    )  # fmt: skip
    buf = step.buffers()
    data = contextual.ShardWindows.read(shard, c.window, 0)
    step(data, 0, c.batch, c.lr, 0, buf)  # compile outside the profile

    def loop() -> None:
        for b0 in range(0, len(data.occ_word), c.batch):
            step(data, b0, min(b0 + c.batch, len(data.occ_word)), c.lr, 0, buf)

    pr = cProfile.Profile(timer=time.process_time)
    pr.runcall(loop)
    return _top(pr, f"{len(data.occ_word):,} centres")


def _top(pr: cProfile.Profile, what: str = "") -> str:
    out = io.StringIO()
    stats = pstats.Stats(pr, stream=out)
    stats.sort_stats("tottime").print_stats(12)
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
    return "\n".join(
        ([what] if what else []) + lines[lines.index(next(x for x in lines if "ncalls" in x)) - 2 :]
    )


def eval_scores(files: list[Path], workdir: Path) -> dict[str, dict[str, float]]:
    """Similarity scores (Spearman x100) and avg5 of each vectors file."""
    out = workdir / "eval.json"
    cmd = [sys.executable, "-m", "ctx2static.cli", "eval", "--family", "similarity", "--json", str(out)]
    run(cmd + [str(f) for f in files], NEW_PATH, workdir / "eval.log")
    results = json.loads(out.read_text())["results"]
    scores = {}
    for key, rows in results.items():
        by = {r["benchmark"]: (float("nan") if r["score"] is None else r["score"]) for r in rows}
        scores[Path(key).name] = by
    return scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True, help="Teacher cache with --vectors (full width).")
    ap.add_argument("--pca-cache", help="The same corpus extracted with --vectors --pca D.")
    ap.add_argument("--corpus", required=True, help="The corpus text the cache was made from (for sgns).")
    ap.add_argument("--threads", type=int, action="append", help="Thread counts (repeat; default 2 and 1).")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--old-repeats", type=int, default=1, help="Rounds with the old code (slow).")
    ap.add_argument("--old-rev", default="43b3628", help="git revision of the old implementation.")
    ap.add_argument("--workdir", default="/tmp/bench_contextual")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    threads_list = args.threads or [2, 1]
    work = Path(args.workdir)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    old_pkg = work / "old" / "ctx2static"
    old_pkg.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(NEW_PKG), "archive", args.old_rev], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(old_pkg)], input=archive.stdout, check=True)
    old_commit = subprocess.run(
        ["git", "-C", str(NEW_PKG), "rev-parse", "--short", args.old_rev],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    new_commit = subprocess.run(
        ["git", "-C", str(NEW_PKG), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    impls = {"old": str(work / "old"), "new": NEW_PATH}
    manifest = json.loads((Path(args.cache) / "manifest.json").read_text())
    n_words = manifest["totals"]["n_words"]

    caches = {"full": args.cache} | ({"pca": args.pca_cache} if args.pca_cache else {})
    views = {k: one_shard_view(Path(c), work / f"view-{k}") for k, c in caches.items()}
    # warm-up (JIT compile, numba caches) on one shard, and the profiles
    profiles = {}
    for impl, path in impls.items():
        for student in ("bert-sg", "ctx2vec"):
            warm = fit_cmd(student, str(views["full"]), 1, work / "warm.bin")
            run(warm, path, work / "warm.log")
            log = work / f"profile-{impl}-{student}.txt"
            run([sys.executable, __file__, "--profile", impl, student, str(views["full"])], path, log)
            profiles[(impl, student)] = log.read_text()
    if args.pca_cache:
        for student in ("bert-sg", "ctx2vec"):
            log = work / f"profile-new-{student}-pca.txt"
            run([sys.executable, __file__, "--profile", "new", student, str(views["pca"])], NEW_PATH, log)
            profiles[("new-pca", student)] = log.read_text()

    jobs = [("sgns", "new", None)]
    jobs += [(s, impl, "full") for s in ("bert-sg", "ctx2vec") for impl in ("new", "old")]
    jobs += [(s, "new", "pca") for s in ("bert-sg", "ctx2vec")] if args.pca_cache else []
    rows = []
    for threads in threads_list:
        for rep in range(args.repeats):
            for student, impl, which in jobs:
                if impl == "old" and rep >= args.old_repeats:
                    continue
                name = f"{student}-{impl}{'-pca' if which == 'pca' else ''}-t{threads}-r{rep}"
                out = work / f"{name}.bin"
                src = args.corpus if which is None else caches[which]
                seed = rep + 1 if impl == "new" else 1
                cmd = fit_cmd(student, src, threads, out, seed)
                load = os.getloadavg()[0]
                run(cmd, impls[impl], work / f"{name}.log")
                got = json.loads(Path(str(out) + ".run.json").read_text())
                rows.append({
                    "name": name, "student": student, "impl": impl + ("-pca" if which == "pca" else ""),
                    "threads": threads, "rep": rep, "seed": seed, "file": out.name, "train_s": got["wall"],
                    "cpu_s": got["cpu"], "loop_s": got.get("loop_seconds"), "load": load,
                    "tps": n_words * got["epochs"] / got["wall"], "loss": got.get("mean_loss"),
                    "cpu_tps": n_words * got["epochs"] / got["cpu"],
                })  # fmt: skip
                r = rows[-1]
                print(
                    f"{name}: {r['tps']:,.0f} tokens/s, {r['cpu_tps']:,.0f} per CPU s, load {load:.1f}",
                    flush=True,
                )
    scores = eval_scores([work / r["file"] for r in rows], work)
    for r in rows:
        r["scores"] = scores.get(r["file"])
    (work / "rows.json").write_text(json.dumps(rows, indent=1))
    run([sys.executable, __file__, "--overhead"], NEW_PATH, work / "overhead.txt")
    gil_s = float((work / "overhead.txt").read_text().split()[-1])
    vec_bytes = {}  # bytes of one occurrence's cached vector
    for which, c in caches.items():
        with h5py.File(Path(c) / "shard_00000.h5", "r") as f:
            vec_bytes[which] = f["occ_vec"].shape[1] * f["occ_vec"].dtype.itemsize
    write_report(args, rows, profiles, threads_list, n_words, (old_commit, new_commit), gil_s, vec_bytes)


def overhead() -> float:
    """CPU seconds per step that hold the GIL (Python, torch and Numba dispatch), with 4-d tables.

    A step's time minus that of its GIL-free Numba kernels run alone on the same arguments.
    """
    from ctx2static.students import bert_sg, contextual

    rng = np.random.default_rng(0)
    n = 50_000
    occ_word, ctx = contextual.window_occurrences(
        rng.integers(0, 50, n), np.ones(n, bool), np.arange(0, n + 1, 20), 5
    )
    data = contextual.ShardWindows(
        rng.normal(size=(n, 4)).astype(np.float16),
        occ_word,
        ctx,
        contextual.window_words(occ_word, ctx),
        0,
        np.arange(n),
        n,
    )
    step = contextual.Step(
        bert_sg.centre_loss,
        np.zeros(0, np.float32),
        False,
        np.zeros((50, 4), np.float32),
        np.zeros((4, 4), np.float32),
        np.arange(1, 51, dtype=np.uint32),
        5.0,
        1000,
        5,
        5,
        1,
    )
    buf = step.buffers()
    step(data, 0, 1000, 0.01, 0, buf)
    start = time.process_time()
    for b0 in range(0, n, 1000):
        step(data, b0, b0 + 1000, 0.01, 0, buf)
    whole = time.process_time() - start
    start = time.process_time()
    for b0 in range(0, n, 1000):
        step.kernel(
            buf.P,
            0,
            b0,
            1000,
            occ_word,
            ctx,
            data.ctx_word,
            step.cum_table,
            (1, 0, 0),
            step.table,
            step.params,
            False,
            buf.G,
            buf.beta,
            buf.negs,
            buf.losses,
        )
        contextual.scatter_rows(buf.P, step.table, data.ctx_word[b0 : b0 + 1000], buf.negs, buf.beta, 0.01)
        contextual.clipped_sgd(step.proj, buf.dU, 0.01, 5.0)
    return (whole - (time.process_time() - start)) / (n / 1000)


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table, the first column left-aligned, the others right-aligned."""
    out = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    return out + ["| " + " | ".join(r) + " |" for r in rows] + [""]


def write_report(args, rows, profiles, threads_list, n_words, commits, gil_s, vec_bytes) -> None:
    med = statistics.median
    groups: dict[tuple[str, str, int], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["student"], r["impl"], r["threads"]), []).append(r)
    order = [("sgns", "new"), ("bert-sg", "old"), ("bert-sg", "new"), ("bert-sg", "new-pca"),
             ("ctx2vec", "old"), ("ctx2vec", "new"), ("ctx2vec", "new-pca")]  # fmt: skip
    label = lambda s, i: "sgns (plain; dim 100, 5 epochs)" if s == "sgns" else f"{s} {i}"  # noqa: E731
    cmd = "PYTHONPATH=<pkg> python " + " ".join([os.path.relpath(__file__, NEW_PKG), *sys.argv[1:]])
    load = [r["load"] for r in rows]
    lines = [
        "# Contextual students' speed: bert-sg and ctx2vec against plain SGNS, old vs new",
        "",
        f"Date: {datetime.date.today()}. Machine: {cpu_name()}, {os.cpu_count()} cores, shared with other",
        f"jobs (1-minute load average at the runs' starts: {min(load):.1f} to {max(load):.1f}; 0 = quiet).",
        f"Old = the trainer at `{commits[0]}` (torch autograd per batch), new = `{commits[1]}`.",
        f"Cache `{args.cache}` (MiniLM, --vectors, 384-d); pca `{args.pca_cache}`; corpus `{args.corpus}`.",
        f"tokens/s = {n_words:,} corpus words x epochs / train seconds as the tool counts them (the fit,",
        "the init=ase pass and abtt; for sgns the fit after the vocabulary and encoding), median of the",
        "repeats; ratio = to sgns at the same threads in the same run. tokens/CPU s: the same over the",
        "process CPU seconds of the fit (all threads): less sensitive to the other jobs' load, an",
        "estimate of a quiet core's rate (old: torch's OpenMP threads spin while they wait, which counts",
        "as CPU). loop s = the new training loop alone (the rest: init pass and abtt). Each run is",
        "this script's --fit mode (the registry's calls, as fit-student) in its own process.",
        "",
        "```",
        cmd,
        "```",
        "",
    ]
    for threads in threads_list:
        sg = med([r["tps"] for r in groups[("sgns", "new", threads)]])
        sg_cpu = med([r["cpu_tps"] for r in groups[("sgns", "new", threads)]])
        table = []
        for student, impl in order:
            g = groups.get((student, impl, threads))
            if not g:
                continue
            tps, cpu_tps = med([r["tps"] for r in g]), med([r["cpu_tps"] for r in g])
            loop = [r["loop_s"] for r in g if r["loop_s"] is not None]
            table.append([
                label(student, impl), f"{tps:,.0f}", f"{tps / sg:.3f}x", f"{cpu_tps:,.0f}",
                f"{cpu_tps / sg_cpu:.3f}x", f"{med([r['train_s'] for r in g]):.1f}",
                f"{med(loop):.1f}" if loop else "-", str(len(g)),
            ])  # fmt: skip
        header = [
            "run",
            "tokens/s",
            "ratio to sgns",
            "tokens/CPU s",
            "ratio (CPU)",
            "train s",
            "loop s",
            "runs",
        ]
        lines += [f"## {threads} thread{'s' if threads > 1 else ''}", "", *md_table(header, table)]
    lines += [f"## Scores (Spearman x100, avg5 = mean of {', '.join(AVG5)})", ""]
    scored = [(f"{label(s, i)}, {t} thr", r) for t in threads_list for s, i in order
              for r in groups.get((s, i, t), []) if r["scores"]]  # fmt: skip
    if scored:
        sets = [k for k in scored[0][1]["scores"] if k != "avg5"]
        table = [
            [name, str(r["seed"]), *(f"{r['scores'].get(k, float('nan')):.1f}" for k in ("avg5", *sets)),
             "-" if r["loss"] is None else f"{r['loss']:.4f}"]
            for name, r in scored
        ]  # fmt: skip
        lines += md_table(["run", "seed", "avg5", *sets, "mean loss"], table)
    tmax = max(threads_list)
    lines += [
        "## Hours per epoch at 1.1B tokens (extrapolated)",
        "",
        f"Per-core rate = tokens per CPU second at {tmax} threads (the whole fit: init pass, loop and abtt).",
        "Hours = 1.1e9 / min(cores x per-core rate, GIL cap) / 3600. The workers share nothing but the",
        "tables (no barrier; the init pass reads shards side by side), so the rate is assumed to scale",
        "with cores as word2vec's Hogwild does, up to the GIL cap = 1000 centres / "
        f"{gil_s * 1e6:.0f} us (the part",
        f"of a step that holds the GIL, measured with 4-d tables) = {1000 / gil_s:,.0f} centres/s, and up to",
        "the disk: each pass reads every occurrence's vector, twice with init=ase (the last column: the",
        "read rate 64 cores need).",
        "",
    ]
    table = []
    for student, impl in order:
        g = groups.get((student, impl, tmax))
        if not g or impl == "old":
            continue
        per = med([r["cpu_tps"] for r in g])
        cap = float("inf") if student == "sgns" else 1000 / gil_s
        nbytes = 0 if student == "sgns" else 2 * vec_bytes["pca" if impl.endswith("pca") else "full"]
        hours = [TARGET_TOKENS / min(per * c, cap) / 3600 for c in (16, 64)]
        read = nbytes * min(per * 64, cap) / 1e9
        table.append(
            [label(student, impl), f"{per:,.0f}", f"{hours[0]:.2f}", f"{hours[1]:.2f}", f"{read:.1f}"]
        )
    lines += md_table(
        ["run", "per-core tokens/s", "h, 16 cores", "h, 64 cores", "GB/s read, 64 cores"], table
    )
    lines += ["## Profiles (cProfile, process CPU seconds, 1 thread, first shard, init=random)", ""]
    for (impl, student), text in profiles.items():
        lines += [f"### {student}, {impl}", "", "```", text.strip(), "```", ""]
    Path(args.out).write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--fit":
        fit(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    elif len(sys.argv) > 1 and sys.argv[1] == "--overhead":
        import torch

        torch.set_num_threads(1)
        print(overhead())
    elif len(sys.argv) > 1 and sys.argv[1] == "--profile":
        impl, student, cache = sys.argv[2:5]
        print((profile_old if impl == "old" else profile_new)(cache, student))
    else:
        main()
