"""Lexical dimensions (transforms/lexical.py, (L1)): a shared rare word raises two texts' cosine."""

import numpy as np
import pytest
from tokenizers import Tokenizer
from tokenizers.models import WordPiece
from tokenizers.pre_tokenizers import Whitespace

from ctx2static.composer import Composer
from ctx2static.errors import OptionError
from ctx2static.export import ExportConfig, Format, export_vectors
from ctx2static.transforms.lexical import identity_rows, with_lexical
from ctx2static.vectors import Vectors

WORDS = ["the", "match", "club", "hamburg", "cologne"]
COUNTS = np.array([1000, 50, 40, 2, 2])


def semantic_twins() -> Vectors:
    """Two club names with the same meaning row: only their identity can tell them apart."""
    matrix = np.array([[1, 0, 0], [0, 2, 0], [0, 1.8, 0.4], [0, 1, 1], [0, 1, 1]], dtype=np.float32)
    return Vectors(list(WORDS), matrix, COUNTS.copy())


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_rows_are_the_equation_the_table_plus_each_words_sif_weighted_identity():
    v = semantic_twins()
    out = with_lexical(v, dims=64, weight=0.5, sif_a=1e-3)
    assert out.dim == 3 + 64
    np.testing.assert_array_equal(out.matrix[:, :3], v.matrix)
    p = COUNTS / COUNTS.sum()
    mu = np.median(np.linalg.norm(v.matrix, axis=1))
    want = identity_rows(WORDS, 64) * (0.5 * mu * 1e-3 / (1e-3 + p))[:, None]
    np.testing.assert_allclose(out.matrix[:, 3:], want, rtol=1e-5)
    assert out.meta["lexical"] == {"dims": 64, "weight": 0.5, "weighting": "sif", "sif_a": 1e-3, "of": 3}


def test_identity_depends_on_the_spelling_alone():
    a, b = identity_rows(["hamburg", "cologne"], 256), identity_rows(["cologne"], 256)
    np.testing.assert_array_equal(a[1], b[0])
    assert abs(float(a[0] @ a[1])) < 0.25  # distinct words: nearly orthogonal
    assert np.linalg.norm(a, axis=1) == pytest.approx([1, 1], abs=0.2)


def test_a_shared_rare_word_decides_between_two_texts_of_the_same_meaning():
    v = semantic_twins()
    query, right, wrong = ["hamburg match"], ["the club hamburg"], ["the club cologne"]
    plain = [v.encode(t)[0] for t in (query, right, wrong)]
    assert cos(plain[0], plain[1]) == pytest.approx(cos(plain[0], plain[2]), abs=1e-6)
    margins = []
    for weight in (1.0, 2.0):
        lex = with_lexical(v, dims=256, weight=weight, sif_a=1e-3)
        q, r, w = (lex.encode(t)[0] for t in (query, right, wrong))
        margins.append(cos(q, r) - cos(q, w))
    assert 0.01 < margins[0] < margins[1]  # the weight sets the identity's share of the cosine
    # a shared frequent word counts for almost nothing: its weight a / (a + p) is small
    assert abs(cos(*lex.encode(["the", "the"])[:, 3:]) - 1) < 1e-6
    assert np.linalg.norm(lex["the"][3:]) < 0.01 * np.linalg.norm(lex["hamburg"][3:])


def test_an_unseen_words_pieces_carry_their_identity_and_the_folder_encodes_as_the_vectors():
    tok = Tokenizer(WordPiece({"[UNK]": 0, "zy": 1, "##x": 2, "zz": 3}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    v = semantic_twins()
    v.composer = Composer(
        np.array([[0, 0, 0], [2, 2, 0], [0, 2, 2], [1, 1, 1]], np.float16), tok.to_str(), True
    )
    lex = with_lexical(v, dims=32, weight=1.0, sif_a=1e-3)
    np.testing.assert_allclose(
        lex.composer.rows[1:3, 3:].astype(np.float32),
        identity_rows(["zy", "##x"], 32) * np.median(np.linalg.norm(v.matrix, axis=1)),
        rtol=2e-3,
        atol=2e-3,
    )
    np.testing.assert_allclose(
        lex.query(["zyx"])[0], lex.composer.rows[1:3].astype(np.float32).mean(0), rtol=1e-6
    )


def test_export_adds_them_to_a_folder_after_the_pca(tmp_path):
    pytest.importorskip("model2vec")
    from model2vec import StaticModel

    v = semantic_twins()
    out = export_vectors(v, Format.MODEL2VEC, tmp_path / "m", config=ExportConfig(dims=2, lexical_dims=16))
    model = StaticModel.from_pretrained(out)
    texts = ["the club hamburg", "cologne match"]
    config = ExportConfig(dims=2, lexical_dims=16)
    want = with_lexical(v.reduced(2), 16, config.lexical_weight, config.sif_a).encode(texts)
    np.testing.assert_allclose(model.encode(texts), want, rtol=1e-5, atol=1e-6)
    assert "lexical dimensions | the last 16 of 18" in (out / "README.md").read_text()


def test_bad_settings_are_one_line(tmp_path):
    v = semantic_twins()
    with pytest.raises(OptionError, match=r"lexical.dims.0"):
        with_lexical(v, dims=0, weight=1.0, sif_a=1e-3)
    with pytest.raises(OptionError, match="already carry 8 lexical"):
        with_lexical(with_lexical(v, dims=8, weight=1.0, sif_a=1e-3), dims=8, weight=1.0, sif_a=1e-3)
    with pytest.raises(OptionError, match="lexical.dims are for the model2vec"):
        export_vectors(v, Format.WORD2VEC, tmp_path / "v.txt", config=ExportConfig(lexical_dims=8))
