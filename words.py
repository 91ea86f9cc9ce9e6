"""How text becomes words: one pattern for the corpus reader, :meth:`Vectors.encode` and the exports.

It sits below the text layer because the vectors, which sit lowest, encode texts the way the
corpus they were trained on was read: a sentence split otherwise would look up other words.
"""

from __future__ import annotations

import re

# A word: letters/digits with inner hyphens or apostrophes ("half-brothers", "don't");
# any other non-space character is a token of its own (punctuation is split off).
TOKEN = re.compile(r"\w+(?:[-'’]\w+)*|[^\w\s]+", re.UNICODE)


def tokenize(line: str, lowercase: bool = True) -> list[str]:
    """Split a sentence into words, splitting off punctuation."""
    if lowercase:
        line = line.lower()
    return TOKEN.findall(line)
