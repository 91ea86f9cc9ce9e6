"""`Vectors`: the one type every stage passes on (words, float32 matrix, counts, metadata).

A module a job: the table and its queries (:mod:`.table`), the files it is read from and written
to (:mod:`.formats`), the metadata every file is checked against (:mod:`.meta`), the guards of a
vectors output (:mod:`.outputs`) and the options of a sentence encoding (:mod:`.encoding`).
"""

from ctx2static.vectors.meta import VectorsMeta
from ctx2static.vectors.table import Vectors

__all__ = ["Vectors", "VectorsMeta"]
