"""One Unicode form for every text that comes in (corpus, vocabulary lists, benchmarks, lexicons).

Text in NFD spells "café" as ``cafe`` plus a combining acute accent (U+0301); split on anything but
letters, the accent becomes a word of its own and "cafe" is counted for "café". NFC composes each
letter with its marks, so the same word is the same string whichever form a file was saved in; it
changes no character that has no composed form (NFKC would also fold ligatures and full-width forms,
which a teacher's tokenizer may keep apart, so it is not used).
"""

from __future__ import annotations

import unicodedata


def nfc(text: str) -> str:
    """``text`` in Unicode normal form C (a no-op, and cheap, for text that is already NFC)."""
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)
