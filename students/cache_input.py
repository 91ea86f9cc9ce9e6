"""What every cache student needs from a teacher cache: signal checks and per-occurrence ids.

Students read the cache through :class:`ctx2static.cache.Cache` only (no torch, no teacher).
"""

from __future__ import annotations

from ctx2static.cache import Cache
from ctx2static.errors import UserError

# extract's flag that writes each signal (for the error message)
_FLAGS = {
    "occ_vec": "--vectors",
    "para_ctx": "--paragraph",
    "topk_ids": "--topk K",
    "attention": "--attention S",
}


def require(cache: Cache, signal: str, student: str) -> None:
    """Fail with one line when ``cache`` lacks ``signal``, naming the extract flag that adds it."""
    if signal not in cache.signals:
        flag = _FLAGS.get(signal, signal)
        raise UserError(
            f"{cache.folder}: the cache has no '{signal}', which student '{student}' needs; "
            f"run extract again with {flag}"
        )
    if cache.n_shards == 0:
        raise UserError(f"{cache.folder}: the cache has no complete shard; run extract (it resumes)")
