"""`retrofit_file`: a vectors file in, its retrofitted copy out (``ctx2static retrofit``)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path

from ctx2static.retrofit.config import Method, RetrofitConfig
from ctx2static.retrofit.lexicon import resolve_lexicon
from ctx2static.retrofit.solver import retrofit_vectors
from ctx2static.vectors import Vectors
from ctx2static.vectors.outputs import check_replace, check_vectors_output, made_by, stored_meta, vector_files
from ctx2static.vectors.table import NonFinite

log = logging.getLogger(__name__)

OBJECTIVE = {
    Method.FARUQUI: "Faruqui's Psi",
    Method.GRAPH: "Context-to-Vec's Psi",
    Method.ATTRACT_REPEL: "Attract-Repel's cost",
}
"""What each method's objective is called in the summary line."""


def retrofit_file(
    vectors: str | os.PathLike,
    lexicons: Sequence[str],
    antonyms: Sequence[str],
    out: str | os.PathLike,
    config: RetrofitConfig,
    nonfinite: NonFinite | str = NonFinite.ERROR,
    overwrite: bool = False,
) -> Path:
    """Retrofit the vectors at ``vectors`` to ``lexicons`` (and ``antonyms``), save them at ``out``.

    Checked before the vectors load: the antonyms' method, every lexicon name, the output
    (writable, no input, not another maker's vectors unless ``overwrite``). Logs a summary line.
    """
    config.check_antonyms(antonyms)
    for name in (*lexicons, *antonyms):  # a mistyped name fails before the vectors load
        resolve_lexicon(name)
    source = stored_meta(vectors) or {}
    steps = [*(source.get("retrofit") or []), {"method": config.method.value}]
    maker = made_by({**source, "retrofit": steps})
    check_vectors_output(out, [*vector_files(vectors), *lexicons, *antonyms])
    check_replace(out, maker, overwrite)
    log.debug("retrofit: %s", config.method_options())
    start = time.perf_counter()
    result, trace = retrofit_vectors(Vectors.load(vectors, nonfinite=nonfinite), lexicons, config, antonyms)
    path = result.save(out)
    info = result.meta["retrofit"][-1]
    log.info(
        "retrofit (%s): %s of %s words moved, %s lexicon edges, objective %.4g -> %.4g (%s; lower fits "
        "the lexicons better), %.1f s -> %s",
        config.method.value, f"{info['words_with_neighbours']:,}", f"{len(result):,}", f"{info['edges']:,}",
        trace[0], trace[-1], OBJECTIVE[config.method], time.perf_counter() - start, out,
    )  # fmt: skip
    if "propagate" in info:
        propagated = info["propagate"]
        log.info(
            "propagate: map fitted on %d words (mean cosine %.3f), applied to the other %d",
            propagated["fitted_on"],
            propagated["fit_cosine"],
            len(result) - propagated["fitted_on"],
        )
    return path
