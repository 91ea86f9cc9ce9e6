import os
import subprocess
import sys

import pytest


def test_help_lists_every_stage(cli_main):
    code, out, _ = cli_main("--help")
    assert code == 0
    for command in ("extract", "cache", "fit-student", "retrofit", "combine", "eval", "run", "export"):
        assert command in out


@pytest.mark.parametrize(
    "setup,args,message",
    [
        (
            None,
            ["fit-student", "-s", "sgns", "--corpus", "missing.txt", "-o", "v.txt"],
            "missing.txt: no such file",
        ),
        (
            "empty",
            ["fit-student", "-s", "sgns", "--corpus", "c.txt", "-o", "v.txt"],
            "c.txt: the corpus has no tokens",
        ),
        (
            "binary",
            ["fit-student", "-s", "sgns", "--corpus", "c.txt", "-o", "v.txt"],
            "c.txt: line 1 holds a NUL byte",
        ),
        (
            "latin1",
            ["fit-student", "-s", "sgns", "--corpus", "c.txt", "-o", "v.txt"],
            "c.txt: line 2 is not valid UTF-8",
        ),
        ("ragged", ["eval", "v.txt"], "v.txt: line 3 has 1 values, expected 2"),
        (None, ["eval", "nothing.txt"], "nothing.txt: no such vectors file"),
        (
            "empty",
            ["fit-student", "-s", "nope", "--corpus", "c.txt", "-o", "v.txt"],
            "unknown student 'nope'",
        ),
        (
            "empty",
            ["fit-student", "-s", "sgns", "--corpus", "c.txt", "-o", "v.txt", "--set", "dimm=3"],
            "no option 'dimm'",
        ),
    ],
)
def test_bad_input_is_one_line_without_traceback(tmp_path, monkeypatch, cli_main, setup, args, message):
    if setup == "empty":
        (tmp_path / "c.txt").write_text("\n\n")
    elif setup == "binary":
        (tmp_path / "c.txt").write_bytes(b"\x00\x01\x02garbage\n")
    elif setup == "latin1":
        (tmp_path / "c.txt").write_bytes("fine line\ncaf\xe9\n".encode("latin1"))
    elif setup == "ragged":
        (tmp_path / "v.txt").write_text("2 2\na 1 2\nb 1\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = cli_main(*args)
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and message in lines[0], err
    assert not (tmp_path / "v.txt").exists() or setup == "ragged"


@pytest.mark.parametrize(
    "args,line",
    [
        (
            ["fit-student", "-s", "x2statc", "--cache", "nocache", "-o", "b/"],
            "error: unknown student 'x2statc' (did you mean 'x2static'?); choose one of: sgns,",
        ),
        (
            ["fit-student", "-s", "sgns", "--corpus", "v.txt", "--set", "dimm=5", "-o", "b.txt"],
            "error: sgns has no option 'dimm' (did you mean 'dim'?); its options are: dim,",
        ),
        (
            ["fit-student", "-s", "sgns", "--corpus", "v.txt", "--set", "abtt=tru", "-o", "b.txt"],
            "error: --set abtt=tru",
        ),
        (
            ["retrofit", "v.txt", "-l", "wordnt", "-o", "r.txt"],
            "error: wordnt: no such lexicon file (did you mean 'wordnet'?); give a path or one of: wordnet,",
        ),
        (
            ["retrofit", "v.txt", "--method", "faruki", "-o", "r.txt"],
            "Error: Invalid value for '--method': 'faruki' is not one of 'faruqui', 'graph', 'attract-repel' "
            "(did you mean 'faruqui'?).",
        ),
        (
            ["eval", "v.txt", "--family", "similarty"],
            "Error: Invalid value for '--family': 'similarty' is not one of 'similarity', 'analogy', "
            "'categorization', 'downstream', 'sentences' (did you mean 'similarity'?).",
        ),
        (
            ["export", "v.txt", "--format", "word2vc", "-o", "e.txt"],
            "Error: Invalid value for '--format': 'word2vc' is not one of 'word2vec', 'word2vec-bin', "
            "'model2vec', 'sentence-transformers' (did you mean 'word2vec'?).",
        ),
        (
            ["export", "v.txt", "--format", "gensim", "-o", "e.txt"],
            "Error: Invalid value for '--format': 'gensim' is not one of 'word2vec', 'word2vec-bin', "
            "'model2vec', 'sentence-transformers' (for gensim: word2vec, or word2vec-bin).",
        ),
        (
            ["extract", "--corpus", "v.txt", "--teacher", "MiniLM-L6", "--out", "c"],
            "error: --teacher MiniLM-L6: not a short name (did you mean 'minilm'?)",
        ),
        (
            ["extract", "--corpus", "v.txt", "--teacher", "all-mpnet-base-v2", "--out", "c"],
            "error: --teacher all-mpnet-base-v2: not a short name (did you mean 'mpnet'?)",
        ),
    ],
)
def test_a_mistyped_name_is_answered_with_the_closest_one(tmp_path, monkeypatch, cli_main, args, line):
    """Every name a user types (student, option, lexicon, method, family, format) gets a did-you-mean."""
    (tmp_path / "v.txt").write_text("2 2\nking 1 0\nqueen 0 1\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = cli_main(*args)
    assert code == 2, err
    assert err.strip().splitlines()[-1].startswith(line), err


@pytest.mark.parametrize(
    "args,message",
    [
        (["-s", "sgns", "--set", "lr=1"], "--set lr=1.0 must be between 0 and 1, both excluded"),
        (["-s", "cbow", "--seed", "-1"], "--set seed=-1 must be between 0 and 4294967295"),
        (["-s", "glove", "--set", "seed=4294967296"], "--set seed=4294967296 must be between 0 and"),
        (["-s", "sgns", "--set", "lr=nan"], "--set lr=nan must be a finite number"),
    ],
)
def test_options_out_of_range_stop_before_any_training(tmp_path, cli_main, mini_corpus, args, message):
    """A real corpus: the old code read it and died in the Numba kernel (lr=1) or numpy (seed=-1)."""
    out = tmp_path / "v.txt"
    code, _, err = cli_main("fit-student", *args, "--corpus", mini_corpus, "--out", out)
    assert code == 2 and "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {message}"), err
    assert not out.exists()


def test_a_shortcut_is_for_the_students_with_its_option(tmp_path, cli_main):
    """--threads for x2static (serial Adam) names the students it is for; sgns takes it."""
    code, _, err = cli_main(
        "fit-student", "-s", "x2static", "--cache", tmp_path, "-o", tmp_path / "v", "--threads", 2
    )
    assert code == 2
    line = err.strip().splitlines()[-1]
    head, _, students = line.partition(" (the shortcut is for ")
    assert head == "error: --threads: student 'x2static' has no option 'threads'"
    assert "sgns" in students and "x2static" not in students
    from ctx2static.students.registry import shortcut_overrides

    assert shortcut_overrides("sgns", {"threads": 2, "dim": None}) == {"threads": 2}


def test_a_rate_in_range_that_still_diverges_is_one_line(tmp_path, cli_main, mini_corpus):
    """lr=0.9 passes the rule but sends SGNS to NaN here: saving refuses it (no ZeroDivisionError)."""
    out = tmp_path / "v.txt"
    code, _, err = cli_main(
        "fit-student", "-s", "sgns", "--corpus", mini_corpus, "--out", out, "--set", "lr=0.9",
        "--threads", 1, "--epochs", 1, "--dim", 20, "--min-count", 1,
    )  # fmt: skip
    assert code == 2 and "Traceback" not in err
    assert "the training diverged" in err.strip().splitlines()[-1] and not out.exists()


def test_the_configuration_is_shown_with_verbose_only(tmp_path, mini_corpus, cli_main):
    """By default a run prints inputs, progress and one summary; -v adds the effective configuration."""
    args = ["fit-student", "-s", "sgns", "--corpus", mini_corpus, "--dim", "8", "--epochs", "1"]
    code, _, err = cli_main(*args, "--out", tmp_path / "a.txt")
    assert code == 0, err
    assert "Config(" not in err
    code, _, err = cli_main("-v", *args, "--out", tmp_path / "b.txt")
    assert code == 0 and "sgns: Config(" in err, err
    assert "\x1b" not in err  # no control sequences in what a log file keeps


def test_replacing_vectors_another_step_made_needs_overwrite(tmp_path, mini_corpus, cli_main):
    """The same step run again replaces its own output; another student's (or another tool's) needs
    --overwrite, and without it the vectors there are left as they were."""
    base = ["fit-student", "--corpus", mini_corpus, "--dim", "8", "--epochs", "1", "--out"]
    out = tmp_path / "v.txt"
    assert cli_main(*base, out, "-s", "sgns")[0] == 0
    assert cli_main(*base, out, "-s", "sgns")[0] == 0  # a rerun
    before = out.read_bytes()
    code, _, err = cli_main(*base, out, "-s", "cbow")
    assert code == 2 and err.count("\n") == 1, err
    assert (
        f"{out}: holds the vectors of student 'sgns'; this run writes student 'cbow': pass --overwrite" in err
    )
    assert out.read_bytes() == before
    assert cli_main(*base, out, "-s", "cbow", "--overwrite")[0] == 0
    retro = ["retrofit", out, "-l", "wordnet", "--out"]
    assert cli_main(*retro, tmp_path / "r.txt")[0] == 0
    assert cli_main(*retro, tmp_path / "r.txt")[0] == 0  # the same retrofit again
    assert cli_main(*base, tmp_path / "w.txt", "-s", "sgns")[0] == 0
    code, _, err = cli_main(*retro, tmp_path / "w.txt")  # onto a student's vectors: a different step
    assert code == 2 and "student 'sgns'; this run writes student 'cbow' retrofitted with faruqui" in err, err
    (tmp_path / "other.txt").write_text("1 2\nking 1 0\n")  # made by another tool: no metadata
    code, _, err = cli_main(*base, tmp_path / "other.txt", "-s", "sgns")
    assert code == 2 and "holds the vectors of unknown provenance" in err, err


def test_quiet_silences_progress_bars_and_summaries(tmp_path, cli_main):
    """-q leaves stderr empty on success: tqdm's bars write there whatever the log level."""
    from tqdm import tqdm

    original = vars(tqdm)["__init__"]
    (tmp_path / "v.txt").write_text("3 2\ncat 1 0\ndog 0 1\ncar 1 1\n")
    (tmp_path / "lex.txt").write_text("cat dog\n")
    args = ["retrofit", tmp_path / "v.txt", "-l", tmp_path / "lex.txt", "-o", tmp_path / "r.txt"]
    code, _, err = cli_main(*args)
    assert code == 0 and "it/s" in err, err  # the bar, shown without -q
    assert "words moved, 1 lexicon edges, objective " in err
    assert "(Faruqui's Psi; lower fits the lexicons better)" in err
    code, _, err = cli_main("-q", *args, "--overwrite")
    assert code == 0 and err == "", err
    assert vars(tqdm)["__init__"] is original  # bars return after the command


def test_a_run_leaves_no_colour_reset_on_the_terminal():
    """numba's colorama would write ESC[0m at exit after compiling; its highlighting is off."""
    probe = "import ctx2static, numba.core.errors as e; print(type(e.termcolor()).__name__)"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING"}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "NOPColorScheme"


@pytest.mark.parametrize(
    "args,line",
    [
        (["--teacher", "minlm"], "error: --teacher minlm: not a short name (did you mean 'minilm'?)"),
        (["--teacher", "{teacher}", "--min-count", "0"], "error: --min-count 0 must be at least 1"),
        (["--teacher", "{teacher}", "--fp16"], "Error: No such option '--fp16'."),
        (["--teacher", "{teacher}", "--layer", "99"], "error: --layer 99: names no hidden state of 3 (-3..2"),
        (["--teacher", "{teacher}", "--word-layer", "5:"], "error: --word-layer 5:: names no hidden state"),
        (
            ["--teacher", "{teacher}", "--vectors", "--pca", "64"],
            "error: --pca 64: the teacher's vectors have 16 dimensions; use --pca 16 or fewer",
        ),
    ],
)
def test_extract_checks_names_and_options_before_the_corpus_is_read(
    tmp_path, monkeypatch, cli_main, tiny_models, args, line
):
    """A corpus that fails once opened: had it been read first, its error would come, minutes later."""
    (tmp_path / "big.txt.gz").write_bytes(b"not gzip: reading this fails")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    args = [str(tiny_models["bert"]) if a == "{teacher}" else a for a in args]
    code, _, err = cli_main("extract", "--corpus", "big.txt.gz", *args, "--out", "c")
    assert code == 2 and "big.txt.gz" not in err, err
    assert err.strip().splitlines()[-1].startswith(line), err
    assert not (tmp_path / "c").exists()


def test_distill_checks_names_before_the_corpus_is_read(tmp_path, monkeypatch):
    from ctx2static import distill
    from ctx2static.errors import UserError

    (tmp_path / "big.txt.gz").write_bytes(b"not gzip: reading this fails")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match=r"^teacher='minlm': not a short name \(did you mean 'minilm'\?\)"):
        distill("big.txt.gz", teacher="minlm", student="ase")
    with pytest.raises(UserError, match=r"^student='asee': unknown student \(did you mean 'ase'\?\)"):
        distill("big.txt.gz", teacher="minilm", student="asee")
    with pytest.raises(UserError, match=r"unknown option 'epochz' \(did you mean 'epochs'\?\)"):
        distill("big.txt.gz", teacher="minilm", student="x2static", epochz=3)


def test_the_api_checks_what_the_teachers_config_decides_before_the_corpus_is_read(
    tmp_path, monkeypatch, tiny_models
):
    from ctx2static import distill, extract
    from ctx2static.errors import UserError

    (tmp_path / "big.txt.gz").write_bytes(b"not gzip: reading this fails")
    monkeypatch.chdir(tmp_path)
    teacher = str(tiny_models["bert"])
    with pytest.raises(UserError, match=r"^layer='99': names no hidden state of 3 \(-3\.\.2\)$"):
        extract("big.txt.gz", teacher, tmp_path / "c", layer="99")
    with pytest.raises(UserError, match=r"^pca=64: the teacher's vectors have 16 dimensions; use pca=16 or"):
        distill("big.txt.gz", teacher, student="ase", vectors=True, pca=64)
    assert not (tmp_path / "c").exists()
