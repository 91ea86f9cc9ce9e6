"""What cache students read besides their own signals: corpus ids, word means, start tables.

Students read the cache through :class:`ctx2static.cache.Cache` only (no torch, no teacher).
"""

from __future__ import annotations

import enum
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from ctx2static.cache import Cache
from ctx2static.errors import UserError
from ctx2static.text.encoded import EncodedCorpus


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


def occurrence_means(cache: Cache, desc: str = "ase", threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Per vocabulary word: the mean of its cached contextual vectors (``occ_vec``), and how many.

    Streams the shards, ``threads`` at a time (reading and the float16 cast run side by side): a
    sparse word-by-occurrence sum over the words each shard holds, added to the totals under a
    lock. Words never seen aligned get a zero row and a count of 0.
    """
    import torch  # its float16 cast is 3-4x numpy's; imported only by the students that read vectors

    n_words = len(cache.vocab)
    sums = np.zeros((n_words, cache.shard(0, ["occ_vec"])["occ_vec"].shape[1]))
    seen = np.zeros(n_words, dtype=np.int64)
    lock = threading.Lock()

    def add(index: int) -> None:
        shard = cache.shard(index, ["occ_vec"])
        words, rows = np.unique(shard["word_ids"][shard.occurrences()], return_inverse=True)
        vecs = torch.from_numpy(shard["occ_vec"]).float().numpy()
        member = sp.csr_matrix(
            (np.ones(len(rows), np.float32), (rows, np.arange(len(rows)))), (len(words), len(rows))
        )
        part = member @ vecs
        with lock:
            sums[words] += part
            seen[words] += np.bincount(rows)

    with ThreadPoolExecutor(max(threads, 1)) as pool:
        jobs = pool.map(add, range(cache.n_shards))
        for _ in tqdm(jobs, total=cache.n_shards, desc=desc, file=sys.stderr):
            pass
    return (sums / np.maximum(seen, 1)[:, None]).astype(np.float32), seen


class Init(str, enum.Enum):
    """Where a student's static table starts: its own random init, or a teacher table."""

    RANDOM = "random"
    WORD = "word"
    TOKEN = "token"
    ASE = "ase"  # the average contextual vectors (words never seen: the ``word`` table)
    AUTO = "auto"  # ``ase`` when the cache has per-occurrence vectors, else ``word``


def init_signals(init: Init) -> tuple[str, ...]:
    """The cache signals a start table needs (``ase`` reads the per-occurrence vectors)."""
    return ("occ_vec",) if Init(init) is Init.ASE else ()


def teacher_init(cache: Cache, init: Init, dim: int, threads: int = 1) -> np.ndarray | None:
    """The cache's ``word``/``token``/``ase`` table as a start for a ``dim``-wide static table.

    ``auto`` (the students' default: it won on every student measured, see the README) is ``ase``
    when the cache has ``occ_vec``, else ``word``. Projected onto its top ``dim`` principal
    directions when the teacher is wider (centred first), then scaled to a mean row norm of 1.
    ``random`` returns None (the student's own init). The ase pass reads ``threads`` shards at a time.
    """
    init = Init(init)
    if init is Init.AUTO:
        init = Init.ASE if "occ_vec" in cache.signals else Init.WORD
    if init is Init.RANDOM:
        return None
    if init is Init.ASE:
        means, seen = occurrence_means(cache, "init=ase", threads)
        table = np.where(seen[:, None] > 0, means, cache.vocab_arrays()["word_emb"]).astype(np.float64)
    else:
        table = cache.vocab_arrays()[f"{init.value}_emb"].astype(np.float64)
    if table.shape[1] < dim:
        raise UserError(
            f"--set init={init.value}: the teacher table is {table.shape[1]}-d, narrower than dim={dim}"
        )
    if table.shape[1] > dim:
        centred = table - table.mean(0)
        # the top principal directions from the small (d x d) scatter matrix, not an SVD of the whole
        # table (seconds for a large vocabulary); each direction's largest coefficient made positive
        _, vecs = np.linalg.eigh(centred.T @ centred)
        top = vecs[:, ::-1][:, :dim]
        top = top * np.sign(top[np.abs(top).argmax(0), np.arange(dim)])
        table = centred @ top
    table /= np.linalg.norm(table, axis=1).mean()
    return table.astype(np.float32)
