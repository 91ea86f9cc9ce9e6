"""What the names in a results table mean: each bundled set, each metric, each loss a curve plots.

A study report shows set names (``ws353_rel``, ``essli2008``), metrics (``3CosMul acc``) and loss
labels (``online NS loss``) that a newcomer has not met; :func:`defined` gives the line of each
one a text uses, so the report defines what it shows and nothing else. A bundled set without a
line here fails ``tests/eval/test_terms.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

GLOSSARY = "the Glossary page of the documentation (docs/glossary.md in a clone)"
"""Where the terms of the whole tool are defined: a report names it, it has no fixed address."""

SETS: dict[str, str] = {
    "ws353": "WordSim-353 (Finkelstein et al. 2002): 353 word pairs rated 0-10 for relatedness by people",
    "ws353_sim": "WS353's similarity half (Agirre et al. 2009): pairs alike in meaning (car ~ automobile)",
    "ws353_rel": "WS353's relatedness half (Agirre et al. 2009): pairs related but not alike (cup ~ coffee)",
    "simlex999": "SimLex-999 (Hill et al. 2015): 999 pairs rated for similarity only; related is not similar",
    "men3k": "MEN (Bruni et al. 2014): 3,000 pairs of common words rated for relatedness",
    "rw": "Rare Words (Luong et al. 2013): 2,034 pairs of rare words, most outside a small vocabulary",
    "rg65": "RG-65 (Rubenstein and Goodenough 1965): 65 noun pairs rated for similarity",
    "mturk287": "MTurk-287 (Radinsky et al. 2011): 287 pairs rated for relatedness on Mechanical Turk",
    "google": "Google analogies (Mikolov et al. 2013): 19,544 questions a : b :: c : ?; semantic "
    "(capitals, family) and syntactic (plurals, tenses) halves",
    "msr": "MSR analogies (Mikolov et al. 2013): 8,000 syntactic questions a : b :: c : ?",
    "ap": "AP (Almuhareb and Poesio 2005): 423 nouns in 21 classes (illnesses, ...), to cluster",
    "battig": "Battig (Battig and Montague 1969 category norms): 5,231 words in 56 classes, to cluster",
    "essli2008": "ESSLLI-2008 (the verb task of that summer school's lexical semantics workshop): "
    "45 verbs in 9 classes, to cluster",
}
"""One line per bundled benchmark set, by the name its table row has."""

TERMS: dict[str, str] = {
    "avg5": "the mean Spearman of ws353, simlex999, men3k, rw and rg65: the headline number",
    "spearman": "the rank correlation (x100) between the vectors' cosines and people's scores",
    "3CosAdd": "an analogy a : b :: c : ? answered by the word nearest b - a + c (Mikolov et al. 2013)",
    "3CosMul": "an analogy a : b :: c : ? answered by the word d with the largest cos(d,b) cos(d,c) / "
    "cos(d,a), where no one large cosine can dominate (Levy and Goldberg 2014)",
    "purity": "the share of words whose cluster's majority class is their own class (x100)",
    "online NS loss": "word2vec's negative-sampling loss, averaged over the pairs (or centre words) as "
    "each is trained, not recomputed after the epoch",
    "cost J": "GloVe's weighted least-squares cost, averaged over the co-occurrence counts that are not zero",
}
"""Metrics and loss labels, by the words a table, a note or a curve's axis uses."""


def defined(texts: Iterable[str]) -> list[tuple[str, str]]:
    """``(name, line)`` of each set and term that ``texts`` use, sets first, in the tables' order.

    A set counts when a table row names it (``| ws353 |``, ``| google/semantic |``); a term when
    it occurs as words (``online NS loss per pair``).
    """
    text = "\n".join(texts)
    sets = [(n, line) for n, line in SETS.items() if re.search(rf"\| {re.escape(n)}(/\w+)? \|", text)]
    terms = [(n, line) for n, line in TERMS.items() if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text)]
    return sets + terms
