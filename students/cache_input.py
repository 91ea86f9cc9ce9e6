"""What cache students read: the signals their config names, corpus ids, word means, start tables.

Students read the cache through :class:`ctx2static.cache.Cache` only (no torch, no teacher).
"""

from __future__ import annotations

import abc
import enum
import logging
from dataclasses import dataclass

import numpy as np

from ctx2static.cache import Cache
from ctx2static.errors import OptionError, spell
from ctx2static.options import Options, opt
from ctx2static.text.encoded import EncodedCorpus
from ctx2static.transforms.postprocess import DimensionStats, Standardize

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CacheConfig(Options, abc.ABC):
    """Base of every cache student's config: it names the signals a run reads.

    The registry checks them against the cache's (or, in a study, the teacher's extract options)
    before any work, so a run never fails late for a signal the cache lacks.
    """

    @abc.abstractmethod
    def signals(self) -> tuple[str, ...]:
        """The per-shard signals this run reads (names in :data:`ctx2static.cache.layout.SIGNALS`)."""


@dataclass(frozen=True)
class TeacherSpaceConfig(CacheConfig):
    """A cache student whose table lives in the teacher's dimensions: ase, word, token, x2static, sentence."""

    standardize: Standardize = opt(
        Standardize.AUTO,
        "Z-score the teacher's dimensions (rogue dimensions, transforms/postprocess.py): auto = when "
        "one carries over 1,000x the median dimension's energy.",
    )


def encoded_corpus(cache: Cache) -> EncodedCorpus:
    """The cache's sentences as word ids (out-of-vocabulary words dropped), for window students."""
    ids, starts, paras, base = [], [np.zeros(1, np.int64)], [], 0
    for shard in cache.shards([]):
        off = shard["sent_offsets"]
        wid = shard["word_ids"]
        known = wid >= 0
        kept_before = np.concatenate([[0], np.cumsum(known)])[off]
        ids.append(wid[known].astype(np.int32))
        starts.append(base + kept_before[1:])
        paras.append(shard["sent_para"])
        base += int(kept_before[-1])
    return EncodedCorpus(np.concatenate(ids), np.concatenate(starts), np.concatenate(paras))


def occurrence_means(cache: Cache) -> tuple[np.ndarray, np.ndarray]:
    """Per vocabulary word: the mean of its contextual vectors over the corpus (ASE), and how many.

    Read from the per-word sums the teacher stage accumulates (``occ_sum``/``occ_count``); words
    never seen aligned get a zero row and a count of 0.
    """
    sums, counts = cache.word_sums()
    return (sums / np.maximum(counts, 1)[:, None]).astype(np.float32), counts


class Init(str, enum.Enum):
    """Where a student's static table starts: its own random init, or a teacher table."""

    RANDOM = "random"
    WORD = "word"
    TOKEN = "token"
    ASE = "ase"  # the average contextual vectors (words never seen: the ``word`` table)
    AUTO = "auto"  # the default: ``ase``


def teacher_table(cache: Cache, init: Init, zscore: DimensionStats | None = None) -> np.ndarray:
    """The cache's ``word``/``token``/``ase`` table (``auto``: ``ase``) in the teacher's scale, float64.

    ``ase`` rows of words never seen aligned are their ``word`` rows. With ``zscore`` each
    dimension is z-scored with those statistics.
    """
    init = Init.ASE if Init(init) is Init.AUTO else Init(init)
    if init is Init.RANDOM:
        raise ValueError("a random start has no teacher table")
    if init is Init.ASE:
        means, seen = occurrence_means(cache)
        table = np.where(seen[:, None] > 0, means, cache.vocab_arrays()["word_emb"]).astype(np.float64)
    else:
        table = cache.vocab_arrays()[f"{init.value}_emb"].astype(np.float64)
    return table if zscore is None else zscore.zscore(table).astype(np.float64)


def context_stats(cache: Cache, key: str, mode: Standardize, student: str) -> DimensionStats | None:
    """Per-dimension statistics of the cached contexts ``key`` (one streamed pass), unless ``mode`` is off.

    The students that train against contexts z-score them and their start table with these, so
    both share one coordinate system; a log line says when ``mode`` asks for it.
    """
    if Standardize(mode) is Standardize.OFF:
        return None
    stats = DimensionStats.of_rows(cache.shard(i, [key])[key] for i in range(cache.n_shards))
    if stats.wanted(mode):
        log.info(
            "%s: a teacher dimension carries %.0fx the median dimension's energy: contexts and "
            "start table z-scored (standardize=%s)",
            student,
            stats.rogue_ratio,
            Standardize(mode).value,
        )
    return stats


def teacher_init(
    cache: Cache, init: Init, dim: int, zscore: DimensionStats | None = None
) -> np.ndarray | None:
    """The cache's ``word``/``token``/``ase`` table as a start for a ``dim``-wide static table.

    ``auto`` (the students' default: it won on every student measured; docs/guides/students.md) is ``ase``.
    With ``zscore`` each dimension is first z-scored with those statistics: the contexts' the student
    trains on, so its start rows and E_ctx share one coordinate system (it beat z-scoring the table
    with its own statistics; measured: Results page, rogue_dimensions).
    Projected onto its top ``dim`` principal directions when the teacher is wider (centred
    first; directions the table does not span are 0), then scaled to a mean row norm of 1.
    ``random`` returns None (the student's own init).
    """
    init = Init(init)
    if init is Init.RANDOM:
        return None
    table = teacher_table(cache, init, zscore)
    if table.shape[1] < dim:
        raise OptionError(
            f"{spell('init', init.value, via_set=True)}: the teacher table is {table.shape[1]}-d, "
            f"narrower than {spell('dim', dim)}",
            "init",
            "dim",
        )
    if table.shape[1] > dim:
        centred = table - table.mean(0)
        # the top principal directions from the small (d x d) scatter matrix, not an SVD of the whole
        # table (seconds for a large vocabulary); each direction's largest coefficient made positive
        vals, vecs = np.linalg.eigh(centred.T @ centred)
        top = vecs[:, ::-1][:, :dim]
        top = top * np.sign(top[np.abs(top).argmax(0), np.arange(dim)])
        table = centred @ top
        table[:, vals[::-1][:dim] <= 1e-9 * vals.max()] = 0  # fewer words than dim: unspanned directions
    table /= np.linalg.norm(table, axis=1).mean()
    return table.astype(np.float32)
