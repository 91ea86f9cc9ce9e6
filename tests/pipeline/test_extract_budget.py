"""The teacher pass's budget (``max_words``, ``max_sentences``) and what extract says it reads.

A budget in sentences does not bound the time on text of long lines; one in words does. Either
way the progress bar has a total (so an ETA), and one line says what is read and what stopped it.
"""

import pytest

from ctx2static.pipeline import extract as extract_module
from ctx2static.pipeline.config import ExtractConfig
from ctx2static.pipeline.extract import Reading, budgeted, options_identity, run_extract
from ctx2static.pipeline.shard import ShardMaker
from ctx2static.pipeline.teacher import Teacher
from ctx2static.text.corpus import Corpus
from ctx2static.text.vocab import Vocab, VocabConfig

LONG = " ".join(f"w{i % 37}" for i in range(120))
"""A line of 120 words: users' text often has sentences this long."""


@pytest.fixture
def long_lines(tmp_path):
    path = tmp_path / "long.txt"
    path.write_text("\n".join([LONG] * 40) + "\n")
    return path


@pytest.mark.parametrize("budget", [1, 119, 120, 121, 1000])
def test_the_word_budget_stops_at_the_stated_count(long_lines, budget):
    corpus = Corpus([long_lines])
    read = list(budgeted(corpus, ExtractConfig(max_words=budget)))
    assert sum(len(words) for _, words in read) == budget
    assert len(read) == -(-budget // 120)  # the last sentence is cut at the budget, not read whole


def test_both_budgets_stop_at_the_first_reached(long_lines):
    corpus = Corpus([long_lines])
    read = list(budgeted(corpus, ExtractConfig(max_sentences=3, max_words=1000)))
    assert [len(w) for _, w in read] == [120, 120, 120]
    read = list(budgeted(corpus, ExtractConfig(max_sentences=30, max_words=250)))
    assert [len(w) for _, w in read] == [120, 120, 10]


def test_a_budget_past_the_corpus_reads_it_all(long_lines):
    corpus = Corpus([long_lines])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    reading = Reading.plan(corpus, vocab, ExtractConfig(max_words=10**6))
    assert (reading.sentences, reading.words, reading.whole) == (40, 4800, True)
    assert reading.occurrences == vocab.total
    assert "(all of it)" in reading.line(corpus, ExtractConfig(max_words=10**6))


def test_no_word_budget_leaves_the_caches_identity_as_it_was():
    """Caches (and study keys) made before the option resume: a budget of 0 is no key at all."""
    assert "max_words" not in options_identity(ExtractConfig())
    assert options_identity(ExtractConfig(max_words=5))["max_words"] == 5


@pytest.mark.parametrize(
    "cfg,read",
    [
        (ExtractConfig(max_words=130), "extract: reading 2 sentences, 130 words of"),
        (ExtractConfig(max_sentences=2), "extract: reading 2 sentences, 240 words of"),
        (ExtractConfig(), "extract: reading all of"),
    ],
)
def test_extract_says_what_it_reads_and_its_bar_has_a_total(
    tiny_models, long_lines, tmp_path, monkeypatch, capsys, cfg, read
):
    totals = []
    real = extract_module.tqdm

    def recording(*args, **kwargs):
        totals.append(kwargs.get("total"))
        return real(*args, **kwargs)

    monkeypatch.setattr(extract_module, "tqdm", recording)
    monkeypatch.setattr(recording, "write", real.write, raising=False)
    corpus = Corpus([long_lines])
    vocab = Vocab.build(corpus, VocabConfig(min_count=1))
    maker = ShardMaker(Teacher.load(str(tiny_models["bert"])), vocab, cfg, True)
    with maker.feed:
        m = run_extract(corpus, vocab, maker, tmp_path / "c", cfg)
    err = capsys.readouterr().err
    assert read in err, err
    budget = cfg.max_words or (cfg.max_sentences or 40) * 120
    assert m["totals"]["n_words"] == min(budget, 4800)
    assert totals and all(t for t in totals), totals  # a total, so tqdm shows an ETA
    assert m["complete"]
    if cfg.max_words:
        assert "stopped by --max-words 130" in err


def test_a_budget_counts_the_vocabulary_of_the_text_it_reads_only(tmp_path):
    """A first try on a long file must not read all of it: words past the budget are not counted."""
    from ctx2static.pipeline.extract import read_vocab

    path = tmp_path / "c.txt"
    path.write_text("\n".join(["early words here"] * 5 + ["late words only"] * 5) + "\n")
    corpus, config = Corpus([path]), VocabConfig(min_count=1)
    budgeted_vocab = read_vocab(corpus, config, ExtractConfig(max_words=15))
    assert sorted(budgeted_vocab.words) == ["early", "here", "words"]
    assert budgeted_vocab.counts.sum() == 15
    assert sorted(read_vocab(corpus, config, ExtractConfig(max_sentences=6)).words) == [
        "early",
        "here",
        "late",
        "only",
        "words",
    ]
    assert len(read_vocab(corpus, config, ExtractConfig())) == 5  # no budget: the whole corpus
