"""The downstream probes on synthetic tasks whose answer is known, the tag maps, the entity scorer."""

import numpy as np
import pytest

from ctx2static.eval.downstream.data import LabelledTexts, TaggedSentences
from ctx2static.eval.downstream.probes import ProbeConfig, encode, folds, mean_features, window_features
from ctx2static.eval.downstream.tagsets import (
    BROWN_UNIVERSAL,
    UNIVERSAL,
    brown_base,
    brown_universal,
    ptb_universal,
)
from ctx2static.eval.downstream.tasks import (
    NerTask,
    PosTask,
    SentimentTask,
    brown_split,
    entities,
    entity_f1,
    evaluate_downstream,
)
from ctx2static.eval.results import Score
from ctx2static.vectors import Vectors

CONFIG = ProbeConfig(pos_stride=1, ner_folds=3, sentiment_folds=5)
BROWN_TAGS = ("nn", "vb", "jj", "at")  # NOUN, VERB, ADJ, DET


def _vectors(words, labels, classes, informative, dim=12, seed=0):
    """Vectors whose first dims one-hot the word's class (informative), or Gaussian noise only."""
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((len(words), dim)).astype(np.float32)
    if informative:
        m *= 0.1
        m[np.arange(len(words)), [classes.index(c) for c in labels]] += 1.0
    return Vectors(list(words), m)


def _brown_like(seed=0, per_file=40, length=6):
    """Brown-like files ca01..ca10; each word's tag is fixed and no word occurs in two files.

    Test files (ca05, ca10) hold only words never seen in training, so only the vectors can tell
    their tags.
    """
    rng = np.random.default_rng(seed)
    docs, words, tags, lexicon = [], [], [], {}
    for f in range(1, 11):
        for _ in range(per_file):
            t = [BROWN_TAGS[i] for i in rng.integers(0, 4, length)]
            w = [f"{tag}{f}x{rng.integers(0, 15)}" for tag in t]
            lexicon.update(zip(w, t, strict=True))
            docs.append(f"ca{f:02d}")
            words.append(w)
            tags.append(t)
    return TaggedSentences("pos-brown", docs, words, tags), lexicon


@pytest.mark.parametrize("informative", [True, False])
def test_window_tagger_is_perfect_with_label_vectors_and_at_chance_with_random_ones(informative):
    data, lexicon = _brown_like()
    vectors = _vectors(lexicon, lexicon.values(), BROWN_TAGS, informative)
    (score,) = evaluate_downstream(vectors, PosTask(data), CONFIG)
    assert score.family == "downstream" and score.metric == "accuracy (universal tags)"
    assert (score.covered, score.total) == (2 * 40 * 6, 2 * 40 * 6)  # the test files' tokens
    if informative:
        assert score.score > 97.0
    else:
        assert 10.0 < score.score < 42.0  # 4 balanced tags: chance is 25
    assert score.std is not None and score.std >= 0.0


def test_pos_scores_are_reproducible_and_oov_tokens_lower_coverage():
    data, lexicon = _brown_like(seed=1)
    known = {w: t for w, t in lexicon.items() if not w.endswith("x0")}  # drop some test and train words
    vectors = _vectors(known, known.values(), BROWN_TAGS, True)
    first = evaluate_downstream(vectors, PosTask(data), CONFIG)
    assert first == evaluate_downstream(vectors, PosTask(data), CONFIG)
    test_tokens = [w for d, s in zip(data.docs, data.words, strict=True) if d in ("ca05", "ca10") for w in s]
    assert first[0].covered == sum(w in known for w in test_tokens) < first[0].total == len(test_tokens)


def test_brown_split_is_by_file_number():
    parts = brown_split(["ca01", "ca02", "ca05", "cb10", "cr09", "cj71", "cm06"])
    assert parts.tolist() == [-2, 0, -1, -1, 2, -2, -2]


def test_folds_are_fixed_and_balanced():
    assert folds(7, 3).tolist() == [0, 1, 2, 0, 1, 2, 0]
    assert np.array_equal(folds(1000, 10), folds(1000, 10))


@pytest.mark.parametrize("informative", [True, False])
def test_sentiment_is_perfect_with_polarity_vectors_and_at_chance_with_random_ones(informative):
    # every word occurs in one text only, so only the vectors can carry the label to the test fold
    rng = np.random.default_rng(3)
    labels = ["pos" if i % 2 else "neg" for i in range(400)]
    texts = [" ".join(f"{lab}{i}w{j}" for j in range(4)) for i, lab in enumerate(labels)]
    words = [w for t in texts for w in t.split()]
    vectors = _vectors(words, [w[:3] for w in words], ["pos", "neg"], informative, seed=int(rng.integers(9)))
    (score,) = evaluate_downstream(vectors, SentimentTask(LabelledTexts("toy", texts, labels)), CONFIG)
    assert (score.benchmark, score.metric, score.covered, score.total) == ("toy", "accuracy", 1600, 1600)
    if informative:
        assert score.score > 99.0
    else:
        assert 38.0 < score.score < 62.0


def test_ner_finds_entities_that_the_vectors_mark():
    rng = np.random.default_rng(4)
    words, tags = [], []
    for i in range(150):
        w = [f"o{i}_{j}" for j in range(5)]
        t = ["O"] * 5
        start = int(rng.integers(0, 4))
        w[start], w[start + 1] = f"p{i}a", f"p{i}b"
        t[start], t[start + 1] = "B-person", "I-person"
        words.append(w)
        tags.append(t)
    lexicon = {w: t for ws, ts in zip(words, tags, strict=True) for w, t in zip(ws, ts, strict=True)}
    vectors = _vectors(lexicon, lexicon.values(), ["O", "B-person", "I-person"], True)
    (score,) = evaluate_downstream(
        vectors, NerTask(TaggedSentences("toy-ner", [""] * 150, words, tags)), CONFIG
    )
    assert score.metric.startswith("entity F1") and score.score > 97.0


def test_entities_follow_conlleval():
    tags = ["B-per", "I-per", "O", "I-loc", "I-loc", "B-loc", "I-per", "B-org"]
    assert entities(tags) == {(0, 2, "per"), (3, 5, "loc"), (5, 6, "loc"), (6, 7, "per"), (7, 8, "org")}
    gold = ["B-per", "I-per", "O", "B-loc"]
    assert entity_f1(gold, ["B-per", "I-per", "O", "O"]) == pytest.approx(2 * 1 / 3)  # P = 1, R = 1/2
    assert entity_f1(gold, ["B-per", "O", "O", "B-loc"]) == pytest.approx(0.5)  # the cut entity is wrong
    assert entity_f1(["O"], ["O"]) == 0.0


@pytest.mark.parametrize(
    ("tag", "universal"),
    [
        ("np-tl", "NOUN"),
        ("np$", "NOUN"),
        ("nns-hl", "NOUN"),
        ("pps+bez", "PRON"),
        ("pp$", "PRON"),
        ("bez*", "VERB"),
        ("md*", "VERB"),
        ("*", "ADV"),
        ("ql", "ADV"),
        ("fw-nn", "X"),
        ("at", "DET"),
        ("abn", "DET"),
        ("wdt", "DET"),
        ("cs", "ADP"),
        ("to", "PRT"),
        ("rp", "PRT"),
        ("od", "ADJ"),
        ("ap", "ADJ"),
        ("cd", "NUM"),
        ("cc", "CONJ"),
        ("``", "."),
        ("--", "."),
        ("nil", "X"),
        ("vbn-tl-hl", "VERB"),
    ],
)
def test_brown_tags_map_to_universal(tag, universal):
    assert brown_universal(tag) == universal


def test_tag_tables_use_only_universal_tags_and_reject_unknown_tags():
    assert set(BROWN_UNIVERSAL.values()) == set(UNIVERSAL)
    assert brown_base("vb+ppo") == "vb" and brown_base("fw-in+at") == "fw"
    assert [ptb_universal(t) for t in ("NNP", "POS", "MD", "PRP$", "UH", "``")] == [
        "NOUN",
        "PRT",
        "VERB",
        "PRON",
        "X",
        ".",
    ]
    with pytest.raises(KeyError):
        brown_universal("zz")


def test_features_hold_unit_vectors_oov_flags_and_zero_padding():
    v = Vectors(["a", "b"], np.array([[3.0, 4.0], [0.0, -2.0]]))
    enc = encode(v, [["a", "zz", "B"], ["b"]])
    assert enc.found == 3  # "B" is found lower-cased
    x = window_features(enc, np.arange(4), 1)
    # token "zz": [a (0.6, 0.8), flag 0] [zero, flag 1] [b (0, -1), flag 0]
    assert x[1].tolist() == pytest.approx([0.6, 0.8, 0, 0, 0, 1, 0, -1, 0])
    # token "b" alone in its sentence: both neighbours are padding (no vector, no flag)
    assert x[3].tolist() == pytest.approx([0, 0, 0, 0, -1, 0, 0, 0, 0])
    assert mean_features(enc).ravel().tolist() == pytest.approx([0.3, -0.1, 0.0, -1.0])


def test_score_with_std_shows_and_round_trips():
    s = Score("pos-brown", "downstream", "accuracy", 91.234, 90, 100, std=0.456)
    assert s.cell() == "91.2 ±0.5 (90%)"
    assert Score.from_json(s.to_json()) == s
    assert Score("x", "y", "z", 50.0, 1, 1).cell() == "50.0 (100%)"


def test_a_score_on_a_sliver_of_a_large_set_shows_a_coverage_above_zero():
    assert Score("google/semantic", "analogy", "3CosAdd acc", 80.0, 39, 8869).cell() == "80.0 (0.4%)"
    assert Score("big", "analogy", "3CosAdd acc", 80.0, 20, 100_000).cell() == "80.0 (<0.1%)"
    assert Score("big", "analogy", "3CosAdd acc", float("nan"), 0, 100).cell() == "n/a (0%)"


def test_a_score_on_too_few_items_is_na_with_the_count_and_a_note():
    from ctx2static.eval.results import THIN_NOTE, format_text, summary

    thin = Score("rg65", "similarity", "spearman", -100.0, 2, 65)  # two pairs: a Spearman of +-100
    assert thin.cell() == "n/a (2 items)"
    assert Score("rg65", "similarity", "spearman", 70.0, 20, 65).cell() == "70.0 (30%)"
    assert (
        Score("rw", "similarity", "spearman", 50.0, 150, 2034).cell() == "50.0 (7%)"
    )  # few of the set, many
    assert (
        Score("mine", "similarity", "spearman", 50.0, 3, 4).cell() == "50.0 (75%)"
    )  # a small set of one's own
    full = Score("ws353", "similarity", "spearman", 70.0, 353, 353)
    assert np.isnan(summary([full, thin], "avg5", "mean").score)
    assert summary([full, full], "avg5", "mean").score == 70.0
    assert THIN_NOTE in format_text({"v": [full, thin]}) and THIN_NOTE not in format_text({"v": [full]})


def test_a_probe_whose_features_exceed_the_memory_is_refused_naming_the_vectors(monkeypatch):
    from ctx2static import memory
    from ctx2static.errors import UserError

    vecs = Vectors(["a", "b"], np.ones((2, 1000), np.float32))
    enc = encode(vecs, [["a", "b", "c"]] * 100)
    monkeypatch.setattr(memory, "available_bytes", lambda: 1 << 20)
    with pytest.raises(
        UserError, match=r"^a downstream probe on 1,000-dim vectors \(300 tokens x 5,005 features\)"
    ):
        window_features(enc, np.arange(300), 2)
