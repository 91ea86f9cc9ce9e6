"""The sentences family: probes on texts whose answer is known, its readers, the CLI and study wiring."""

import json
import lzma
import sys

import numpy as np
import pytest

from ctx2static.errors import UserError
from ctx2static.eval import Family, load_benchmarks
from ctx2static.eval.downstream.data import LabelledTexts
from ctx2static.eval.sentences import (
    SETS,
    TASKS,
    PairSet,
    RetrievalSet,
    SentenceConfig,
    evaluate_sentences,
    load_sentences,
    ndcg_mrr,
    read_pairs,
    read_sentence_file,
    score_encoder,
)
from ctx2static.study.loader import load_study
from ctx2static.vectors import Vectors


def _labelled(n=200, seed=0):
    """Texts of three words drawn from their label's vocabulary, and vectors whose first dim is the label.

    Every text also holds the word "the", shared by both labels, so only the label words tell them apart.
    """
    rng = np.random.default_rng(seed)
    labels = ["pos" if i % 2 else "neg" for i in range(n)]
    texts = [" ".join([*(f"{y}{rng.integers(0, 30)}" for _ in range(3)), "the"]) for y in labels]
    words = [f"{y}{i}" for y in ("pos", "neg") for i in range(30)] + ["the"]
    m = 0.1 * rng.standard_normal((len(words), 8)).astype(np.float32)
    m[:30, 0] += 1.0
    m[30:60, 0] -= 1.0
    return LabelledTexts("toy", texts, labels), Vectors(words, m)


def test_separable_texts_are_classified_and_shuffled_labels_are_at_chance():
    data, vectors = _labelled()
    (score,) = evaluate_sentences(vectors, data)
    assert (score.family, score.metric, score.covered, score.total) == ("sentences", "accuracy", 200, 200)
    assert score.score == 100.0 and score.std == 0.0
    shuffled = np.random.default_rng(1).permutation(data.labels).tolist()
    (chance,) = evaluate_sentences(vectors, LabelledTexts("toy", data.texts, shuffled))
    assert 30.0 < chance.score < 70.0  # 5 folds of 40 texts: chance is 50 ± a few points


def test_folds_are_fixed_and_a_large_set_is_subsampled_the_same_way_each_time():
    data, vectors = _labelled(n=120)
    shuffled = LabelledTexts("toy", data.texts, np.random.default_rng(2).permutation(data.labels).tolist())
    config = SentenceConfig(max_texts=100)
    first, again = (evaluate_sentences(vectors, shuffled, config)[0] for _ in range(2))
    assert first == again and first.total == 100


def test_pairs_score_the_spearman_of_cosines_over_pairs_with_both_vectors():
    vectors = Vectors(["a", "b", "c"], np.array([[1, 0], [1, 1], [0, 1]], dtype=np.float32))
    # cos(a,a)=1 > cos(a,b)=0.71 > cos(a,c)=0: gold in that order gives 100, reversed -100
    pairs = PairSet("toy", ["a", "a", "a", "zz"], ["a", "b", "c", "a"], [3.0, 2.0, 1.0, 0.0])
    (score,) = evaluate_sentences(vectors, pairs)
    assert (score.metric, score.score, score.covered, score.total) == ("spearman (cosine)", 100.0, 3, 4)
    (reverse,) = evaluate_sentences(vectors, PairSet("toy", pairs.first, pairs.second, [1.0, 2.0, 3.0, 0.0]))
    assert reverse.score == -100.0


def test_any_encoder_is_scored_as_the_vectors_are_under_the_same_folds():
    data, vectors = _labelled(n=120)
    shuffled = LabelledTexts("toy", data.texts, np.random.default_rng(3).permutation(data.labels).tolist())
    config = SentenceConfig(max_texts=100)
    for subject in (data, shuffled):
        (expected,) = evaluate_sentences(vectors, subject, config)
        assert score_encoder(vectors.encode, subject, config) == [expected]
    # an encoder that sees only the label words' first dimension, inverted, still separates the labels
    (flipped,) = score_encoder(lambda texts: -vectors.encode(texts)[:, :1], data, config)
    assert flipped.score == 100.0
    (noise,) = score_encoder(lambda texts: np.random.default_rng(0).random((len(texts), 4)), data, config)
    assert noise.score < 80.0 and noise.total == 100
    pairs = PairSet("toy", ["pos1", "pos1", "pos1"], ["pos2", "the", "neg1"], [3.0, 2.0, 1.0])
    assert score_encoder(vectors.encode, pairs) == evaluate_sentences(vectors, pairs)


def test_retrieval_ranks_every_document_by_cosine_and_scores_ndcg_and_mrr():
    vectors = Vectors(["a", "b", "c", "d"], np.array([[1, 0], [0.8, 0.6], [0, 1], [-1, 0]], dtype=np.float32))
    docs = ["a", "b", "c", "d", "zz"]  # "zz" has no vector: below every document
    # query "a": its document "b" ranks 2nd (a, b, c, d); query "c": "c" 1st; query "d": "a" 4th, "d" 1st
    # query "zz" has no vector: 0 for both
    data = RetrievalSet("toy", ["a", "c", "d", "zz"], docs, [(1,), (2,), (0, 3), (0,)])
    ndcg, mrr = score_encoder(vectors.encode, data)
    assert (ndcg.benchmark, ndcg.metric, ndcg.covered, ndcg.total) == ("toy", "nDCG@10 (cosine)", 3, 4)
    assert (mrr.benchmark, mrr.metric) == ("toy-mrr", "MRR (cosine)")
    ideal2 = 1 + 1 / np.log2(3)
    expected_ndcg = (1 / np.log2(3) + 1 + (1 + 1 / np.log2(5)) / ideal2 + 0) / 4
    assert ndcg.score == pytest.approx(100 * expected_ndcg)
    assert mrr.score == pytest.approx(100 * (1 / 2 + 1 + 1 + 0) / 4)


def test_a_relevant_document_past_the_tenth_place_adds_to_mrr_not_ndcg():
    ndcg, mrr = ndcg_mrr(np.array([True, True]), [np.array([11]), np.array([1])])
    assert ndcg == pytest.approx(0.5) and mrr == pytest.approx((1 / 11 + 1) / 2)


def test_ties_count_against_the_relevant_document():
    vectors = Vectors(["a", "b"], np.array([[1, 0], [1, 0]], dtype=np.float32))
    (_, mrr) = score_encoder(vectors.encode, RetrievalSet("t", ["a"], ["a", "b"], [(0,)]))
    assert mrr.score == 50.0  # "a" and "b" tie: the relevant one is counted second


def test_a_retrieval_file_has_a_header_and_groups_queries_and_documents(tmp_path):
    path = tmp_path / "news.tsv"
    path.write_text("query\tdocument\nq1\tdoc one\nq2\tdoc two\nq1\tdoc two\n")
    assert read_sentence_file(path) == RetrievalSet(
        "news", ["q1", "q2"], ["doc one", "doc two"], [(0, 1), (1,)]
    )
    path.write_text("query\tdocument\nq1\tdoc one\nq2 doc two\n")
    with pytest.raises(UserError, match=r"news.tsv: line 3 is not 'query<TAB>document'; fix or remove"):
        read_sentence_file(path)
    path.write_text("query\tdocument\nq1\tdoc one\nq2\tdoc one\n")
    with pytest.raises(UserError, match="fewer than two documents to rank"):
        read_sentence_file(path)


def _write_xz(path, text):
    path.write_bytes(lzma.compress(text.encode()))
    return path


def test_a_bad_pair_line_is_one_error_naming_file_and_line(tmp_path):
    path = _write_xz(tmp_path / "p.tsv.xz", "0.5\tone text\tanother\nhigh\tone text\tanother\n")
    with pytest.raises(UserError, match=r"p.tsv.xz: line 2 is not 'score<TAB>text<TAB>text' with a finite"):
        read_pairs(path)
    _write_xz(path, "0.5\tonly one text\n")
    with pytest.raises(UserError, match=r"p.tsv.xz: line 1 is not"):
        read_pairs(path)


def _user_file(path, labels, texts):
    """A user's own labelled set: ``label<TAB>text`` lines, plain text."""
    path.write_text("".join(f"{y}\t{t}\n" for y, t in zip(labels, texts, strict=True)))
    return path


def test_a_users_labelled_file_is_scored_as_a_bundled_set_and_named_after_it(tmp_path):
    data, vectors = _labelled()
    topics = ["sport" if y == "pos" else "music" for y in data.labels]  # any labels, not pos/neg
    read = read_sentence_file(_user_file(tmp_path / "my-topics.tsv", topics, data.texts))
    assert isinstance(read, LabelledTexts) and read.name == "my-topics" and read.labels == topics
    (score,) = evaluate_sentences(vectors, read)  # the two labels' words point in opposite directions
    assert (score.benchmark, score.score, score.covered, score.total) == ("my-topics", 100.0, 200, 200)
    shuffled = np.random.default_rng(1).permutation(topics).tolist()
    (chance,) = evaluate_sentences(
        vectors, read_sentence_file(_user_file(tmp_path / "s.tsv", shuffled, data.texts))
    )
    assert 30.0 < chance.score < 70.0


def test_a_users_file_may_hold_more_labels_or_pairs_and_skips_blank_lines(tmp_path):
    three = tmp_path / "three.tsv"
    three.write_text("".join(f"{y}\tword{i}\n" for i in range(5) for y in ("a", "b", "c")) + "\n")
    read = read_sentence_file(three)
    assert isinstance(read, LabelledTexts) and sorted(set(read.labels)) == ["a", "b", "c"]
    pairs = _write_xz(
        tmp_path / "sts.tsv.xz", "4.5\tA cat sits.\tA cat is sitting.\n0\tRain.\tStocks fell.\n"
    )
    expected = PairSet("sts", ["A cat sits.", "Rain."], ["A cat is sitting.", "Stocks fell."], [4.5, 0.0])
    assert read_sentence_file(pairs) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no text in it; write label<TAB>text lines (two labels at least), score<TAB>text<TAB>text"),
        ("\n  \n", "no text in it; write label<TAB>text lines"),
        ("sport\tgoal\n" * 6, "every text has the label 'sport'; a labelled set needs two labels at least"),
        ("sport\tgoal\nmusic song\n", "line 2 has no tab; write label<TAB>text (or score<TAB>text<TAB>text)"),
        ("sport\tgoal\n\tsong\n", "line 2 has an empty label or text; write label<TAB>text"),
        ("sport\tgoal\n" * 6 + "music\tsong\n" * 4,
         "label 'music' has 4 texts, fewer than the 5 folds; give every label 5 texts at least"),
        ("0.5\tone\ttwo\nhigh\tone\ttwo\n",
         "line 2 is not 'score<TAB>text<TAB>text' with a finite score; fix or remove the line"),
    ],
)  # fmt: skip
def test_a_bad_users_file_is_one_error_naming_file_line_and_fix(tmp_path, text, message):
    path = tmp_path / "mine.tsv"
    path.write_text(text)
    with pytest.raises(UserError) as caught:
        read_sentence_file(path)
    assert str(caught.value).startswith(f"{path}: {message}") and "\n" not in str(caught.value)


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    """Every sentence task pointed at two tiny files (one labelled, one of pairs), and matching vectors."""
    data, vectors = _labelled(n=60)
    labelled = _write_xz(
        tmp_path / "l.tsv.xz", "".join(f"{y}\t{t}\n" for y, t in zip(data.labels, data.texts, strict=True))
    )
    pairs = _write_xz(tmp_path / "p.tsv.xz", "3\tpos1 pos2\tpos3\n2\tpos1\tthe\n1\tpos1\tneg1\n")
    for task, (_, labels) in SETS.items():
        pointed = (pairs, None) if labels is None else (labelled, ("pos", "neg"))
        monkeypatch.setitem(SETS, task, pointed)
    vectors.save(tmp_path / "v.txt")
    return tmp_path


def test_a_bad_label_in_a_bundled_set_is_one_error_naming_file_and_line(toy, monkeypatch):
    path = _write_xz(toy / "spam.tsv.xz", "spam\tcheap pills\nmaybe\thello\n")
    monkeypatch.setitem(SETS, "spam-subjects", (path, ("spam", "ham")))
    with pytest.raises(UserError, match=r"spam.tsv.xz: line 2 is not 'spam\|ham<TAB>text'$"):
        load_sentences(["spam-subjects"])
    monkeypatch.setitem(SETS, "spam-subjects", (toy / "gone.tsv.xz", ("spam", "ham")))
    with pytest.raises(UserError, match=r"gone.tsv.xz: missing sentence set; reinstall ctx2static"):
        load_sentences(["spam-subjects"])


def test_missing_scikit_learn_is_one_line_naming_the_family(toy, monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn now raises ImportError
    with pytest.raises(UserError, match=r"^the sentences family needs scikit-learn: pip install 'ctx2static"):
        load_sentences(["lee-docsim"])


def test_the_family_runs_from_the_cli_with_its_protocol(toy, cli_main):
    out = toy / "r.json"
    code, stdout, err = cli_main("eval", toy / "v.txt", "--family", "sentences", "--json", out)
    assert code == 0, err
    lines = stdout.splitlines()
    rows = {line.split()[0]: line for line in lines if line.split()[:1] in [[t] for t in TASKS]}
    assert list(rows) == list(TASKS)
    assert rows["spam-subjects"].endswith("100.0 ±0.0 (100%)") and rows["lee-docsim"].endswith("100.0 (100%)")
    assert not [line for line in lines if line.startswith("ws353")]  # only when asked
    assert "sentences, labelled sets: standardised vectors -> logistic regression" in stdout
    config = json.loads(out.read_text())["config"]
    assert config["sentence_probes"] == SentenceConfig().to_dict()


def test_naming_a_set_runs_only_it(toy, cli_main):
    code, stdout, err = cli_main("eval", toy / "v.txt", "--sentences", "lee-docsim")
    assert code == 0, err
    lines = stdout.splitlines()
    assert [t for t in TASKS if any(line.startswith(t) for line in lines)] == ["lee-docsim"]


def test_a_users_file_runs_from_the_cli_beside_a_bundled_set(toy, cli_main):
    data, _ = _labelled(n=60)
    mine = _user_file(
        toy / "news-kinds.tsv", ["world" if y == "pos" else "arts" for y in data.labels], data.texts
    )
    code, stdout, err = cli_main("eval", toy / "v.txt", "--sentences", mine, "--sentences", "lee-docsim")
    assert code == 0, err
    rows = {line.split()[0]: line for line in stdout.splitlines() if line.strip()}
    assert rows["news-kinds"].endswith("100.0 ±0.0 (100%)") and rows["lee-docsim"].endswith("100.0 (100%)")
    assert "vader-nyt" not in rows and "sentences-mean" not in rows  # naming sets runs only those
    assert "sentences, labelled sets: standardised vectors -> logistic regression" in stdout


def test_a_sentences_value_that_is_neither_a_set_nor_a_file_is_one_error(toy, cli_main):
    code, _, err = cli_main("eval", toy / "v.txt", "--sentences", "vader-twets")
    assert code == 2
    assert err == "error: vader-twets: neither a sentence set nor a file; choose from " + ", ".join(TASKS) + (
        ", or give a file's path\n"
    )
    (toy / "one.tsv").write_text("sport\tgoal\n" * 5)
    code, _, err = cli_main("eval", toy / "v.txt", "--sentences", toy / "one.tsv")
    assert (code, err.count("\n")) == (2, 1) and err.startswith(f"error: {toy / 'one.tsv'}: every text has")


def _study(tmp_path, eval_table):
    (tmp_path / "corpus.txt").write_text("a b c\n")
    path = tmp_path / "study.toml"
    path.write_text(f'[corpus]\nfiles = ["corpus.txt"]\n\n[students.sgns]\n\n[eval]\n{eval_table}\n')
    return path


def test_a_study_lists_the_family_or_its_sets(tmp_path):
    spec = load_study(_study(tmp_path, 'families = ["similarity", "sentences"]')).eval
    assert Family.SENTENCES in spec.families and set(TASKS) <= set(spec.tasks)
    spec = load_study(_study(tmp_path, 'sentences = ["vader-nyt"]')).eval
    assert spec.families[-1] is Family.SENTENCES
    assert "vader-nyt" in spec.tasks and "lee-docsim" not in spec.tasks
    assert Family.SENTENCES not in load_study(_study(tmp_path, "")).eval.families  # opt-in: default kept
    with pytest.raises(UserError, match=r"eval.sentences: trec: neither a sentence set nor a file; choose"):
        load_study(_study(tmp_path, 'sentences = ["trec"]'))


def test_a_study_takes_a_users_sentence_file_beside_a_set_and_scores_it(tmp_path):
    (tmp_path / "topics.tsv").write_text("".join(f"{lab}\t{lab} word\n" for lab in ["a", "b"] * 5))
    spec = load_study(_study(tmp_path, 'sentences = ["vader-nyt", "topics.tsv"]')).eval
    assert spec.extra()["sentences"] == ((tmp_path / "topics.tsv").resolve(),)
    assert "vader-nyt" in spec.tasks and "lee-docsim" not in spec.tasks
    names = [b.name for b in load_benchmarks(spec.families, spec.extra(), tasks=spec.tasks)]
    assert names[-2:] == ["vader-nyt", "topics"]
    only = load_study(_study(tmp_path, 'sentences = ["topics.tsv"]')).eval  # a file alone: no bundled set
    names = [b.name for b in load_benchmarks(only.families, only.extra(), tasks=only.tasks)]
    assert "topics" in names and not set(TASKS) & set(names)


def test_the_bundled_sets_load_with_both_labels_and_distinct_names():
    sets = load_benchmarks((Family.SENTENCES,), tasks=TASKS)
    assert [s.name for s in sets] == list(TASKS)
    for s in sets:
        if isinstance(s, PairSet):
            assert len(s.first) == len(s.second) == len(s.scores) > 1000
        else:
            assert len(set(s.labels)) == 2 and len(s.texts) > 3000


def test_the_mean_accuracy_summary_needs_every_labelled_set_and_averages_them():
    from ctx2static.eval.results import Score
    from ctx2static.eval.sentences import SETS, mean_accuracy

    labelled = [name for name, (_, labels) in SETS.items() if labels is not None]
    scores = [Score(name, "sentences", "accuracy", 60.0 + i, 10, 10) for i, name in enumerate(labelled)]
    pair = Score("lee-docsim", "sentences", "spearman (cosine)", -50.0, 5, 5)
    summary = mean_accuracy([*scores, pair])
    assert summary is not None and summary.benchmark == "sentences-mean"
    assert summary.score == pytest.approx(60.0 + (len(labelled) - 1) / 2)  # the pair set is not averaged
    assert mean_accuracy([*scores[1:], pair]) is None


def test_pairs_mean_averages_the_pair_sets_scored_when_two_or_more(toy, cli_main, tmp_path):
    from ctx2static.eval.results import Score
    from ctx2static.eval.sentences import mean_spearman

    sts = [Score(n, "sentences", "spearman (cosine)", s, 5, 5) for n, s in (("a", 40.0), ("b", 60.0))]
    accuracy = Score("c", "sentences", "accuracy", 90.0, 5, 5)
    summary = mean_spearman([*sts, accuracy])
    assert summary is not None and (summary.benchmark, summary.score) == ("pairs-mean", 50.0)
    assert mean_spearman(sts[:1]) is None
    assert mean_spearman([*sts, accuracy], names=["a"]) is None
    # from the command line: two pair files give the row
    second = toy / "p2.tsv"
    second.write_text("1\tpos1\tneg1\n3\tpos1 pos2\tpos3\n2\tpos1\tthe\n")
    cli_main("eval", str(toy / "v.txt"), "--sentences", str(toy / "p.tsv.xz"), "--sentences", str(second),
             "--json", str(tmp_path / "out.json"))  # fmt: skip
    (scores,) = json.loads((tmp_path / "out.json").read_text())["results"].values()
    assert [s["benchmark"] for s in scores] == ["p", "p2", "pairs-mean"]
