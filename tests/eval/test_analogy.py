import numpy as np
import pytest

from ctx2static.eval.analogy import AnalogyConfig, evaluate_analogy, question_rows, solve
from ctx2static.eval.benchmarks import AnalogySet, read_analogy
from ctx2static.vectors import Vectors


def _toy() -> Vectors:
    # man:king :: woman:? ; king - man + woman = (-0.1, 1, 0.436) is closest to "king" itself
    # (cos 0.91); among the other words "queen" is closest (cos 0.76).
    words = ["man", "king", "woman", "queen", "apple"]
    m = np.array([[1, 0, 0], [0, 1, 0], [0.9, 0, 0.436], [0.3, 0.5, 0.8], [0, 0, -1]], dtype=np.float32)
    return Vectors(words, m)


def _cos(u, v):
    return u @ v / np.linalg.norm(u) / np.linalg.norm(v)


def test_known_answer_with_question_words_excluded():
    vecs = _toy()
    a, b, c = (vecs[w].astype(np.float64) for w in ("man", "king", "woman"))
    add = [_cos(d, b - a + c) for d in vecs.matrix.astype(np.float64)]
    mul = [(_cos(d, b) + 1) / 2 * (_cos(d, c) + 1) / 2 / ((_cos(d, a) + 1) / 2 + 1e-3) for d in vecs.matrix]
    assert vecs.words[int(np.argmax(add))] == "king"  # why the question words must be excluded
    assert vecs.words[int(np.argmax(mul))] == "king"
    add_pred, mul_pred = solve(vecs.unit(), np.array([[0, 1, 2]]), AnalogyConfig())
    assert add_pred.tolist() == [3] and mul_pred.tolist() == [3]
    bench = AnalogySet("toy", [("man", "king", "woman", "queen")], [""])
    [add_score, mul_score] = evaluate_analogy(vecs, bench)
    assert (add_score.score, mul_score.score, add_score.covered, add_score.total) == (100.0, 100.0, 1, 1)


def _reference(unit, abc, eps):
    """Plain per-question loops of Levy & Goldberg's 3CosAdd / 3CosMul."""
    add, mul = [], []
    for a, b, c in abc:
        ca, cb, cc = unit @ unit[a], unit @ unit[b], unit @ unit[c]
        s_add = cb - ca + cc
        s_mul = (cb + 1) / 2 * (cc + 1) / 2 / ((ca + 1) / 2 + eps)
        s_add[[a, b, c]] = s_mul[[a, b, c]] = -np.inf
        add.append(int(np.argmax(s_add)))
        mul.append(int(np.argmax(s_mul)))
    return add, mul


def test_batched_solver_matches_plain_loops_and_the_two_methods_differ():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 8))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    abc = np.array([rng.choice(200, size=3, replace=False) for _ in range(300)])
    # small groups and chunks: many matrix products, remainder chunks
    add, mul = solve(unit, abc, AnalogyConfig(group_words=20, chunk=7))
    ref_add, ref_mul = _reference(unit, abc, 1e-3)
    assert add.tolist() == ref_add and mul.tolist() == ref_mul
    assert add.tolist() != mul.tolist()


def test_top_n_restricts_coverage_and_candidates():
    words = ["a", "b", "c", "d", "e"]
    m = np.array([[1, 0], [0, 1], [1, 0.1], [0.1, 1], [0.2, 1]], dtype=np.float32)
    vecs = Vectors(words, m)
    # "e" (row 4) is outside the top 4: a question needing it is not covered
    rows = question_rows(vecs, [("a", "b", "c", "d"), ("A", "b", "c", "e"), ("a", "b", "c", "zzz")], 4)
    assert rows.tolist() == [[0, 1, 2, 3], [0, 1, 2, -1], [0, 1, 2, -1]]
    bench = AnalogySet("t", [("a", "b", "c", "d"), ("a", "b", "c", "e"), ("x", "b", "c", "d")], ["", "", ""])
    [add, mul] = evaluate_analogy(vecs, bench, AnalogyConfig(top_n=4))
    assert (add.covered, add.total, add.score) == (1, 3, 100.0)
    assert (mul.covered, mul.total, mul.score) == (1, 3, 100.0)
    # all words searchable: b - a + c = (0, 1.1) is nearer "d" (cos 0.995) than "e" (cos 0.981)
    [add_all, _] = evaluate_analogy(vecs, bench, AnalogyConfig(top_n=10))
    assert (add_all.covered, add_all.score) == (2, 50.0)


def test_semantic_syntactic_split_and_per_section_mean():
    vecs = _toy()
    q_ok, q_bad = ("man", "king", "woman", "queen"), ("man", "king", "woman", "apple")
    sections = ["fam", "fam", "gram1", "gram1", "gram1"]
    google = AnalogySet("g", [q_ok, q_ok, q_bad, q_ok, ("x", "y", "z", "w")], sections)
    scores = {(s.benchmark, s.metric): s for s in evaluate_analogy(vecs, google)}
    metrics = ("3CosAdd acc", "3CosMul acc")
    assert set(scores) == {(b, m) for b in ("g", "g/semantic", "g/syntactic") for m in metrics}
    overall, syntactic = scores["g", "3CosAdd acc"], scores["g/syntactic", "3CosAdd acc"]
    assert (overall.score, overall.covered, overall.total) == (75.0, 4, 5)
    assert scores["g/semantic", "3CosMul acc"].score == 100.0
    assert (syntactic.score, syntactic.covered, syntactic.total) == (50.0, 2, 3)
    # per-section mean: section "x" 1/1 correct, section "y" 1/3 -> mean 66.7 (the pooled accuracy is 50)
    semeval = AnalogySet("s", [q_ok, q_ok, q_bad, q_bad], ["x", "y", "y", "y"], per_section=True)
    [score] = evaluate_analogy(vecs, semeval)
    assert score.metric == "analogy acc per subcategory, mean (3CosAdd)"
    assert score.score == pytest.approx(100 * (1 + 1 / 3) / 2)


def test_3cosadd_agrees_with_gensim(tmp_path):
    gensim_models = pytest.importorskip("gensim.models")
    rng = np.random.default_rng(1)
    # pairs (b_i, p_i = b_i + offset + noise): b_i:p_i :: b_j:? has answer p_j, found only sometimes
    base = rng.normal(size=(60, 6))
    matrix = np.concatenate([base, base + rng.normal(size=6) + rng.normal(scale=0.7, size=(60, 6))])
    words = [f"b{i}" for i in range(60)] + [f"p{i}" for i in range(60)]
    order = rng.permutation(120)  # rows past the top 100 make some questions uncovered
    vecs = Vectors([words[i] for i in order], matrix[order].astype(np.float32))
    lines = []
    for section in ("sec-a", "gram-b"):
        pairs = rng.integers(0, 60, size=(150, 2))
        lines += [f": {section}"] + [f"b{i} p{i} b{j} p{j}" for i, j in pairs if i != j]
    (tmp_path / "q.txt").write_text("\n".join(lines) + "\n")
    kv = gensim_models.KeyedVectors(6)
    kv.add_vectors(vecs.words, vecs.matrix)
    _, sections = kv.evaluate_word_analogies(str(tmp_path / "q.txt"), restrict_vocab=100)
    assert [s["section"] for s in sections] == ["sec-a", "gram-b", "Total accuracy"]
    scores = {
        s.benchmark: s
        for s in evaluate_analogy(vecs, read_analogy(tmp_path / "q.txt"), AnalogyConfig(100))
        if s.metric == "3CosAdd acc"
    }
    for ours, theirs in zip(("q/semantic", "q/syntactic", "q"), sections, strict=True):
        n_correct, n = len(theirs["correct"]), len(theirs["correct"]) + len(theirs["incorrect"])
        assert (scores[ours].covered, scores[ours].score) == (n, pytest.approx(100 * n_correct / n))
    assert 0 < scores["q"].covered < scores["q"].total and len(sections[-1]["correct"]) > 3


def test_a_question_whose_answer_is_a_question_word_is_not_covered(tmp_path):
    """'a a b b' can never be answered right (the question words are excluded): it was scored 0 as covered."""
    from ctx2static.eval.analogy import analogy_coverage

    vecs = _toy()
    path = tmp_path / "q.txt"
    path.write_text("man king woman queen\nman man woman woman\nman king Man king\nking man woman apple\n")
    bench = read_analogy(path)
    [add, mul] = evaluate_analogy(vecs, bench)
    assert (add.covered, add.total, mul.covered) == (2, 4, 2)  # "Man" is "man" in the table: d = b
    assert analogy_coverage(vecs, bench, AnalogyConfig()).tolist() == [True, False, False, True]


def test_questions_saved_in_nfd_find_their_words(tmp_path):
    import unicodedata

    words = ["été", "hiver", "café", "thé"]
    vecs = Vectors(words, np.eye(4, dtype=np.float32) + 0.1)
    (tmp_path / "nfd.txt").write_text(unicodedata.normalize("NFD", "été hiver café thé\n"), encoding="utf-8")
    bench = read_analogy(tmp_path / "nfd.txt")
    assert bench.questions == [("été", "hiver", "café", "thé")]
    assert evaluate_analogy(vecs, bench)[0].covered == 1


def test_a_benchmark_line_over_the_limit_is_refused_without_reading_it_whole(tmp_path, monkeypatch):
    from ctx2static.errors import UserError
    from ctx2static.eval import reading

    monkeypatch.setattr(reading, "LINE_LIMIT", 1 << 10)
    (tmp_path / "q.txt").write_text("a b c d\n" + "x " * 4000 + "\n")
    with pytest.raises(UserError, match=r"q.txt: line 2 is longer than 1 KiB; a benchmark line holds a few"):
        read_analogy(tmp_path / "q.txt")


def test_search_options_too_large_for_the_memory_are_refused_naming_them(monkeypatch):
    from ctx2static import memory
    from ctx2static.errors import UserError

    rng = np.random.default_rng(0)
    unit = rng.normal(size=(5000, 8)).astype(np.float32)
    abc = rng.integers(0, 5000, size=(3000, 3))
    monkeypatch.setattr(memory, "available_bytes", lambda: 32 << 20)
    solve(unit, abc, AnalogyConfig())  # 256 words x 5,000 cosines: 15 MB with the default chunk
    with pytest.raises(
        UserError, match=r"^analogy with --top-n 5000 --group-words 256 --chunk 3000 needs about"
    ):
        solve(unit, abc, AnalogyConfig(chunk=3000))
