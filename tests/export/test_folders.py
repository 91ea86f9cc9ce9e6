"""Model2Vec and sentence-transformers folders: they load in those libraries and encode our vectors."""

import json

import numpy as np
import pytest

from ctx2static.export import Card, ExportConfig, Format, export_vectors
from ctx2static.students.registry import fit_cache_student
from ctx2static.vectors import Vectors

FOLDERS = [Format.MODEL2VEC, Format.SENTENCE_TRANSFORMERS]
RAW = ExportConfig(normalize=False)  # the mean itself, comparable with the rows
WORDPIECE = ExportConfig(normalize=False, tokens="wordpiece")


def load_and_encode(fmt, path, texts):
    if fmt is Format.MODEL2VEC:
        model2vec = pytest.importorskip("model2vec")
        return model2vec.StaticModel.from_pretrained(path).encode(texts)
    st = pytest.importorskip("sentence_transformers")
    return st.SentenceTransformer(str(path), device="cpu").encode(texts)


@pytest.fixture(scope="module")
def bert_vectors(tiny_caches) -> Vectors:
    return fit_cache_student("ase", tiny_caches["bert"])


@pytest.mark.parametrize("fmt", FOLDERS)
def test_word_table_encodes_words_and_sentences(tmp_path, fmt):
    v = Vectors(["the", "cat", "don't", ","], np.arange(12, dtype=np.float32).reshape(4, 3) + 1)
    out = export_vectors(v, fmt, tmp_path / "m", config=RAW)
    got = load_and_encode(fmt, out, ["cat", "The cat, don't zebra"])
    np.testing.assert_allclose(got[0], v["cat"], rtol=1e-6)
    known = np.mean([v[w] for w in ["the", "cat", ",", "don't"]], axis=0)
    # Model2Vec drops the unknown word; sentence-transformers averages its zero row in
    want = known if fmt is Format.MODEL2VEC else known * 4 / 5
    np.testing.assert_allclose(got[1], want, rtol=1e-6)


@pytest.mark.parametrize("fmt", FOLDERS)
def test_a_wordpiece_composer_exports_table_words_whole_and_composes_the_rest(tmp_path, fmt, bert_vectors):
    from ctx2static.export.tokens import marked

    v = bert_vectors
    out = export_vectors(v, fmt, tmp_path / "m", config=RAW)
    tok = json.loads((out / "tokenizer.json").read_text())
    assert tok["model"]["type"] == "WordPiece" and "cat" in tok["model"]["vocab"]
    assert marked("cat") in {t["content"] for t in tok["added_tokens"]}  # the word apart from the piece
    words = ["cat", "unbelievably", "river", "mat"]
    # "catsed" is no table word: its pieces (cat ##s ##ed) take their composer rows, though "cat" is
    # also a word of the table, as Vectors.query composes it
    got = load_and_encode(fmt, out, [*words, "unsed", "catsed", "The Cat"])
    np.testing.assert_allclose(got[:6], v.query([*words, "unsed", "catsed"]), rtol=1e-5, atol=1e-6)
    rows = v.composer.rows.astype(np.float32)
    ids = [tok["model"]["vocab"][p] for p in ("cat", "##s", "##ed")]
    np.testing.assert_allclose(got[5], rows[ids].mean(0), rtol=1e-5, atol=1e-6)
    assert not np.allclose(got[5], (v["cat"] + rows[ids[1:]].sum(0)) / 3, atol=1e-3)
    np.testing.assert_allclose(got[6], (v["the"] + v["cat"]) / 2, rtol=1e-5, atol=1e-6)
    card = (out / "README.md").read_text()
    assert "pieces tokens" in card and "teacher's tokenizer" in card


@pytest.mark.parametrize("fmt", FOLDERS)
def test_a_wordpiece_composer_puts_table_words_in_the_wordpiece_vocabulary(tmp_path, fmt, bert_vectors):
    """The table's words join the teacher's WordPiece vocabulary (as Model2Vec's distill adds words):
    a table word is its row; any other word is split by longest match over the teacher's pieces and
    the table's words, a piece spelt as a table word taking the word's row."""
    v = bert_vectors
    out = export_vectors(v, fmt, tmp_path / "m", config=WORDPIECE)
    tok = json.loads((out / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    assert tok["model"]["type"] == "WordPiece" and all(w in vocab for w in v.words if w.isalpha())
    assert all(t["special"] for t in tok["added_tokens"])  # no word is an added token
    words = ["cat", "unbelievably", "river", "mat"]
    got = load_and_encode(fmt, out, [*words, "unsed", "catsed", "The Cat"])
    # "unsed": none of its pieces (un ##s ##ed) is a table word, so it is composed as Vectors.query does
    np.testing.assert_allclose(got[:5], v.query([*words, "unsed"]), rtol=1e-5, atol=1e-6)
    rows = v.composer.rows.astype(np.float32)
    ids = [vocab[p] for p in ("##s", "##ed")]
    # "catsed": longest match "cat", a table word, then the teacher's ##s ##ed
    np.testing.assert_allclose(got[5], (v["cat"] + rows[ids].sum(0)) / 3, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[6], (v["the"] + v["cat"]) / 2, rtol=1e-5, atol=1e-6)
    card = (out / "README.md").read_text()
    assert "pieces tokens" in card and "WordPiece vocabulary" in card


@pytest.mark.parametrize("fmt", FOLDERS)
def test_a_wordpiece_folder_cuts_a_word_where_the_teachers_pre_tokenizer_does(tmp_path, fmt, bert_vectors):
    """A table word with an inner hyphen is no token: the teacher's pre-tokenizer cuts it, and its
    parts read as any words do (the tiny vocabulary lacks "-": its unknown token, which Model2Vec
    leaves out and sentence-transformers averages in)."""
    v = bert_vectors
    rng = np.random.default_rng(2)
    rows = np.vstack([v.matrix, rng.normal(size=(1, v.dim))])
    joined = Vectors([*v.words, "cat-dog"], rows, None, v.meta, v.composer)
    out = export_vectors(joined, fmt, tmp_path / "m", config=WORDPIECE)
    unknown = v.composer.rows[v.composer.token_ids(["-"])[0][0]].astype(np.float32)
    parts = [v["cat"], v["dog"]] if fmt is Format.MODEL2VEC else [v["cat"], unknown, v["dog"]]
    got = load_and_encode(fmt, out, ["cat-dog"])
    np.testing.assert_allclose(got[0], np.mean(parts, axis=0), rtol=1e-5, atol=1e-6)
    assert "Not tokens (1 of the table's words)" in (out / "README.md").read_text()


def test_wordpiece_tokens_need_a_wordpiece_teacher(tmp_path, tiny_caches):
    from ctx2static.errors import UserError

    v = fit_cache_student("ase", tiny_caches["gpt2"])
    with pytest.raises(UserError, match="the teacher's tokenizer is BPE, not WordPiece; use --tokens marked"):
        export_vectors(v, Format.MODEL2VEC, tmp_path / "m", config=WORDPIECE)
    assert not (tmp_path / "m").exists()


def test_wordpiece_tokens_without_a_composer_are_refused_not_ignored(tmp_path):
    from ctx2static.errors import UserError

    v = Vectors(["cat", "dog"], np.eye(2, dtype=np.float32))
    with pytest.raises(UserError, match=r"--tokens wordpiece: these vectors have no composer"):
        export_vectors(v, Format.MODEL2VEC, tmp_path / "m", config=WORDPIECE)
    assert not (tmp_path / "m").exists()


def _pieces_vectors(tokenizer) -> Vectors:
    """Random table rows for a few words and random composer rows for every piece of ``tokenizer``."""
    from ctx2static.composer import Composer

    rng = np.random.default_rng(0)
    words = ["the", "cat", "sat", "on", "mat", "dog", "at", "a"]  # "at", "a": pieces of "cats" too
    spec = tokenizer.backend_tokenizer.to_str()
    rows = rng.normal(size=(len(tokenizer), 8)).astype(np.float16)
    return Vectors(words, rng.normal(size=(len(words), 8)), composer=Composer(rows, spec, lowercase=True))


PIECES_TEXTS = ["the cat", "The Cat sat.", "bread", "the breads sat on a doormat", "dogs cats.", "cats at a"]


def _bag_mean(v: Vectors, text: str) -> np.ndarray:
    """The documented encoding: a table word its row; any other word its teacher pieces (encoded
    alone), each its composer row, a piece spelt as a word of the table too."""
    from ctx2static.words import tokenize

    assert v.composer is not None
    terms = []
    for word in tokenize(text, True):
        if word in v:
            terms.append(v[word])
            continue
        terms += [v.composer.rows[piece].astype(np.float32) for piece in v.composer.token_ids([word])[0]]
    return np.mean(terms, axis=0)


@pytest.mark.parametrize("fmt", FOLDERS)
@pytest.mark.parametrize("teacher", ["gpt2", "gemma", "unigram"])
def test_a_bpe_or_unigram_composer_exports_the_teachers_pieces(tmp_path, tiny_caches, teacher, fmt):
    """A word of the table is its row; any other word is encoded alone by the teacher's tokenizer,
    its pieces' composer rows averaged in, as ``Vectors.encode`` composes it."""
    from tests import tiny_models as tm

    if teacher == "gpt2":  # byte-level BPE (Ġ), from a real cache
        v = fit_cache_student("ase", tiny_caches["gpt2"])
    else:  # SentencePiece BPE with ▁ for spaces (Gemma's own class), and a Metaspace unigram
        v = _pieces_vectors(tm.gemma_tokenizer() if teacher == "gemma" else tm.unigram_tokenizer())
    assert v.composer is not None
    out = export_vectors(v, fmt, tmp_path / "m", config=RAW)
    assert "teacher's tokenizer" in (out / "README.md").read_text()
    got = load_and_encode(fmt, out, PIECES_TEXTS)
    v.composer.token_ids(["x"])  # parses its tokenizer
    want = np.stack([_bag_mean(v, text) for text in PIECES_TEXTS])
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(got[0], (v["the"] + v["cat"]) / 2, rtol=1e-5, atol=1e-6)
    assert np.abs(got[2]).max() > 0  # a word outside the table: its pieces, not a zero row


def test_card_header_provenance_and_evaluation():
    meta = {
        "teacher": "minilm",
        "student": "x2static",
        "config": {"epochs": 1},
        "corpus": ["/data/brown.txt.xz"],
        "corpus_config": {"lowercase": True},
        "retrofit": [{"method": "faruqui", "lexicons": ["/x/wordnet.txt"]}],
    }
    v = Vectors(["a", "b"], np.eye(2), meta=meta)
    card = Card.of(v, "| benchmark | metric | v |\n|---|---|---:|\n| ws353 | spearman | 70.0 (100%) |\n")
    head = card.header("model2vec").splitlines()
    assert head[0] == head[-1] == "---"
    assert 'base_model: "sentence-transformers/all-MiniLM-L6-v2"' in head and "license: apache-2.0" in head
    assert "library_name: model2vec" in head and "- static-embeddings" in head
    rows = dict(card.provenance())
    assert rows["corpus"] == "brown.txt.xz (lower-cased)" and rows["student"] == "`x2static`"
    assert rows["options"] == '`{"epochs": 1}`' and rows["retrofitted"] == "faruqui to wordnet.txt"
    assert rows["vocabulary"] == "2 words, 2 dimensions"
    unknown = Card.of(Vectors(["a"], np.eye(1), meta={"teacher": "/local/model"}))
    assert unknown.base_model() is None and unknown.license() is None
    gemma = Card.of(Vectors(["a"], np.eye(1), meta={"teacher": "gemma3"})).header("model2vec").splitlines()
    assert 'base_model: "google/gemma-3-270m"' in gemma and "license: gemma" in gemma
    assert "base_model" not in unknown.header("model2vec")
    assert Card.of(Vectors(["a"], np.eye(1), meta={"teacher": "org/model"})).base_model() == "org/model"


@pytest.mark.parametrize("fmt", ["model2vec", "sentence-transformers"])
def test_export_command_writes_the_card_with_the_evaluation_table(tmp_path, cli_main, bert_vectors, fmt):
    src = bert_vectors.save(tmp_path / "v")
    code, _, err = cli_main("export", src, "--format", fmt, "--out", tmp_path / "m")
    assert code == 0, err
    card = (tmp_path / "m" / "README.md").read_text()
    assert card.startswith(f"---\nlibrary_name: {fmt}\n")
    assert "| ws353 | spearman |" in card and "every word (unknown: composed)" in card
    assert "| student | `ase` |" in card and "| teacher | `" in card
    # the sentence sets encode texts, unknown words composed: their rows fill the composed column only
    mean = next(line for line in card.splitlines() if line.startswith("| sentences-mean |"))
    assert mean.split(" | ")[-2] == "-" and float(mean.split(" | ")[-1].split()[0]) > 0, mean
    assert "sentences, labelled sets: standardised vectors" in card
    code, _, err = cli_main("export", src, "--format", fmt, "--out", tmp_path / "n", "--no-eval")
    assert code == 0, err
    assert "Not evaluated at export" in (tmp_path / "n" / "README.md").read_text()


def test_a_core_install_cards_without_the_sentence_sets(tmp_path, cli_main, monkeypatch):
    """Without scikit-learn (extra ``downstream``) the card keeps its word sets, no sentence rows."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sklearn" else real(name, *a)
    )
    rng = np.random.default_rng(0)
    words = ["the", "cat", "dog", "car", "automobile", "tiger"]
    src = Vectors(words, rng.normal(size=(len(words), 4)).astype(np.float32)).save(tmp_path / "v")
    code, _, err = cli_main("export", src, "--format", "model2vec", "--out", tmp_path / "m")
    assert code == 0, err
    card = (tmp_path / "m" / "README.md").read_text()
    assert "| simlex999 | spearman |" in card and "sentences" not in card


def test_the_card_scores_the_users_sentence_files_where_asked(tmp_path, cli_main, monkeypatch):
    """An STS file and a retrieval file of the user's: their rows in the card; without scikit-learn
    too (no probe), while a labelled file then is one line before anything is written."""
    import importlib.util

    words = ["cat", "dog", "car", "bus"]
    v = Vectors(words, np.array([[1, 0.1], [0.9, 0.2], [0.1, 1], [0.2, 0.9]], dtype=np.float32))
    src = v.save(tmp_path / "v.txt")
    (tmp_path / "sts.tsv").write_text("5\tcat\tdog\n0\tcat\tcar\n4\tcar\tbus\n")
    (tmp_path / "search.tsv").write_text("query\tdocument\ncat\tdog\ncar\tbus\n")
    (tmp_path / "topics.tsv").write_text("".join(f"{y}\t{w}\n" for y, w in [("a", "cat"), ("b", "car")] * 5))
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sklearn" else real(name, *a)
    )
    own = ["--card-sentences", tmp_path / "sts.tsv", "--card-sentences", tmp_path / "search.tsv"]
    code, _, err = cli_main("export", src, "--format", "model2vec", "--out", tmp_path / "m", *own)
    assert code == 0, err
    card = (tmp_path / "m" / "README.md").read_text()
    assert "| sts | spearman (cosine) | " in card and "| search-mrr | MRR (cosine) | 100.0 (100%) |" in card
    code, _, err = cli_main(
        "export",
        src,
        "--format",
        "model2vec",
        "--out",
        tmp_path / "n",
        "--card-sentences",
        tmp_path / "topics.tsv",
    )
    assert code != 0 and "--card-sentences: a labelled set is scored by a probe" in err
    assert not (tmp_path / "n").exists()


def test_the_folders_word_marks_cut_text_where_the_corpus_reader_does():
    """The normalizer's marks (Oniguruma) fall where :data:`TOKEN` (Python's re) cuts, on text of
    joiners, punctuation runs, digits, combining marks and scripts where the two dialects' \\w differ."""
    import random
    import unicodedata

    from tokenizers import normalizers

    from ctx2static.export.tokens import WORD_END, WORD_START, marked, word_marks
    from ctx2static.words import TOKEN

    marks = normalizers.Sequence(word_marks())
    # all but ▁, which the folder reads as a SentencePiece normalizer's space
    pool = [
        chr(c) for c in range(0x20, 0x3000) if unicodedata.category(chr(c))[0] in "LMNPSZ" and c != 0x2581
    ]
    common = list("ab9 -'’.,!_é\t") * 20
    rng = random.Random(0)
    texts = ["In 2009, the TFG's half-brothers -- don't ...!? (1981-1987) a-'b x- -y"]
    texts += ["".join(rng.choice(pool + common) for _ in range(rng.randint(1, 12))) for _ in range(20000)]
    for text in texts:
        want = "".join(f"{WORD_START}{w}{WORD_END}" for w in TOKEN.findall(text))
        got = "".join(marks.normalize_str(text).split()).replace(WORD_START + WORD_END, "")
        assert got == want, text
    assert marks.normalize_str(marked("don't")) == WORD_START + "don't" + WORD_END  # a token's own text
