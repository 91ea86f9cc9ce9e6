"""The host side of the teacher pass, run ahead of it: the next shards tokenized and aligned in workers.

Between two forwards the host reads the corpus, looks each word up in the vocabulary, tokenizes
the sentences, aligns subwords to words and, after the forward, pools, sums and writes. Done one
after another on one thread, this kept an H200 86-94% idle (measured: Results page, gpu) and,
with a near-free teacher on a CPU, ran at a quarter of the tokenizer's own rate. So the work that
does not need the model (vocabulary ids, tokenization, alignment: about half the host's time) runs
in worker processes while this one runs the forward, pools and writes:

- **processes, not threads**: most of that work is Python holding the GIL (the tokenizer's output
  turned into lists, the vocabulary lookups), which threads would only take turns at;
- **one per core** (:func:`feeders`), beside this process: it waits on them whenever its forward
  is cheaper than their preparing (on a GPU, or a small teacher), and they wait on it when the
  forward is dear, at a lower priority (:data:`NICE`); with a near-free teacher on 2 cores, 2
  feeders ran 1.3x faster than 1 (428k against 335k teacher tokens/s, a trial on a loaded
  machine; measured: Results page, host_ceiling). More than 8 would be idle
  even in front of a GPU; on one core there is none, the one process preparing each shard itself;
- **started afresh** (``python -c``), holding the teacher's tokenizer (its Rust core,
  :class:`~ctx2static.pipeline.align.Encoder`) and the vocabulary's index, never torch or the
  model: a worker starts in well under a second; nothing is forked from a process that runs CUDA
  or OpenMP threads, and unlike multiprocessing's spawn it does not run the caller's script again
  (a user's script that calls ``distill`` without a ``__main__`` guard);
- **only this process's code**: a worker is started as every child Python is
  (:func:`ctx2static.pipeline.child.python_argv`: this process's interpreter options and
  ``sys.path``), so it imports the modules this process would, never a ``numpy.py`` in the working
  folder or a ``sitecustomize.py`` on a ``PYTHONPATH`` this process was told to ignore;
- **bounded**: one shard per worker ahead of the forward (its padded batches and flat arrays,
  about 50 bytes a teacher token: 4 MB for a shard of 65,536 words), so memory does not grow with
  the corpus;
- **the same bytes**: a worker runs exactly what this process would (:meth:`Prepared.of`), and the
  shards come back in corpus order, so the cache is the one a single process writes;
- **Ctrl-C, a closed terminal and kill**: workers ignore the signals a terminal sends to the
  whole foreground process group (:data:`FROM_TERMINAL`: Ctrl-C, Ctrl+backslash, a hangup), which
  this process handles (:mod:`ctx2static.interrupts`: it stops them and keeps its finished
  shards), and end when their pipe from this process closes, also when it is killed (kill -9
  leaves no orphan holding memory). A worker killed is one line saying to resume; one stopped or
  hung is noticed after :data:`PATIENCE` seconds without its shard, one line too.
"""

from __future__ import annotations

import collections
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, TypeVar

import numpy as np

from ctx2static.errors import UserError, spell
from ctx2static.pipeline.align import Encoder, Encoding
from ctx2static.pipeline.batching import HostBatch, host_batch, sorted_batches
from ctx2static.pipeline.child import python_argv
from ctx2static.pipeline.config import EMBED_OFF, WORD_SLOT
from ctx2static.threads import usable_cpus

NICE = 10
"""The feeding processes' niceness: on a CPU teacher the forward's threads take a core before them
(a preempted OpenMP thread stalls all its team at the next barrier), so they fill the gaps the
forward leaves; when they fall behind, the forward waits and they get the cores."""

MAX_FEEDERS = 8
"""Feeding processes at most, whatever the cores (see the module docstring)."""

FROM_TERMINAL = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGHUP", "SIGQUIT") if hasattr(signal, name)
)
"""The signals a terminal sends to its whole foreground process group (Ctrl-C, Ctrl+backslash, the
terminal closed): the feeding processes ignore them and leave them to this process, which stops
them and ends the run in one line that says what was kept. Killed by one instead, a worker's end
races this process's handler for which line is printed, and SIGQUIT's default action dumps core."""

PATIENCE = 120.0
"""Seconds this process waits on a worker's shard before it calls the worker stopped or hung: a shard
takes a worker a second or two (tokenizing 65,536 words), and this process waits only when it has
nothing else to do, so the cores are the worker's then."""

Sentences = list[tuple[int, list[str]]]
"""A shard's sentences: (paragraph id, words)."""

K = TypeVar("K")
T = TypeVar("T")
R = TypeVar("R")


def feeders(requested: int) -> int:
    """The feeding processes to start: ``requested``, or (0) one per usable CPU core, at most 8.

    On one core there is none: this process prepares each shard itself, between forwards.
    """
    cores = usable_cpus()
    return requested or (min(cores, MAX_FEEDERS) if cores > 1 else 0)


def word_ids(index: dict[str, int], words: list[list[str]]) -> list[np.ndarray]:
    """Static vocabulary ids of each sentence's words (-1 outside the vocabulary)."""
    return [np.fromiter((index.get(w, -1) for w in ws), dtype=np.int32, count=len(ws)) for ws in words]


def mark_occurrences(encs: list[Encoding], wids: list[np.ndarray]) -> list[np.ndarray]:
    """Occurrences: vocabulary words the teacher saw whole; set as each encoding's ``wanted`` groups.

    Per-occurrence signals are kept for them only, so no top-k is computed for the rest.
    """
    occ = [(w >= 0) & e.complete for e, w in zip(encs, wids, strict=True)]
    for e, m in zip(encs, occ, strict=True):
        e.wanted = m
    return occ


@dataclass(frozen=True)
class Setup:
    """What every shard is prepared with: the tokenizer, the vocabulary's index, the batches' bounds."""

    encoder: Encoder
    index: dict[str, int]
    max_length: int  # teacher tokens per sentence
    token_budget: int  # padded teacher tokens per batch
    pad_id: int
    prompt: tuple[str, ...] = ()  # words read before every sentence, in no group (``--prompt``)


def _flat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype)


@dataclass
class Prepared:
    """One shard's host-side inputs to the teacher: its words looked up and its batches padded.

    ``wids``, ``complete`` and ``occ`` hold a row per word, ``ids`` and ``tok_group`` one per
    teacher token; ``n_words`` and ``n_tokens`` cut them into sentences. ``batches`` are the
    length-sorted batches as the device takes them, and ``dest[b]`` the occurrence row (in corpus
    order) of each wanted group of batch ``b``, row-major: where its vectors go. Flat arrays, so a
    shard crosses from a feeding process as one pickle of a few dozen arrays, not 40,000.
    """

    wids: np.ndarray  # int32 [words]: vocabulary id, -1 outside it
    complete: np.ndarray  # bool [words]: the teacher saw the word whole
    occ: np.ndarray  # bool [words]: an occurrence (in the vocabulary and whole)
    n_words: np.ndarray  # int64 [sentences]
    ids: np.ndarray  # int64 [tokens]
    tok_group: np.ndarray  # int32 [tokens]: the word of each token within its sentence, -1 for none
    n_tokens: np.ndarray  # int64 [sentences]
    batches: list[HostBatch]
    dest: list[np.ndarray]  # int64 [wanted groups of the batch]

    @classmethod
    def of(cls, setup: Setup, sents: Sentences) -> Prepared:
        """Look up, tokenize, align and batch a shard's sentences (in a worker, or here on one core)."""
        words = [toks for _, toks in sents]
        encs = setup.encoder.encode(words, setup.max_length, setup.prompt)
        wids = word_ids(setup.index, words)
        occ = mark_occurrences(encs, wids)
        n_occ = np.fromiter((int(m.sum()) for m in occ), np.int64, len(occ))
        first_occ = np.cumsum(n_occ) - n_occ
        batches, dest = [], []
        for rows in sorted_batches([len(e.ids) for e in encs], setup.token_budget):
            batches.append(host_batch([encs[i] for i in rows], rows, setup.pad_id))
            counts = n_occ[rows]  # a row's wanted groups are its occurrences, in order
            dest.append(
                np.repeat(first_occ[rows] - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())
            )
        return cls(
            wids=_flat(wids, np.int32),
            complete=_flat([e.complete for e in encs], np.bool_),
            occ=_flat(occ, np.bool_),
            n_words=np.fromiter(map(len, words), np.int64, len(words)),
            ids=_flat([e.ids for e in encs], np.int64),
            tok_group=_flat([e.tok_group for e in encs], np.int32),
            n_tokens=np.fromiter((len(e.ids) for e in encs), np.int64, len(encs)),
            batches=batches,
            dest=dest,
        )

    def encodings(self) -> list[Encoding]:
        """Each sentence's encoding (views of the packed arrays), for the passes that re-encode it."""
        cut_w, cut_t = np.cumsum(self.n_words)[:-1], np.cumsum(self.n_tokens)[:-1]
        return [
            Encoding(i, g, c)
            for i, g, c in zip(
                np.split(self.ids, cut_t),
                np.split(self.tok_group, cut_t),
                np.split(self.complete, cut_w),
                strict=True,
            )
        ]


def template_inputs(encoder: Encoder, words: list[str], template: str, max_length: int) -> list[Encoding]:
    """Each word inside ``template``, encoded; its one group is the word's own subwords.

    The template's other tokens belong to no group (-1): they give the word its context and are
    not pooled, and ``complete`` says whether the word itself was read whole.
    """
    parts = template.split()
    at = parts.index(WORD_SLOT)
    encs = encoder.encode([[*parts[:at], w, *parts[at + 1 :]] for w in words], max_length)
    return [
        Encoding(e.ids, np.where(e.tok_group == at, 0, -1).astype(np.int32), e.complete[at : at + 1])
        for e in encs
    ]


@dataclass
class TableChunk:
    """A chunk of the vocabulary prepared for the word tables' passes and the token table.

    ``batches``: the words inside the word template, one group each (the word), padded;
    ``embed_batches``: the words inside the embed template (none when it is off), of which the
    forward's all-token mean is read; ``pieces`` each word's own subword ids when encoded alone,
    word after word (``n_pieces`` of each), for the token table's embedding means; ``complete``:
    read whole both ways.
    """

    batches: list[HostBatch]
    embed_batches: list[HostBatch]
    pieces: np.ndarray  # int64 [pieces]
    n_pieces: np.ndarray  # int64 [words]
    complete: np.ndarray  # bool [words]

    @classmethod
    def of(cls, setup: Setup, job: tuple[list[str], str, str]) -> TableChunk:
        """Encode a chunk of words alone and inside the templates (each distinct text once)."""
        words, template, embed_template = job
        encoded = {WORD_SLOT: setup.encoder.encode([[w] for w in words], setup.max_length)}

        def inside(text: str) -> list[Encoding]:
            if text not in encoded:
                encoded[text] = template_inputs(setup.encoder, words, text, setup.max_length)
            return encoded[text]

        def padded(encs: list[Encoding]) -> list[HostBatch]:
            return [
                host_batch([encs[i] for i in rows], rows, setup.pad_id)
                for rows in sorted_batches([len(e.ids) for e in encs], setup.token_budget)
            ]

        alone, word = inside(WORD_SLOT), inside(template)
        pieces = [e.ids[e.tok_group == 0] for e in alone]
        return cls(
            batches=padded(word),
            embed_batches=[] if embed_template == EMBED_OFF else padded(inside(embed_template)),
            pieces=_flat(pieces, np.int64),
            n_pieces=np.fromiter(map(len, pieces), np.int64, len(pieces)),
            complete=np.fromiter(
                (a.complete[0] and t.complete[0] for a, t in zip(alone, word, strict=True)),
                bool,
                len(words),
            ),
        )


def serve() -> None:
    """A feeding process's loop: its :class:`Setup`, then each job's function and input in, its result out.

    Started by :class:`Feed` through :func:`~ctx2static.pipeline.child.python_argv`, with the file
    descriptors of its two pipes as arguments. The
    :data:`FROM_TERMINAL` signals are the parent's to handle (it stops the workers): they come
    blocked and the code ignores them before it imports this module, so one sent while a worker starts
    does not end it either. The jobs' pipe closing (the parent done, or killed) ends it.
    """
    os.nice(NICE)
    jobs, results = Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False)
    try:
        setup = jobs.recv()
        while True:
            prepare, item = jobs.recv()
            try:
                out = prepare(setup, item)
            except Exception as exc:  # the parent raises it
                out = exc
            results.send(out)
    except (EOFError, BrokenPipeError):
        return


class _Worker:
    """One feeding process and its two pipes (jobs in, results out)."""

    def __init__(self, setup: Setup) -> None:
        job_r, job_w = os.pipe()
        res_r, res_w = os.pipe()
        ours = tuple(map(int, FROM_TERMINAL))
        code = (
            "import signal; "
            f"[signal.signal(s, signal.SIG_IGN) for s in {ours}]; "
            f"signal.pthread_sigmask(signal.SIG_UNBLOCK, {ours}); "
            "from ctx2static.pipeline.feed import serve; serve()"
        )
        # Blocked from the fork until the code ignores them (a blocked signal then ignored is dropped),
        # so one that comes while the interpreter starts cannot end the worker; here it waits for
        # the Popen to return, then this process handles it.
        before = signal.pthread_sigmask(signal.SIG_BLOCK, FROM_TERMINAL)
        try:
            self.proc = subprocess.Popen(
                python_argv(code, str(job_r), str(res_w)),
                pass_fds=(job_r, res_w),
            )
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
        os.close(job_r)
        os.close(res_w)
        self.jobs, self.results = Connection(job_w, readable=False), Connection(res_r, writable=False)
        self.jobs.send(setup)

    def send(self, job: tuple[Callable, Any]) -> None:
        """Hand the process its next job (its end reported as :meth:`ended`)."""
        try:
            self.jobs.send(job)
        except BrokenPipeError:
            raise self.ended() from None

    def result(self) -> Any:
        """The next job's result (the job's error raised here), read as ``Connection.recv`` frames it.

        Read here, not by ``recv``, so that no wait is unbounded: a worker stopped (SIGSTOP) or hung
        halfway through writing a result of several MB would block ``recv`` for good once its first
        bytes came. Every wait for the next bytes lasts :data:`PATIENCE` seconds at most (then the
        one line of :meth:`silent`). A worker killed while it wrote its result leaves a message cut
        short, the same one line as one gone before it wrote (:meth:`ended`).
        """
        try:
            (size,) = struct.unpack("!i", self._read(4))
            if size == -1:  # multiprocessing's header of a message of 2 GiB or more
                (size,) = struct.unpack("!Q", self._read(8))
            got = pickle.loads(self._read(size))
        except (EOFError, OSError):
            raise self.ended() from None
        if isinstance(got, Exception):
            raise got
        return got

    def _read(self, n: int) -> bytes:
        """``n`` bytes of the result pipe, waiting :data:`PATIENCE` seconds at most for each next part."""
        fd, buf, waited = self.results.fileno(), bytearray(), 0.0
        while len(buf) < n:
            if not select.select([fd], [], [], 1.0)[0]:
                waited += 1.0
                if waited >= PATIENCE:
                    raise self.silent(waited)
                continue
            chunk = os.read(fd, min(n - len(buf), 1 << 24))
            if not chunk:  # the worker's end closed: it ended (what it wrote before was read first)
                raise EOFError
            buf += chunk
            waited = 0.0
        return bytes(buf)

    def silent(self, waited: float) -> UserError:
        """The one line for a worker alive but without its shard after ``waited`` seconds."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as fh:
                state = fh.read().rsplit(") ", 1)[1][0]
        except OSError:
            state = ""
        why = "stopped (SIGSTOP or a debugger)" if state in ("T", "t") else "hung"
        return UserError(
            f"extract: feeding process {self.proc.pid} is {why}: no shard from it in {waited:.0f} s; run the "
            f"same command again to resume, or with {spell('feeders', 1)}"
        )

    def ended(self) -> UserError:
        """The one line for a process gone before its job was done (killed, out of memory)."""
        return UserError(
            f"extract: a feeding process ended before its shard was ready (exit {self.proc.wait()}; -9 is "
            "often the system out of memory); run the same command again to resume, with "
            f"{spell('feeders', 1)} to use less memory"
        )

    def close(self) -> None:
        """End the process: its jobs' pipe closes, so it returns, or its next result finds no reader.

        A process that does not end then (stopped, hung) is killed.
        """
        self.jobs.close()
        self.results.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Feed:
    """Shards' sentences in, the same shards with their :class:`Prepared` inputs out, in order.

    With ``workers`` > 0 each shard is prepared in a worker process while the caller runs the
    teacher on an earlier one; with 0, in the caller's own process when it asks for the shard.
    """

    def __init__(self, setup: Setup, workers: int) -> None:
        self.setup = setup
        self.n_workers = workers
        self.workers: list[_Worker] = []

    def __enter__(self) -> Feed:
        try:
            for _ in range(self.n_workers):
                self.workers.append(_Worker(self.setup))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        workers, self.workers = self.workers, []
        for w in workers:
            w.close()

    def prepare(self, sents: Sentences) -> Prepared:
        """One shard's inputs, prepared in this process."""
        return Prepared.of(self.setup, sents)

    def shards(self, jobs: Iterable[tuple[int, Sentences]]) -> Iterator[tuple[int, Sentences, Prepared]]:
        """Each ``(index, sentences)`` job with its prepared inputs (:meth:`Prepared.of`), in order."""
        return self.map(Prepared.of, jobs)

    def map(self, prepare: Callable[[Setup, T], R], jobs: Iterable[tuple[K, T]]) -> Iterator[tuple[K, T, R]]:
        """Each ``(key, item)`` job with ``prepare(setup, item)``, in the jobs' order.

        ``prepare`` is a module-level function (the workers import it by name). Each worker holds
        one job: when its result is taken, it gets the next job before the caller gets the result,
        so it prepares while the caller runs the teacher; nothing more is read ahead.
        """
        if not self.workers:
            for key, item in jobs:
                yield key, item, prepare(self.setup, item)
            return
        it = iter(jobs)
        pending: collections.deque[tuple[K, T, _Worker]] = collections.deque()

        def give(w: _Worker) -> None:
            job = next(it, None)
            if job is not None:
                w.send((prepare, job[1]))
                pending.append((*job, w))

        for w in self.workers:
            give(w)
        while pending:
            key, item, w = pending.popleft()
            out = w.result()
            give(w)
            yield key, item, out
