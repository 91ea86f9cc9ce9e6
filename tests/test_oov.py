"""Any word gets a vector: the composer (teacher subwords mapped into the vectors' space)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from transformers import AutoTokenizer

import ctx2static
from ctx2static.cache import Cache
from ctx2static.cache.compose import fit_composer
from ctx2static.composer import Composer, build_composer, fit_ridge, map_rows, mean_rows
from ctx2static.errors import UserError
from ctx2static.eval import evaluate
from ctx2static.eval.benchmarks import SimilaritySet
from ctx2static.eval.similarity import spearman
from ctx2static.students.registry import fit_cache_student
from ctx2static.vectors import Vectors


def test_mean_rows_by_hand():
    rows = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], dtype=np.float16)
    got = mean_rows(rows, [[0, 1], [3], [], [2, 2, 0], []])
    np.testing.assert_allclose(got, [[2, 3], [7, 8], [0, 0], [11 / 3, 14 / 3], [0, 0]], rtol=1e-6)
    assert got.dtype == np.float32


def test_ridge_recovers_an_exact_linear_map_and_picks_the_smallest_penalty():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 6))
    w, b = rng.normal(size=(6, 3)), rng.normal(size=3)
    got_w, got_b, info = fit_ridge(x, x @ w + b)
    np.testing.assert_allclose(got_w, w, atol=1e-4)
    np.testing.assert_allclose(got_b, b, atol=1e-4)
    assert info["ridge"] == 1e-6 and info["validation_cosine"] > 0.9999
    # a large penalty shrinks the map towards zero: predictions collapse to the mean row
    big_w, big_b, _ = fit_ridge(x, x @ w + b, ridge=1e6)
    assert np.abs(big_w).max() < 1e-3 and np.allclose(big_b, (x @ w + b).mean(0), atol=1e-2)


def test_zero_inputs_give_the_mean_row_not_nan():
    w, b, _ = fit_ridge(np.zeros((30, 4)), np.arange(60.0).reshape(30, 2), ridge=1e-3)
    assert np.all(w == 0) and np.allclose(b, [29, 30])


def test_a_large_teacher_vocabulary_is_mapped_in_blocks_without_a_float64_copy():
    """Gemma 3 has 262,144 tokens: rows x map in float64 all at once would hold GBs."""
    import tracemalloc

    rng = np.random.default_rng(0)
    emb = rng.normal(size=(100_000, 64)).astype(np.float16)  # 12.8 MB; in float64 51 MB
    x = rng.normal(size=(500, 64))
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel

    tokenizer = Tokenizer(WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]")).to_str()
    tracemalloc.start()
    composer = build_composer(x, x @ rng.normal(size=(64, 64)), emb, tokenizer, True, 1e-3)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 30e6 and composer.rows.dtype == np.float16
    w = rng.normal(size=(64, 8))
    np.testing.assert_allclose(map_rows(emb, w, block=7), (emb.astype(np.float64) @ w), rtol=2e-3, atol=2e-3)


def test_a_token_added_past_the_embedding_matrix_gets_the_row_of_a_zero_input(tmp_path):
    """Gemma's tokenizer holds 262,145 tokens for 262,144 embedding rows: the saved set must load."""
    from tokenizers import AddedToken, Tokenizer
    from tokenizers.models import WordLevel

    tok = Tokenizer(WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    tok.add_special_tokens([AddedToken("<extra>", special=True)])
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 4))
    composer = build_composer(x, x + 1, rng.normal(size=(2, 4)).astype(np.float16), tok.to_str(), True, 1e-6)
    assert len(composer.rows) == 3
    np.testing.assert_allclose(composer.rows[2], np.ones(4), atol=1e-2)  # the map of 0: its bias, 1 here
    settings = composer.save(tmp_path)
    assert len(Composer.load(tmp_path, "", settings, 4).rows) == 3


@pytest.mark.parametrize("teacher", ["bert", "gpt2"])
def test_composition_splits_words_as_the_cache_pooled_them(tiny_caches, teacher):
    """With the identity as the map, composing a vocabulary word gives back its cached subword mean."""
    cache = Cache.open(tiny_caches[teacher])
    arrays = cache.vocab_arrays()
    emb = arrays["token_emb"]
    composer = build_composer(emb, emb, arrays["teacher_token_emb"], cache.teacher_tokenizer(), True, 1e-12)
    np.testing.assert_allclose(composer.compose(cache.vocab.words), emb, atol=2e-3)  # fp16 table


def _unknown_split(cache_dir, tiny_models, teacher="bert"):
    cache = Cache.open(cache_dir)
    vectors = fit_cache_student("ase", cache_dir)
    tok = AutoTokenizer.from_pretrained(tiny_models[teacher])
    return cache, vectors, tok


def test_query_gives_rows_of_known_words_and_subword_means_of_unknown_ones(tiny_caches, tiny_models):
    _, v, tok = _unknown_split(tiny_caches["bert"], tiny_models)
    assert v.composer is not None and "catsed" not in v
    got = v.query(["cat", "Catsed", "cat"])
    np.testing.assert_array_equal(got[0], v["cat"])
    np.testing.assert_array_equal(got[2], v["cat"])
    ids = tok("catsed", add_special_tokens=False)["input_ids"]  # cat ##s ##ed
    assert len(ids) == 3
    np.testing.assert_allclose(got[1], v.composer.rows[ids].astype(np.float32).mean(0), rtol=1e-6)
    assert v.similarity("cat", "catsed") == pytest.approx(
        got[0] @ got[1] / np.linalg.norm(got[0]) / np.linalg.norm(got[1]), rel=1e-5
    )


def test_the_map_is_fitted_on_the_table(tiny_caches):
    """Rows = E W + b with W, b the ridge fit from the words' token means to their vectors."""
    cache = Cache.open(tiny_caches["bert"])
    v = fit_cache_student("word", tiny_caches["bert"], compose=False)
    assert v.composer is None
    composer = fit_composer(cache, v, ridge=1e-3)
    arrays = cache.vocab_arrays()
    rows = [cache.vocab.index[w] for w in v.words]
    w, b, _ = fit_ridge(arrays["token_emb"][rows], v.matrix, ridge=1e-3)
    want = arrays["teacher_token_emb"].astype(np.float64) @ w + b
    assert composer.rows.dtype == np.float16
    np.testing.assert_allclose(composer.rows, want, rtol=1e-3, atol=1e-3)
    assert composer.info["words"] == len(v) and composer.info["teacher"]


@pytest.mark.parametrize("name", ["vecs", "vecs.bin", "vecs.txt"])
def test_the_composer_is_saved_beside_the_vectors(tiny_caches, tmp_path, name):
    v = fit_cache_student("ase", tiny_caches["bert"])
    path = v.save(tmp_path / name)
    back = Vectors.load(path)
    assert back.composer is not None and back.composer.lowercase
    np.testing.assert_array_equal(back.query(["catsed"]), v.query(["catsed"]))
    # saved again without a composer: its files go, and loading does not pick up a stale one
    Vectors(back.words, back.matrix, back.counts, back.meta).save(path)
    again = Vectors.load(path)
    assert again.composer is None and "composer" not in again.meta
    with pytest.raises(KeyError, match="catsed"):
        again.query(["catsed"])


def test_a_composer_file_without_its_settings_is_a_user_error(tiny_caches, tmp_path):
    v = fit_cache_student("ase", tiny_caches["bert"])
    path = v.save(tmp_path / "v")
    (path / "tokenizer.json").unlink()
    with pytest.raises(UserError, match=r"tokenizer.json or meta's 'composer' entry is missing"):
        Vectors.load(path)


def test_evaluate_with_compose_covers_every_word_with_the_composed_vectors(tiny_caches):
    v = fit_cache_student("ase", tiny_caches["bert"])
    pairs = [("cat", "dog"), ("cat", "catsed"), ("river", "rivers"), ("bird", "sang"), ("mouse", "mat")]
    bench = SimilaritySet("mine", pairs, np.array([5.0, 3.0, 4.0, 1.0, 2.0]))
    (plain,) = evaluate(v, [bench])
    (full,) = evaluate(v, [bench], compose=True)
    assert (plain.covered, full.covered, full.total) == (3, 5, 5)
    cos = [v.similarity(a, b) for a, b in pairs]
    assert full.score == pytest.approx(100 * spearman(np.array(cos), bench.gold))


def test_evaluate_with_compose_needs_a_composer():
    v = Vectors(["a", "b"], np.eye(2))
    with pytest.raises(UserError, match="no composer.*ctx2static compose"):
        evaluate(v, [], compose=True)


def test_compose_command_adds_a_composer(tiny_caches, tmp_path, cli_main):
    src = fit_cache_student("ase", tiny_caches["bert"], compose=False).save(tmp_path / "v.bin")
    assert Vectors.load(src).composer is None
    code, out, err = cli_main("compose", src, "--cache", tiny_caches["bert"], "--out", tmp_path / "c")
    assert code == 0, err
    assert "composer of" in out and Vectors.load(tmp_path / "c").composer is not None
    code, _, err = cli_main("eval", tmp_path / "c", "--family", "similarity", "--compose")
    assert code == 0, err


@pytest.mark.parametrize("out", ["c.txt", "c.bin", "c"])
def test_compose_never_changes_its_input(tiny_caches, tmp_path, cli_main, out):
    v = fit_cache_student("ase", tiny_caches["bert"], compose=False)
    lines = v.save(tmp_path / "v.txt").read_text().splitlines()
    n, d = lines[0].split()
    rows = [f"{w} " + " ".join(repr(float(x)) for x in row) for w, row in zip(v.words, v.matrix, strict=True)]
    # full float precision and a repeated word: what a rewrite at %.6g would change or drop
    text = "\n".join([f"{int(n) + 1} {d}", *rows, rows[0].split(" ")[0] + " " + " ".join(["0.5"] * int(d))])
    src = tmp_path / "v.txt"
    src.write_text(text + "\n")
    (tmp_path / "v.txt.meta.json").unlink()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    code, stdout, err = cli_main("compose", src, "--cache", tiny_caches["bert"], "--out", tmp_path / out)
    assert code == 0, err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name in before} == before
    composed = Vectors.load(tmp_path / out)
    assert composed.composer is not None and composed.words == v.words
    assert f"{tmp_path / out}: composer of" in stdout


def test_compose_needs_an_output(tiny_caches, tmp_path, cli_main):
    src = fit_cache_student("ase", tiny_caches["bert"], compose=False).save(tmp_path / "v.bin")
    before = src.read_bytes()
    code, _, err = cli_main("compose", src, "--cache", tiny_caches["bert"])
    assert code == 2 and "Missing option '--out'" in err
    assert src.read_bytes() == before and Vectors.load(src).composer is None


def test_fit_student_stores_a_composer_unless_told_not_to(tiny_caches, tmp_path, cli_main):
    base = ["fit-student", "-s", "ase", "--cache", tiny_caches["gpt2"]]
    assert cli_main(*base, "-o", tmp_path / "a")[0] == 0
    assert cli_main(*base, "-o", tmp_path / "b", "--no-compose")[0] == 0
    a, b = Vectors.load(tmp_path / "a"), Vectors.load(tmp_path / "b")
    assert isinstance(a.composer, Composer) and b.composer is None
    assert (tmp_path / "a" / "subwords.npy").is_file() and not (tmp_path / "b" / "subwords.npy").exists()
    assert a.query(["zebras"]).shape == (1, a.dim)


def test_retrofitting_keeps_the_composer(tiny_caches, tmp_path):
    from ctx2static.retrofit.config import RetrofitConfig
    from ctx2static.retrofit.solver import retrofit_vectors

    v = fit_cache_student("ase", tiny_caches["bert"])
    (tmp_path / "lex.txt").write_text("cat dog mouse\nriver tree\n")
    r, _ = retrofit_vectors(v, [tmp_path / "lex.txt"], RetrofitConfig())
    assert r.composer is v.composer and not np.allclose(r["cat"], v.unit()[v.index["cat"]])
    np.testing.assert_array_equal(r.query(["catsed"]), v.query(["catsed"]))


def test_querying_unknown_words_needs_no_torch(tiny_caches, tmp_path):
    path = fit_cache_student("ase", tiny_caches["bert"]).save(tmp_path / "v")
    code = (
        "import sys; from ctx2static.vectors import Vectors; v = Vectors.load(sys.argv[1]); "
        "q = v.query(['catsed', 'cat']); assert q.shape == (2, v.dim) and 'tokenizers' in sys.modules; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    )
    env = {"PYTHONPATH": str(Path(ctx2static.__file__).parent.parent), "PATH": "/usr/bin:/bin"}
    res = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_a_composer_from_another_cache_is_refused(tiny_caches):
    v = Vectors(["zebra", "okapi", "cat"], np.ones((3, 4)))
    with pytest.raises(UserError, match="only 1 of the vectors' 3 words are in this cache's vocabulary"):
        fit_composer(Cache.open(tiny_caches["bert"]), v)
