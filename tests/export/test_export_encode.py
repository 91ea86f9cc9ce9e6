"""Exported folders encode texts as `Vectors.encode` does: same words, same weights, same normalisation.

Checked with our reader of the folders (:class:`TokenBag`, numpy only) everywhere, and with
model2vec and sentence-transformers themselves where they are installed.
"""

import json

import numpy as np
import pytest
from safetensors.numpy import load_file

from ctx2static.errors import UserError
from ctx2static.export import ExportConfig, Format, export_vectors
from ctx2static.export.reader import TokenBag
from ctx2static.students.registry import fit_cache_student
from ctx2static.vectors import Vectors

FOLDERS = [Format.MODEL2VEC, Format.SENTENCE_TRANSFORMERS]


@pytest.fixture(scope="module")
def bert_vectors(tiny_caches) -> Vectors:
    """Vectors with a WordPiece composer, centred (the tiny teacher's vectors share one direction)."""
    v = fit_cache_student("ase", tiny_caches["bert"])
    return v.reduced(v.dim)


def texts_of(v: Vectors, n: int = 40) -> list[str]:
    """Texts of table words only (where the folder's tokenizer and the corpus reader agree)."""
    rng = np.random.default_rng(0)
    words = [w for w in v.words if w.isalpha()]
    return [" ".join(rng.choice(words, size=rng.integers(1, 12))) for _ in range(n)]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)


def library_encode(fmt: Format, path, texts) -> np.ndarray:
    if fmt is Format.MODEL2VEC:
        model2vec = pytest.importorskip("model2vec")
        return model2vec.StaticModel.from_pretrained(path).encode(texts)
    st = pytest.importorskip("sentence_transformers")
    return st.SentenceTransformer(str(path), device="cpu").encode(texts)


@pytest.mark.parametrize("weighting", ["none", "sif", "zipf"])
@pytest.mark.parametrize("fmt", FOLDERS)
def test_a_folder_encodes_as_vectors_encode(tmp_path, bert_vectors, fmt, weighting):
    # "unsed" is no table word and its pieces (un ##s ##ed) are none either: it enters as the pieces
    v, texts = bert_vectors, [*texts_of(bert_vectors), "the unsed river", "unsed"]
    config = ExportConfig(weighting=weighting, sif_a=0.01)
    out = export_vectors(v, fmt, tmp_path / "m", config=config)
    want = v.encode(texts, weighting=weighting, sif_a=0.01)
    plain = v.encode(texts)
    got = TokenBag.load(out).encode(texts)
    assert cosines(got, want).min() > 0.9999
    np.testing.assert_allclose(got, want, atol=1e-5)
    if weighting != "none":  # the weights change the vectors (or this test could not fail)
        assert cosines(plain, want).min() < 0.99
    np.testing.assert_allclose(library_encode(fmt, out, texts), want, atol=1e-5)


@pytest.mark.parametrize("fmt", FOLDERS)
def test_words_the_teachers_normalizer_makes_alike_share_the_most_frequent_ones_row(
    tmp_path, bert_vectors, fmt
):
    """BERT's normalizer strips accents: "thé" and "the" are one token string. The folder keeps one
    token for them, the frequent word's, so "the" in a text is always the row of "the"."""
    v = bert_vectors
    word = next(w for w in v.words if w.isalpha() and len(w) > 2 and "e" in w)
    variants = [word.replace("e", accent, 1) for accent in "éèêë"]
    rng = np.random.default_rng(1)
    rows = rng.normal(size=(len(variants), v.dim)).astype(np.float32)
    counts = np.concatenate([v.counts, np.ones(len(variants), np.int64)])
    alike = Vectors([*v.words, *variants], np.vstack([v.matrix, rows]), counts, v.meta, v.composer)
    out = export_vectors(alike, fmt, tmp_path / "m")
    bag = TokenBag.load(out)
    added = [t for t in bag.tokenizer.get_added_tokens_decoder().values() if t.normalized]
    forms = [bag.tokenizer.normalizer.normalize_str(t.content) for t in added]
    assert len(forms) == len(set(forms))  # one id a token string
    texts = [word, f"{word} {variants[2]}", *texts_of(v)]
    want = alike.encode(texts[:1] + texts[2:])
    got = bag.encode(texts)
    np.testing.assert_allclose(got[:1], want[:1], atol=1e-5)
    np.testing.assert_allclose(got[1], want[0], atol=1e-5)  # the variant reads as the word
    np.testing.assert_allclose(got[2:], want[1:], atol=1e-5)
    assert "4 words that the teacher's normalizer makes alike" in (out / "README.md").read_text()


def test_without_normalize_the_folder_keeps_the_mean(tmp_path, bert_vectors):
    v, texts = bert_vectors, texts_of(bert_vectors)
    config = ExportConfig(weighting="sif", normalize=False)
    out = export_vectors(v, Format.MODEL2VEC, tmp_path / "m", config=config)
    assert json.loads((out / "config.json").read_text())["normalize"] is False
    want = v.encode(texts, weighting="sif", normalize=False)
    np.testing.assert_allclose(TokenBag.load(out).encode(texts), want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("quantize, dtype", [("float16", np.float16), ("int8", np.int8)])
def test_quantized_and_reduced_model2vec_folders_encode_as_the_reduced_vectors(
    tmp_path, bert_vectors, quantize, dtype
):
    v, texts = bert_vectors, texts_of(bert_vectors)
    config = ExportConfig(weighting="sif", quantize=quantize, dims=8)
    out = export_vectors(v, Format.MODEL2VEC, tmp_path / "m", config=config)
    tensors = load_file(out / "model.safetensors")
    assert tensors["embeddings"].dtype == dtype and tensors["embeddings"].shape[1] == 8
    assert ("weights" in tensors) == (quantize == "int8")  # the per-row scales
    settings = json.loads((out / "config.json").read_text())
    assert settings["embedding_dtype"] == quantize and settings["apply_pca"] == 8
    want = v.reduced(8).encode(texts, weighting="sif")
    assert cosines(TokenBag.load(out).encode(texts), want).min() > 0.98
    assert cosines(library_encode(Format.MODEL2VEC, out, texts), want).min() > 0.98


def test_int8_keeps_small_rows_with_a_scale_per_row(tmp_path):
    """One scale for the table would round the short row to zero; a scale per row keeps it."""
    v = Vectors(["big", "small"], np.array([[100.0, -50.0], [0.2, 0.1]], np.float32))
    out = export_vectors(v, Format.MODEL2VEC, tmp_path / "m", config=ExportConfig(quantize="int8"))
    got = TokenBag.load(out).encode(["small"])
    assert cosines(got, v.encode(["small"]))[0] > 0.9999


def test_reduced_is_pca_and_maps_the_composer_alike(bert_vectors):
    v = bert_vectors
    full = v.reduced(v.dim)  # a rotation of the centred rows: distances stay
    centred = v.matrix - v.matrix.mean(0)
    np.testing.assert_allclose(full.matrix @ full.matrix.T, centred @ centred.T, rtol=1e-3, atol=1e-3)
    small = v.reduced(4)
    cov = np.cov(small.matrix.T)
    np.testing.assert_allclose(cov, np.diag(np.diag(cov)), atol=1e-4 * cov.max())  # uncorrelated
    assert (np.diff(np.diag(cov)) <= 1e-6).all()  # by decreasing variance
    assert small.meta["pca"] == {"dims": 4, "of": v.dim, "drop": 0, "texts": 0}
    unknown = ["unbelievably", "zzyzx"]
    axes = np.linalg.lstsq(centred, small.matrix, rcond=None)[0]  # the map the table went through
    want = (v.query(unknown) - v.matrix.mean(0)) @ axes
    np.testing.assert_allclose(small.query(unknown), want, rtol=1e-2, atol=1e-2)


def test_sentence_level_pca_keeps_the_axes_along_which_the_texts_means_differ(bert_vectors):
    v, texts = bert_vectors, texts_of(bert_vectors, 300)
    small = v.reduced(4, texts=texts)
    means = small.encode(texts, normalize=False)  # every word known: (mean - m) P exactly
    assert np.abs(means.mean(0)).max() < 1e-4 * np.abs(means).max()  # centred on the texts' mean
    cov = np.cov(means.T)
    np.testing.assert_allclose(cov, np.diag(np.diag(cov)), atol=1e-4 * cov.max())
    assert (np.diff(np.diag(cov)) <= 1e-6).all()
    # the rows' axes are other axes: the texts' means are correlated along them, and vary less
    on_rows = np.cov(v.reduced(4).encode(texts, normalize=False).T)
    assert np.abs(on_rows - np.diag(np.diag(on_rows))).max() > 1e-2 * on_rows.max()
    assert np.trace(on_rows) <= np.trace(cov) * (1 + 1e-6)
    dropped = v.reduced(3, texts=texts, drop=1)  # the same axes, the first left out
    np.testing.assert_allclose(dropped.matrix, small.matrix[:, 1:], rtol=1e-4, atol=1e-5)
    assert dropped.meta["pca"] == {"dims": 3, "of": v.dim, "drop": 1, "texts": 300}
    with pytest.raises(
        UserError,
        match=f"--dims {v.dim}: the table has {v.dim} dimensions less --pca-drop 1; use --dims {v.dim - 1}",
    ):
        v.reduced(v.dim, texts=texts, drop=1)
    with pytest.raises(UserError, match="--pca-text: 1 text\\(s\\) hold a word of the table"):
        v.reduced(4, texts=["", "garden"])


def test_export_fits_the_axes_on_a_text_with_pca_text(tmp_path, cli_main, bert_vectors):
    src = bert_vectors.save(tmp_path / "v")
    texts = texts_of(bert_vectors, 200)
    (tmp_path / "s.txt").write_text("\n\n".join(texts) + "\n")  # blank lines are not texts
    args = ["export", src, "--format", "model2vec", "--no-eval", "--out", tmp_path / "m", "--dims", "6"]
    code, _, err = cli_main(*args, "--pca-text", tmp_path / "s.txt", "--pca-drop", "1")
    assert code == 0, err
    want = bert_vectors.reduced(6, texts=texts, drop=1).encode(texts)
    assert cosines(TokenBag.load(tmp_path / "m").encode(texts), want).min() > 0.9999
    code, _, err = cli_main(*args[:-2], "--pca-text", tmp_path / "s.txt", "--out", tmp_path / "n")
    assert code == 2 and "s.txt must be given with --dims" in err
    code, _, err = cli_main(*args[:-3], tmp_path / "o", "--dims", "6", "--pca-text", tmp_path / "no.txt")
    assert code != 0 and "no.txt" in err and "Traceback" not in err
    assert not (tmp_path / "n").exists() and not (tmp_path / "o").exists()
    before = (tmp_path / "s.txt").read_bytes()  # the text the axes come from is an input
    code, _, err = cli_main(
        *args[:3], "word2vec", "--out", tmp_path / "s.txt", "--dims", "6", "--pca-text", tmp_path / "s.txt"
    )
    assert code != 0 and "Traceback" not in err and (tmp_path / "s.txt").read_bytes() == before


def test_what_a_format_cannot_hold_is_one_line(tmp_path, bert_vectors):
    with pytest.raises(UserError, match="int8 is for --format model2vec"):
        export_vectors(
            bert_vectors, Format.SENTENCE_TRANSFORMERS, tmp_path / "s", config=ExportConfig(quantize="int8")
        )
    with pytest.raises(UserError, match="--quantize, --weighting and --lexical-dims are for the model2vec"):
        export_vectors(
            bert_vectors, Format.WORD2VEC, tmp_path / "v.txt", config=ExportConfig(weighting="sif")
        )
    with pytest.raises(
        UserError, match=f"--dims 999: the table has {bert_vectors.dim} dimensions; use --dims"
    ):
        export_vectors(bert_vectors, Format.MODEL2VEC, tmp_path / "m", config=ExportConfig(dims=999))
    assert not any(tmp_path.iterdir())


def test_export_command_quantizes_reduces_and_weighs(tmp_path, cli_main, bert_vectors):
    src = bert_vectors.save(tmp_path / "v")
    args = ["export", src, "--format", "model2vec", "--no-eval", "--out", tmp_path / "m"]
    code, _, err = cli_main(*args, "--quantize", "int8", "--dims", "8", "--weighting", "zipf")
    assert code == 0, err
    texts = texts_of(bert_vectors)
    want = bert_vectors.reduced(8).encode(texts, weighting="zipf")
    assert cosines(TokenBag.load(tmp_path / "m").encode(texts), want).min() > 0.98
    assert json.loads((tmp_path / "m" / "config.json").read_text())["apply_pca"] == 8
    code, _, err = cli_main(*args[:-1], tmp_path / "n", "--dims", "-1")
    assert code == 2 and err.count("\n") == 1 and "--dims -1 must be 0 (keep all) or more" in err
    code, _, err = cli_main(*args[:-1], tmp_path / "n", "--dims", "1024")
    want = f"--dims 1024: the table has {bert_vectors.dim} dimensions; use --dims {bert_vectors.dim} or less"
    assert code == 2 and err.count("\n") == 1 and want in err


def test_too_many_dims_is_answered_in_the_callers_spelling_with_the_fix(tmp_path, bert_vectors):
    from ctx2static.api import export

    want = f"dims=1024: the table has {bert_vectors.dim} dimensions; use dims={bert_vectors.dim} or less"
    with pytest.raises(UserError, match=want):
        export(bert_vectors, "model2vec", tmp_path / "m", score=False, dims=1024)
    assert not (tmp_path / "m").exists()


def test_api_export_takes_the_options_as_keywords(tmp_path, bert_vectors):
    from ctx2static.api import export

    out = export(bert_vectors, "model2vec", tmp_path / "m", score=False, quantize="float16", dims=4)
    assert load_file(out / "model.safetensors")["embeddings"].shape[1] == 4
    with pytest.raises(UserError, match=r"unknown option 'dim' \(did you mean 'dims'\?\); the options are"):
        export(bert_vectors, "model2vec", tmp_path / "n", score=False, dim=4)


NEW_WORD = "unbelievableness"


def test_add_words_makes_a_composed_word_known_to_gensim(bert_vectors, tmp_path, cli_main):
    """A word `Vectors.query` composes is a row of the word2vec file gensim reads after --add-words."""
    gensim = pytest.importorskip("gensim")
    assert bert_vectors.row_of(NEW_WORD) is None
    src = bert_vectors.save(tmp_path / "v")
    (tmp_path / "words.txt").write_text(f"{NEW_WORD}\n\n{bert_vectors.words[0]}\n")
    code, _, err = cli_main("export", src, "--format", "word2vec", "-o", tmp_path / "e.txt",
                            "--add-words", tmp_path / "words.txt")  # fmt: skip
    assert code == 0, err
    assert f"{len(bert_vectors):,} words + 1 composed x" in err
    kv = gensim.models.KeyedVectors.load_word2vec_format(tmp_path / "e.txt")
    assert len(kv) == len(bert_vectors) + 1
    np.testing.assert_allclose(kv[NEW_WORD], bert_vectors.query([NEW_WORD])[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fmt", FOLDERS)
def test_add_words_are_whole_tokens_of_the_folders(bert_vectors, tmp_path, fmt):
    from ctx2static.api import export

    out = export(bert_vectors, fmt, tmp_path / "m", score=False, add_words=[NEW_WORD], normalize=False)
    bag = TokenBag.load(out)
    assert len(bag.tokenizer.encode(NEW_WORD, add_special_tokens=False).ids) == 1
    np.testing.assert_allclose(bag.encode([NEW_WORD])[0], bert_vectors.query([NEW_WORD])[0], rtol=1e-5)


def test_add_words_without_a_composer_is_one_line_naming_compose(tmp_path, cli_main):
    src = Vectors(["king", "queen"], np.eye(2, dtype=np.float32)).save(tmp_path / "v.txt")
    (tmp_path / "words.txt").write_text("king\nriverbank\n")
    code, _, err = cli_main("export", src, "--format", "word2vec", "-o", tmp_path / "e.txt",
                            "--add-words", tmp_path / "words.txt")  # fmt: skip
    assert code == 2 and err.count("\n") == 1, err
    assert err.strip() == (
        f"error: --add-words: {src} lacks 1 of the words (first 'riverbank') and has no composer to make "
        f"them; give it one: ctx2static compose {src} --cache DIR --out NEW"
    )
    assert not (tmp_path / "e.txt").exists()
    (tmp_path / "words.txt").write_text("king\nriver bank\n")
    code, _, err = cli_main("export", src, "--format", "word2vec", "-o", tmp_path / "e.txt",
                            "--add-words", tmp_path / "words.txt")  # fmt: skip
    assert (
        code == 2
        and err.strip() == f"error: {tmp_path / 'words.txt'}: line 2 holds 2 words; write one word a line"
    )


def test_add_words_beyond_memory_are_refused_before_anything_is_composed(
    bert_vectors, tmp_path, cli_main, monkeypatch
):
    from ctx2static import memory

    src = bert_vectors.save(tmp_path / "v")
    (tmp_path / "words.txt").write_text("".join(f"zq{i}x\n" for i in range(3000)))
    monkeypatch.setattr(memory, "available_bytes", lambda: 100_000)  # 100 kB left
    monkeypatch.setattr(Vectors, "with_composed", lambda *_: pytest.fail("composed before the check"))
    code, _, err = cli_main("export", src, "--format", "word2vec", "-o", tmp_path / "e.txt",
                            "--add-words", tmp_path / "words.txt")  # fmt: skip
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: --add-words (3,000 words to compose into {src}'s table) needs about ")
    assert err.strip().endswith("available: add fewer words, or export fewer columns (--dims)")
    assert not (tmp_path / "e.txt").exists()


def test_composed_rows_are_written_into_one_table_a_chunk_at_a_time(bert_vectors, monkeypatch):
    import ctx2static.vectors.table as vectors_module

    words = [f"zq{i}x" for i in range(50)] + [bert_vectors.words[0]]
    whole = np.concatenate([np.asarray(bert_vectors.matrix), bert_vectors.query(words[:50])])
    monkeypatch.setattr(vectors_module, "COMPOSE_CHUNK", 7)
    got = bert_vectors.with_composed(words)
    assert got.words == [*bert_vectors.words, *words[:50]]
    np.testing.assert_array_equal(got.matrix, whole)


def test_export_says_it_evaluates_for_the_model_card(bert_vectors, tmp_path, cli_main):
    """The export's slow step is announced before it runs, with the flag that skips it."""
    src = bert_vectors.save(tmp_path / "v")
    code, _, err = cli_main("export", src, "--format", "model2vec", "-o", tmp_path / "m")
    lines = err.strip().splitlines()
    assert code == 0 and lines[0] == "evaluating for the model card (--no-eval, or score=False, skips it)..."
    assert lines[1].startswith("evaluated for the model card in ")
    code, _, err = cli_main("export", src, "--format", "model2vec", "-o", tmp_path / "n", "--no-eval")
    assert code == 0 and "for the model card" not in err, err
