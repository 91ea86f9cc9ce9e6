"""The teacher pass's driver: the corpus streamed in shards to an engine, each written shard recorded.

The engine computes and writes the shards (:class:`~ctx2static.pipeline.shard.ShardMaker` in this
process, or :mod:`~ctx2static.pipeline.ray_engine` on Ray workers); this process owns the manifest.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from tqdm import tqdm

from ctx2static.cache.layout import PCA_H5
from ctx2static.cache.writer import CacheWriter
from ctx2static.errors import OptionError, UserError, spell
from ctx2static.fileio.locks import LOCK_NAME, acquire_lock, release_lock
from ctx2static.fileio.outputs import check_writable, refuse_inputs
from ctx2static.memory import check_fits
from ctx2static.options import pop_options
from ctx2static.pipeline.config import (
    AUTO_LAYER,
    Engine,
    EngineConfig,
    ExtractConfig,
    TeacherConfig,
    parse_layers,
)
from ctx2static.pipeline.feed import feeders
from ctx2static.pipeline.models import teacher_folder
from ctx2static.pipeline.shard import Progress, ShardDone, ShardMaker
from ctx2static.text.corpus import Corpus, CorpusConfig
from ctx2static.text.vocab import Vocab, VocabConfig

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # torch and transformers load only when a teacher runs
    from ctx2static.pipeline.teacher import Teacher


def _identity(teacher: dict, watch: CorpusWatch, vocab: Vocab, cfg: ExtractConfig) -> dict:
    """Everything that determines the cache's content; a resumed run must match it exactly.

    The engine is not part of it: a cache built on Ray is the cache the local engine builds.
    Each corpus file is recorded as it is read (format, split as chosen, text field), so a cache
    built with another split is refused like another corpus.
    """
    return {
        "teacher": teacher,
        "corpus": watch.identity,
        "corpus_config": watch.corpus.config_identity(),
        "vocab": {"sha256_16": vocab.digest(), "size": len(vocab)},
        "options": options_identity(cfg),
        "code_version": version("ctx2static"),
    }


def options_identity(cfg: ExtractConfig) -> dict[str, Any]:
    """The extract options as a cache's identity records them; an option left off is no key.

    A cache made without ``max_words``, ``prompt`` or ``tables_only`` keeps the identity it had
    before the options existed, so it still resumes and a study keeps its key.
    """
    options = asdict(cfg)
    for key in ("max_words", "prompt", "tables_only"):
        if not options[key]:
            del options[key]
    return options


def _shards(sentences: Iterable[tuple[int, list[str]]], size: int, words: int) -> Iterator[list]:
    """``sentences`` in runs of at most ``size`` sentences and (``words`` > 0) ``words`` words.

    A sentence longer than ``words`` makes a shard alone; the corpus bounds sentences to 256 words.
    """
    shard: list[tuple[int, list[str]]] = []
    n = 0
    for sentence in sentences:
        if shard and (len(shard) == size or (words and n + len(sentence[1]) > words)):
            yield shard
            shard, n = [], 0
        shard.append(sentence)
        n += len(sentence[1])
    if shard:
        yield shard


Stamp = dict[str, tuple[int, int]]
"""Each corpus file's size and modification time (ns), by path."""


def _stamp(corpus: Corpus) -> Stamp:
    """The size and modification time of every file the corpus reads (a saved dataset's, recursively)."""
    out: Stamp = {}
    for path in (r.source.path for r in corpus.readings):
        files = [path] if not path.is_dir() else sorted(f for f in path.rglob("*") if f.is_file())
        for f in files:
            try:
                st = f.stat()
            except OSError:
                out[str(f)] = (-1, -1)  # gone: differs from any stamp it had
                continue
            out[str(f)] = (st.st_size, st.st_mtime_ns)
    return out


class CorpusWatch:
    """The corpus as the cache's identity records it, checked while extract reads it.

    The manifest records each file's sha256 from the start of the run; a file edited in place
    while the run reads it would make later shards from another text under that digest. Every
    shard is checked before it is recorded (size and modification time: a stat per file), so the
    shards a cache commits were all read before any change; the digests are computed again before
    the cache is marked complete, which catches an edit that kept both (one more read of the
    corpus, at hashing speed, against a teacher pass that is orders of magnitude slower).
    """

    def __init__(self, corpus: Corpus, out: Path) -> None:
        self.corpus, self.out = corpus, out
        self.stamp = _stamp(corpus)
        self.identity = corpus.identity()  # the digests the manifest records
        self.check()  # not changed while it was hashed

    def _changed(self, kept: str) -> UserError:
        names = ", ".join(map(str, self.corpus.paths))
        return UserError(
            f"{names}: the corpus changed while extract read it; {kept}: restore the corpus and run again "
            f"to continue, or delete {self.out} and start over on a corpus that stays put"
        )

    def check(self) -> None:
        """Refuse to go on when a corpus file's size or modification time changed since the start."""
        if _stamp(self.corpus) != self.stamp:
            raise self._changed("the shards recorded before the change are kept")

    def verify(self) -> None:
        """Refuse to complete the cache when a corpus file's digest is not the one it began with."""
        self.check()
        if self.corpus.identity() != self.identity:
            raise self._changed(f"the cache in {self.out} may mix both versions and is not completed")


class ShardEngine(Protocol):
    """Where shards are computed: :class:`ShardMaker` (this process) or the Ray engine (workers)."""

    def identity(self) -> dict:
        """The teacher's part of the cache identity (every worker's alike)."""

    def resolve(self, cfg: ExtractConfig) -> ExtractConfig:
        """What :meth:`ShardMaker.resolve` returns: ``cfg`` with its ``auto`` settings spelled out."""

    def map(
        self, folder: Path, jobs: Iterable[tuple[int, list]], pca: dict[str, np.ndarray] | None
    ) -> Iterator[ShardDone]:
        """Write each job's shard into ``folder``; yield them in job order."""

    def tables(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], str]:
        """What :meth:`ShardMaker.tables` returns."""

    def watch(self, progress: Progress) -> bool:
        """Report each teacher batch to ``progress`` if this engine can (True), else False."""

    def width(self) -> int:
        """The width of the teacher's hidden states (0: unknown)."""


class Bar:
    """The extract progress bar: occurrences (in-vocabulary words) with an ETA, teacher tokens/s.

    Updated after every teacher batch by an engine that can report them, else per recorded shard.
    """

    def __init__(self, total: int, initial: int, engine: ShardEngine) -> None:
        self.tqdm = tqdm(
            unit="word", unit_scale=True, desc="extract", total=total, initial=initial, mininterval=1.0
        )
        self.start, self.tokens = time.perf_counter(), 0
        self.per_batch = engine.watch(self.batch)

    def batch(self, occurrences: int, tokens: int) -> None:
        """Count a batch (or a whole shard) of teacher work."""
        self.tokens += tokens
        rate = self.tokens / max(time.perf_counter() - self.start, 1e-9)
        self.tqdm.set_postfix_str(f"{rate:,.0f} teacher tok/s", refresh=False)
        self.tqdm.update(occurrences)

    def shard(self, stats: dict[str, int]) -> None:
        """A shard was written: counted here unless its batches were."""
        if not self.per_batch:
            self.batch(stats["n_occurrences"], stats["n_teacher_tokens"])


def budgeted(corpus: Corpus, cfg: ExtractConfig) -> Iterator[tuple[int, list[str]]]:
    """The corpus's ``(paragraph, words)`` sentences the teacher reads, nothing past them.

    The first ``max_sentences``, and no more than ``max_words`` words, the last sentence cut there.
    """
    sentences: Iterable[tuple[int, list[str]]] = corpus.sentences()
    if cfg.max_sentences:
        sentences = itertools.islice(sentences, cfg.max_sentences)
    if not cfg.max_words:
        yield from sentences
        return
    left = cfg.max_words
    for pid, words in sentences:
        yield pid, words[:left]
        left -= min(len(words), left)
        if not left:
            return


def read_vocab(corpus: Corpus, config: VocabConfig, cfg: ExtractConfig) -> Vocab:
    """The vocabulary of what the teacher pass reads: with a budget, of :func:`budgeted`'s part only.

    Words past the budget would get no vectors from the teacher, and counting them would read
    the whole file, which a first try with ``max_words`` must not.
    """
    if not (cfg.max_sentences or cfg.max_words):
        return Vocab.build(corpus, config)
    return Vocab.build(corpus, config, (words for _, words in budgeted(corpus, cfg)))


@dataclass(frozen=True)
class Reading:
    """What the teacher pass reads: sentences, corpus words, and the vocabulary's occurrences in them."""

    sentences: int
    words: int
    occurrences: int
    whole: bool  # the whole corpus (no budget stopped it)

    @classmethod
    def plan(cls, corpus: Corpus, vocab: Vocab, cfg: ExtractConfig) -> Reading:
        """Count what :func:`budgeted` yields (a budget: its part of the corpus only, no teacher)."""
        if not (cfg.max_sentences or cfg.max_words):
            return cls(0, 0, vocab.total, True)
        index = vocab.index
        sentences = words = occurrences = 0
        for _, toks in budgeted(corpus, cfg):
            sentences += 1
            words += len(toks)
            occurrences += sum(1 for w in toks if w in index)
        stopped = (cfg.max_sentences and sentences == cfg.max_sentences) or (
            cfg.max_words and words == cfg.max_words
        )
        return cls(sentences, words, occurrences, not stopped)

    def line(self, corpus: Corpus, cfg: ExtractConfig) -> str:
        """One line saying what the teacher pass reads, and which budget stops it."""
        names = ", ".join(map(str, corpus.paths))
        if not self.sentences:
            return f"extract: reading all of {names} ({self.occurrences:,} occurrences of vocabulary words)"
        given = (("max_sentences", cfg.max_sentences), ("max_words", cfg.max_words))
        budgets = [spell(name, value) for name, value in given if value]
        why = "all of it" if self.whole else f"stopped by {' and '.join(budgets)}"
        return f"extract: reading {self.sentences:,} sentences, {self.words:,} words of {names} ({why})"


def shard_jobs(corpus: Corpus, cfg: ExtractConfig, start: int) -> Iterator[tuple[int, list]]:
    """``(index, sentences)`` of every shard from ``start`` on, streamed from the corpus."""
    sentences = budgeted(corpus, cfg)
    for i, sents in enumerate(_shards(sentences, cfg.shard_size, cfg.shard_words)):
        if i >= start:
            yield i, sents


def _record(writer: CacheWriter, done: ShardDone, bar: Bar) -> None:
    """Record a written shard."""
    writer.record_shard(done.index, done.files, done.stats, done.sums)
    bar.shard(done.stats)


def run_extract(
    corpus: Corpus, vocab: Vocab, engine: ShardEngine, out: str | Path, cfg: ExtractConfig
) -> dict:
    """Write (or resume) the cache in ``out`` with ``engine``; return its manifest (plus ``run`` timing).

    The corpus is streamed shard by shard; the cache writer records each shard only once it is
    written whole and commits them in order, so a re-run continues after the last committed shard
    and yields the same bytes as one run. With ``--pca`` the first shard runs alone: later shards
    are reduced with the projection fitted on it. A re-run (of a complete cache too) re-verifies the
    committed files and rebuilds the damaged ones (:class:`~ctx2static.cache.writer.CacheWriter`).
    """
    width = engine.width()
    check_vocab_memory(vocab, width)
    if cfg.vectors and width and cfg.pca > width:
        raise OptionError(
            f"{spell('pca', cfg.pca)}: the teacher's vectors have {width} dimensions; use "
            f"{spell('pca', width)} or fewer",
            "pca",
        )
    cfg = engine.resolve(cfg)  # the cache records what auto meant, as the teacher's layers
    watch = CorpusWatch(corpus, Path(out))
    writer = CacheWriter.open(out, _identity(engine.identity(), watch, vocab, cfg), vocab)
    try:
        return _write(watch, vocab, engine, writer, cfg)
    finally:
        writer.close()


def _write(
    watch: CorpusWatch, vocab: Vocab, engine: ShardEngine, writer: CacheWriter, cfg: ExtractConfig
) -> dict:
    """Damaged shards, then missing ones, then the vocabulary tables (see :func:`run_extract`).

    Each shard is recorded only while the corpus is unchanged (:class:`CorpusWatch`). With
    ``tables_only`` no shard is made: the tables are all the students ``token``, ``word`` and ``embed`` read.
    """
    corpus = watch.corpus
    if writer.complete and not writer.damaged:
        return writer.manifest
    if cfg.tables_only:
        tqdm.write(
            f"extract: the per-word tables of {len(vocab):,} words, no pass over the sentences",
            file=sys.stderr,
        )
        return _finish(watch, engine, writer, {"seconds": 0.0, "teacher_tokens_per_s": 0.0})
    pca = writer.aux(PCA_H5) if cfg.vectors and cfg.pca else None
    kept = sum(r["n_occurrences"] for r in writer.manifest["shards"] if r["index"] not in writer.damaged)
    reading = Reading.plan(corpus, vocab, cfg)
    tqdm.write(reading.line(corpus, cfg), file=sys.stderr)  # shown to the API's callers too, as the bar is
    bar = Bar(reading.occurrences, kept, engine)  # words the teacher cuts off make the total an upper bound
    with bar.tqdm:
        if writer.damaged:
            damaged, last = set(writer.damaged), max(writer.damaged)
            upto = itertools.takewhile(lambda job: job[0] <= last, shard_jobs(corpus, cfg, 0))
            for done in engine.map(writer.folder, (job for job in upto if job[0] in damaged), pca):
                watch.check()
                writer.rebuilt_shard(done.index, done.files)
                bar.shard(done.stats)
                log.info("shard %d rebuilt", done.index)
        if not writer.complete:
            jobs = shard_jobs(corpus, cfg, writer.n_shards)
            if cfg.vectors and cfg.pca and pca is None:  # the first shard alone: it fits the projection
                for done in engine.map(writer.folder, itertools.islice(jobs, 1), None):
                    assert done.pca is not None, "a shard made without a projection fits one"
                    watch.check()
                    writer.add_aux(PCA_H5, done.pca)
                    pca = done.pca
                    _record(writer, done, bar)
            for done in engine.map(writer.folder, jobs, pca):
                watch.check()
                _record(writer, done, bar)
    secs = time.perf_counter() - bar.start
    run = {"seconds": secs, "teacher_tokens_per_s": bar.tokens / secs if secs else 0.0}
    if not writer.n_shards:
        raise UserError(f"{', '.join(map(str, corpus.paths))}: no sentences to extract")
    return _finish(watch, engine, writer, run)


def _finish(watch: CorpusWatch, engine: ShardEngine, writer: CacheWriter, run: dict) -> dict:
    """The per-word tables, once the corpus is known unchanged; the manifest with the ``run`` timing."""
    if not writer.complete:
        watch.verify()
        tables, teacher_tokens, tokenizer_json = engine.tables()
        writer.finish(tables, teacher_tokens, tokenizer_json)
    return {**writer.manifest, "run": run}


def extract(corpus: Corpus, vocab: Vocab, teacher: Teacher, out: str | Path, cfg: ExtractConfig) -> dict:
    """Write (or resume) the cache in ``out`` with the local engine (``teacher`` in this process)."""
    return run_extract(corpus, vocab, ShardMaker(teacher, vocab, cfg, corpus.config.lowercase), out, cfg)


Inputs = Callable[[], tuple[Corpus, Vocab]]
"""The corpus and its vocabulary, read when the engine asks (the local one loads its teacher first)."""


@contextlib.contextmanager
def start_engine(
    teacher: str, teacher_config: TeacherConfig, inputs: Inputs, cfg: ExtractConfig, engine: EngineConfig
) -> Iterator[tuple[ShardEngine, Corpus, Vocab]]:
    """The engine ``engine`` names, with the corpus and vocabulary it runs on, until the block ends.

    Local: the teacher loads in this process first, so a missing model fails before the corpus is
    read, and torch keeps ``threads`` threads throughout; ``feeders`` processes prepare the shards
    ahead of it (:mod:`~ctx2static.pipeline.feed`). Ray: the vocabulary comes first (every
    worker receives it), then each worker loads its teacher.
    """
    check_teacher_options(teacher, teacher_config, cfg)
    if engine.engine is Engine.RAY:
        from ctx2static.pipeline.ray_engine import RayEngine

        corpus, vocab = inputs()
        with RayEngine.start(teacher, teacher_config, vocab, cfg, corpus.config.lowercase, engine) as workers:
            yield workers, corpus, vocab
        return
    from ctx2static.pipeline.teacher import Teacher, torch_threads

    with torch_threads(torch_cpu_threads(teacher_config)):
        model = Teacher.load(teacher, teacher_config)
        corpus, vocab = inputs()
        maker = ShardMaker(model, vocab, cfg, corpus.config.lowercase, feeders(engine.feeders))
        with maker.feed:
            yield maker, corpus, vocab


def torch_cpu_threads(config: TeacherConfig) -> int:
    """Torch's CPU threads in the local engine: ``--threads``, else torch's own on a CPU, 1 beside a GPU.

    A GPU's forward leaves the host's cores to the feeding processes, whose work is then what the
    device waits on; torch's idle threads spinning on those cores slowed the host side by a quarter
    (a near-free teacher on 2 cores: 313k teacher tokens/s with 2 torch threads, 405k with 1;
    measured: Results page, host_ceiling).
    """
    if config.threads or config.device == "cpu":
        return config.threads
    return 1


def check_teacher_options(teacher: str, teacher_config: TeacherConfig, cfg: ExtractConfig) -> None:
    """Refuse what the teacher's config alone shows cannot work, before any corpus is read or weights load.

    A misspelt name, a ``--layer`` or ``--word-layer`` past its hidden states, ``--pca`` past its
    width: each would otherwise be answered only after the corpus was analysed (minutes on a large
    one). ``auto`` layers are the family's default, in range by construction.
    """
    from ctx2static.pipeline.models import hidden_width, n_hidden_states, read_config, resolve

    config = read_config(teacher, resolve(teacher))
    n_hidden = n_hidden_states(config)
    for option, spec in (("layer", teacher_config.layer), ("word_layer", cfg.word_layer)):
        if n_hidden and spec != AUTO_LAYER:
            parse_layers(spec, n_hidden, option)
    width = hidden_width(config)
    if cfg.vectors and width and cfg.pca > width:
        raise OptionError(
            f"{spell('pca', cfg.pca)}: the teacher's vectors have {width} dimensions; use "
            f"{spell('pca', width)} or fewer",
            "pca",
        )


VOCAB_BYTES_PER_DIM = 8 + 4 + 4 + 4
"""Bytes per vocabulary word and teacher dimension extract holds at its end: the running per-word
sums (float64, :class:`~ctx2static.cache.writer.CacheWriter`), their float32 copy in vocab.h5, and
the word and token tables (float32, :func:`~ctx2static.pipeline.shard.vocab_tables`). The rest of
extract's peak (batches, a chunk, a shard) does not grow with the vocabulary."""


def vocab_memory(n_words: int, width: int) -> int:
    """Bytes extract's per-word tables take for ``n_words`` words of a ``width``-wide teacher.

    Beside them one chunk of the tables' Python objects (:data:`~ctx2static.pipeline.shard.TABLE_CHUNK`
    words) and one shard's arrays, both bounded whatever the vocabulary.
    """
    return n_words * width * VOCAB_BYTES_PER_DIM


def check_vocab_memory(vocab: Vocab, width: int) -> None:
    """Refuse, before the teacher runs, a vocabulary whose per-word tables the machine cannot hold.

    A vocabulary of every token (``--min-count 1`` on a large corpus) can be millions of words:
    3M words of a 384-wide teacher are 8.6 GiB of float64 sums alone, which numpy would fail to
    allocate after the first shard's teacher pass.
    """
    check_fits(
        vocab_memory(len(vocab), width),
        f"the vocabulary of {len(vocab):,} words x {width} teacher dimensions",
        "keep fewer words: raise --min-count, cap them with --max-vocab, or pass a shorter --vocab list",
    )


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    """Hold the cache folder's lock from before the teacher loads and the corpus is read.

    A second extract into a folder another one writes then stops at once, not after loading its
    teacher and counting its corpus (the writer takes the same lock again: it is re-entrant). A
    folder made here for a run that failed before writing anything is removed with its lock file.
    """
    made = not out.exists()
    token = acquire_lock(out, "cache")
    try:
        yield
    except BaseException:
        if made and [p.name for p in out.iterdir()] == [LOCK_NAME]:
            with contextlib.suppress(OSError):
                (out / LOCK_NAME).unlink()
                out.rmdir()
        raise
    finally:
        release_lock(token)


def extract_with(
    teacher: str,
    teacher_config: TeacherConfig,
    inputs: Inputs,
    out: str | Path,
    cfg: ExtractConfig,
    engine: EngineConfig | None = None,
) -> dict:
    """Write (or resume) the cache in ``out`` on the engine ``engine`` names (default: this process).

    The one extract of the command line and the API; returns the manifest (plus ``run`` timing).
    ``out`` inside the teacher's own folder is refused before anything is written.
    """
    refuse_inputs(out, [teacher_folder(teacher)])
    with (
        _locked(Path(out)),
        start_engine(teacher, teacher_config, inputs, cfg, engine or EngineConfig()) as got,
    ):
        runner, corpus, vocab = got
        ident = runner.identity()
        log.info(
            "teacher %s: %s, %s on %s; vocab %s words",
            teacher,
            ident["family"],
            ident["precision"],
            ident["backend"],
            f"{len(vocab):,}",
        )
        log.debug(
            "teacher %s: loaded from %s; substitutes from %s",
            teacher,
            ident["source"],
            ident["substitutes_from"],
        )
        log.debug("config: %s", cfg)
        return run_extract(corpus, vocab, runner, out, cfg)


def extract_files(
    corpus: Sequence[str | os.PathLike],
    teacher: str,
    out: str | os.PathLike,
    vocab_path: str | os.PathLike | None,
    options: Mapping[str, Any],
) -> str:
    """Extract (or resume) the cache ``out`` from corpus files, as ``ctx2static extract``; its summary line.

    ``options`` are the corpus, vocabulary, teacher, extract and engine fields, each config built
    in the order its mistakes are reported. The output is checked first, then every option and
    what the teacher's config decides (:func:`check_teacher_options`), then the corpus is opened
    (which analyses it); a ``vocab_path`` list is read before the teacher loads.
    """
    check_writable(out, inside=True, inputs=[*corpus, vocab_path])
    options = dict(options)
    corpus_config, vocab_config = pop_options(CorpusConfig, options), pop_options(VocabConfig, options)
    teacher_config, cfg = pop_options(TeacherConfig, options), pop_options(ExtractConfig, options)
    engine = pop_options(EngineConfig, options)
    check_teacher_options(teacher, teacher_config, cfg)  # the corpus is analysed as it is opened
    source = Corpus(list(corpus), corpus_config)
    given = Vocab.load(vocab_path) if vocab_path else None

    def inputs() -> tuple[Corpus, Vocab]:
        return source, given if given is not None else read_vocab(source, vocab_config, cfg)

    m = extract_with(teacher, teacher_config, inputs, Path(out), cfg, engine)
    if cfg.tables_only:
        words = m["identity"]["vocab"]["size"]
        return f"{out}: the per-word tables of {words:,} words (no pass over the sentences)"
    tot = m["totals"]
    rate = m.get("run", {}).get("teacher_tokens_per_s", 0.0)
    # a finished cache run again does no teacher work: no rate to speak of
    done = f"{rate:,.0f} teacher tokens/s" if rate else "already complete, nothing to do"
    return (
        f"{out}: {len(m['shards'])} shards, {tot['n_sentences']:,} sentences, "
        f"{tot['n_occurrences']:,} occurrences, {tot['n_truncated_words']:,} words cut by max length; {done}"
    )
