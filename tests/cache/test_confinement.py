"""A cache reads, writes and deletes only its own files, whatever its manifest and its files say.

Each attack points at a copy of a cache file outside the folder, so its checksum matches what the
crafted manifest records: a name with ``..`` or an absolute path in any table of the manifest, an
HDF5 file that reads another file (external storage, a virtual dataset, an external or soft link),
a cache file that is a symbolic link. Each is one line naming the file, the problem and the fix;
the file outside is never read, changed or deleted (extract's resume, cache info, fit-student).
"""

import json
import os
import shutil

import h5py
import numpy as np
import pytest

from ctx2static.cache import Cache
from ctx2static.cache.reader import not_own_file
from ctx2static.cache.writer import CacheWriter
from ctx2static.cli import main
from ctx2static.errors import UserError
from ctx2static.fileio.digests import sha256_file

from .. import tiny_models as tm
from ..faults import reseal
from ..synthetic_cache import write_cache

V, D = 12, 4


def _synthetic(folder, finish):
    rng = np.random.default_rng(0)
    sents = [list(rng.integers(0, V, size=5)) for _ in range(12)]
    n_occ = sum(len(s) for s in sents)
    attention = {
        "occ": np.arange(n_occ, dtype=np.int32),
        "ctx": rng.integers(0, V, n_occ).astype(np.int32),
        "offset": np.ones(n_occ, np.int16),
        "weight": rng.random(n_occ).astype(np.float32),
    }
    words = [f"w{i}" for i in range(V)]
    return write_cache(folder, words, sents, 4, rng.normal(size=(12, D)), attention=attention, finish=finish)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    root = tmp_path_factory.mktemp("confined")
    return {"complete": _synthetic(root / "complete", True), "partial": _synthetic(root / "partial", False)}


def _copy(pristine, tmp_path, kind="complete"):
    """A copy of a cache in ``tmp_path/cache``, and one in ``tmp_path/outside`` (same bytes, same sha256)."""
    shutil.copytree(pristine[kind], tmp_path / "outside")
    return shutil.copytree(pristine[kind], tmp_path / "cache")


def _edit(folder, edit):
    m = json.loads((folder / "manifest.json").read_text())
    edit(m)
    (folder / "manifest.json").write_text(json.dumps(m))


def _rename(table, old, new):
    table[new] = table.pop(old)


def _snapshot(folder):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def _one_line(exc_info, *expected):
    text = str(exc_info.value)
    assert "\n" not in text
    for part in expected:
        assert part in text, text


def _renamed(*where, old, new):
    """An edit of the manifest: the file ``old`` of the table at ``where`` named ``new`` ({o}: outside)."""

    def edit(m, outside):
        table = m
        for key in where:
            table = table[key]
        table[new.format(o=outside)] = table.pop(old)

    return edit


def _sums_named(new):
    return lambda m, outside: m["word_sums"].update(file=new.format(o=outside, name=m["word_sums"]["file"]))


CRAFTED = {
    "shard file ..": _renamed("shards", 0, "files", old="shard_00000.h5", new="../outside/shard_00000.h5"),
    "shard file absolute": _renamed("shards", 1, "files", old="shard_00001.h5", new="{o}/shard_00001.h5"),
    "another shard's file": _renamed("shards", 0, "files", old="shard_00000.h5", new="shard_00001.h5"),
    "attention file ..": _renamed(
        "shards", 0, "files", old="shard_00000.attn.parquet", new="../outside/shard_00000.attn.parquet"
    ),
    "vocab_files ..": _renamed("vocab_files", old="vocab.h5", new="../outside/vocab.h5"),
    "vocab_files absolute": _renamed(
        "vocab_files", old="teacher_tokens.parquet", new="{o}/teacher_tokens.parquet"
    ),
    "aux_files": lambda m, o: m.update(aux_files={f"{o}/vocab.h5": m["vocab_files"]["vocab.h5"]}),
    "word_sums ..": _sums_named("../outside/{name}"),
    "word_sums absolute": _sums_named("{o}/{name}"),
    "shard name": lambda m, o: m["shards"][0].update(name="../shard_00000"),
}


@pytest.mark.parametrize("case", list(CRAFTED))
def test_a_manifest_naming_a_file_not_its_own_is_one_line_and_touches_nothing(pristine, tmp_path, case):
    kind = "partial" if case.startswith("word_sums") else "complete"
    folder = _copy(pristine, tmp_path, kind)
    _edit(folder, lambda m: CRAFTED[case](m, tmp_path / "outside"))
    outside = _snapshot(tmp_path / "outside")
    with pytest.raises(UserError) as exc_info:
        Cache.open(folder)
    _one_line(exc_info, f"{folder / 'manifest.json'}: names ", "delete the cache folder and extract again")
    original = Cache.open(pristine[kind])
    identity = {k: v for k, v in original.manifest["identity"].items() if k != "format"}
    with pytest.raises(UserError, match="names "):  # extract's resume reads the manifest the same way
        CacheWriter.open(folder, identity, original.vocab)
    assert _snapshot(tmp_path / "outside") == outside


# ---------------------------------------------------------------- the commands, end to end


@pytest.fixture(scope="module")
def extracted(tiny_models, tmp_path_factory):
    """A cache made by ``extract`` (the tiny BERT), and the command line that makes it."""
    root = tmp_path_factory.mktemp("extracted")
    (root / "c.txt").write_text("\n".join(tm.SENTENCES) + "\n")
    args = ["-q", "extract", "--corpus", root / "c.txt", "--teacher", tiny_models["bert"], "--min-count", "1"]
    args += ["--shard-size", "3", "--vectors", "--out"]
    main([str(a) for a in [*args, root / "cache"]])
    return args, root / "cache"


def _fails(cli_main, *args):
    code, _, err = cli_main(*args)
    assert code == 2 and "Traceback" not in err, err
    errors = [line for line in err.splitlines() if "error" in line.lower()]  # not the teacher's progress bars
    assert len(errors) == 1 and errors[0].startswith("error: ") and err.strip().endswith(errors[0]), err
    return errors[0]


def test_extract_resume_never_reads_or_deletes_a_file_the_manifest_points_outside(
    extracted, tmp_path, cli_main
):
    args, pristine = extracted
    folder = shutil.copytree(pristine, tmp_path / "cache")
    precious = tmp_path / "precious.h5"  # what the crafted manifest offers as the running per-word sums
    n_words = len(Cache.open(folder).vocab)
    with h5py.File(precious, "w") as f:
        f["sum"], f["count"] = np.zeros((n_words, 8)), np.zeros(n_words, np.int64)
    before = precious.read_bytes()

    def unfinished(m):  # as a killed extract leaves it, but its sums are a file outside
        for key in ("vocab_files", "totals"):
            m.pop(key)
        m.update(complete=False, word_sums={"file": "../precious.h5", "sha256": sha256_file(precious)})

    _edit(folder, unfinished)
    line = _fails(cli_main, *args, folder)
    assert "manifest.json: names '../precious.h5' as the per-word sums, not word_sums." in line
    assert precious.read_bytes() == before


@pytest.mark.parametrize(
    "command", [["cache", "info"], ["-q", "fit-student", "-s", "x2static", "-o", "v.txt", "--cache"]]
)
@pytest.mark.parametrize("where", ["shard file", "vocab file"])
def test_info_and_fit_student_refuse_a_manifest_pointing_outside(
    extracted, tmp_path, cli_main, command, where
):
    folder = shutil.copytree(extracted[1], tmp_path / "cache")
    outside = tmp_path / "outside"
    name = "shard_00000.h5" if where == "shard file" else "vocab.h5"
    shutil.copy(folder / name, outside)
    if where == "shard file":
        _edit(folder, lambda m: _rename(m["shards"][0]["files"], name, "../outside"))
    else:
        _edit(folder, lambda m: _rename(m["vocab_files"], name, str(outside)))
    before = (outside.read_bytes(), outside.stat().st_mtime_ns)
    line = _fails(cli_main, *[tmp_path / a if a == "v.txt" else a for a in command], folder)
    assert (
        f"{folder / 'manifest.json'}: names " in line and "delete the cache folder and extract again" in line
    )
    assert (outside.read_bytes(), outside.stat().st_mtime_ns) == before and not (tmp_path / "v.txt").exists()


# ---------------------------------------------------------------- HDF5 files that read other files


def _foreign_dataset(f, key, data, outside):
    """Store ``data`` as ``key`` in ``f`` so that reading it reads the file ``outside`` (a copy of it)."""
    raw = outside.with_suffix(".raw")
    raw.write_bytes(np.ascontiguousarray(data).tobytes())
    f.create_dataset(key, data.shape, data.dtype, external=[(str(raw), 0, raw.stat().st_size)])


def _virtual(f, key, data, outside):
    layout = h5py.VirtualLayout(data.shape, data.dtype)
    layout[...] = h5py.VirtualSource(str(outside), key, data.shape)
    f.create_virtual_dataset(key, layout)


def _external_link(f, key, data, outside):
    f[key] = h5py.ExternalLink(str(outside), key)


def _soft_link(f, key, data, outside):
    f[key + "_copy"] = data
    f[key] = h5py.SoftLink(f"/{key}_copy")


FOREIGN = {
    "external storage": (_foreign_dataset, "external storage"),
    "virtual dataset": (_virtual, "virtual dataset"),
    "external link": (_external_link, "external link"),
    "soft link": (_soft_link, "soft link"),
}


@pytest.mark.parametrize("kind", list(FOREIGN))
@pytest.mark.parametrize("name, key", [("shard_00000.h5", "sent_ctx"), ("vocab.h5", "word_emb")])
def test_an_hdf5_file_that_reads_another_file_is_refused(pristine, tmp_path, kind, name, key):
    folder = _copy(pristine, tmp_path)
    outside = tmp_path / "outside" / name
    with h5py.File(outside, "r") as f:
        arrays = {k: f[k][()] for k in f}
    (folder / name).unlink()
    make, what = FOREIGN[kind]
    with h5py.File(folder / name, "w") as f:
        for k, a in arrays.items():
            if k == key:
                make(f, k, a, outside)
            else:
                f[k] = a
    reseal(folder, name)  # as a crafted cache would record it
    before = _snapshot(tmp_path / "outside")
    cache = Cache.open(folder)
    with pytest.raises(UserError) as exc_info:
        cache.shard(0) if name.startswith("shard") else cache.vocab_arrays()
    fix = (
        "delete its files (shard_00000.*) and re-run" if name.startswith("shard") else "delete it and re-run"
    )
    _one_line(exc_info, f"{folder / name}: '{key}' ", what, "which a cache never holds", fix)
    assert _snapshot(tmp_path / "outside") == before


# ---------------------------------------------------------------- cache files that are not files of the cache


@pytest.mark.parametrize("name", ["shard_00000.h5", "manifest.json", "vocab.tsv", "teacher_tokens.parquet"])
def test_a_cache_file_that_is_a_symlink_outside_is_refused(pristine, tmp_path, name):
    folder = _copy(pristine, tmp_path)
    (folder / name).unlink()
    (folder / name).symlink_to(tmp_path / "outside" / name)  # same bytes: only the link is wrong
    with pytest.raises(UserError) as exc_info:
        cache = Cache.open(folder)
        cache.verify_for(cache.signals)
    _one_line(exc_info, f"{folder / name}: a symbolic link, not a file of the cache; ")


@pytest.mark.parametrize("name", ["shard_00001.h5", "vocab.tsv"])
def test_extract_replaces_a_symlinked_cache_file_and_leaves_its_target(pristine, tmp_path, name):
    folder = _copy(pristine, tmp_path)
    (folder / name).unlink()
    (folder / name).symlink_to(tmp_path / "outside" / name)  # same bytes: only the link is wrong
    outside = _snapshot(tmp_path / "outside")
    original = Cache.open(pristine["complete"])
    identity = {k: v for k, v in original.manifest["identity"].items() if k != "format"}
    writer = CacheWriter.open(folder, identity, original.vocab)
    try:
        assert writer.damaged == ([1] if name.startswith("shard") else [])  # extract rebuilds the shard
    finally:
        writer.close()
    if name == "vocab.tsv":  # rewritten from the vocabulary, as a file of its own
        assert not (folder / name).is_symlink() and Cache.open(folder).vocab.words == original.vocab.words
    assert _snapshot(tmp_path / "outside") == outside


def test_a_fifo_in_place_of_a_cache_file_is_not_read(tmp_path):
    os.mkfifo(tmp_path / "shard_00000.h5")  # reading it would block for ever
    assert not_own_file(tmp_path / "shard_00000.h5") == "not a regular file"
    assert not_own_file(tmp_path / "missing.h5") == "missing"
