"""Brown and Penn Treebank tags mapped to the 12 universal tags of Petrov, Das & McDonald (2012).

"A Universal Part-of-Speech Tagset" (LREC 2012) defines NOUN, VERB, ADJ, ADV, PRON, DET, ADP,
NUM, CONJ, PRT, ``.`` (punctuation) and X. The Penn table is theirs (``en-ptb.map``). The Brown
table is written here on the same principles, base tag by base tag (Francis & Kučera's tagset as
in the Brown Corpus Manual): determiners and pre-quantifiers are DET, pre-qualifiers and
qualifiers ADV, subordinating conjunctions ADP (Penn's IN), ``to`` and particles PRT, every form
of be/have/do and the modals VERB, ordinals and post-determiners (``first``, ``many``) ADJ (Penn
tags them JJ), ``not``/``n't`` (``*``) ADV (Penn's RB), foreign words and interjections X.

A full Brown tag is reduced to its base before the lookup (:func:`brown_base`): the title,
headline and cited-word suffixes go (``np-tl`` -> ``np``), a foreign word (``fw-...``) is ``fw``,
a contraction keeps its first part (``pps+bez`` -> ``pps``, ``vb+ppo`` -> ``vb``), and a
negated verb its verb (``bez*`` -> ``bez``); possessives (``np$``) map as their base noun.
"""

from __future__ import annotations

UNIVERSAL = ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", ".", "X")
"""The 12 universal tags (Petrov et al. 2012, Table 1)."""

_BROWN_GROUPS = {
    ".": ". , : ( ) -- ' '' ``",
    "ADJ": "jj jjr jjs jjt od ap",
    "ADP": "in cs",
    "ADV": "rb rbr rbt rn ql qlp wql wrb abl *",
    "CONJ": "cc",
    "DET": "at abn abx dt dti dts dtx ex wdt",
    "NOUN": "nn nns np nps nr nrs",
    "NUM": "cd",
    "PRON": "pn pp$ pp$$ ppl ppls ppo pps ppss wp$ wpo wps",
    "PRT": "rp to",
    "VERB": "vb vbd vbg vbn vbz md be bed bedz beg bem ben ber bez do dod doz hv hvd hvg hvn hvz",
    "X": "fw uh nil",
}
BROWN_UNIVERSAL: dict[str, str] = {t: u for u, tags in _BROWN_GROUPS.items() for t in tags.split()}
"""Brown base tag -> universal tag (every base tag of the tagged Brown corpus)."""

_PTB_GROUPS = {
    ".": "! # $ '' ( ) , -LRB- -RRB- . : ? ``",
    "ADJ": "JJ JJR JJRJR JJS JJ|RB JJ|VBG",
    "ADP": "IN IN|RP",
    "ADV": "RB RBR RBS RB|RP RB|VBG WRB",
    "CONJ": "CC",
    "DET": "DT DT. EX PDT WDT",
    "NOUN": "NN NNP NNPS NNS NN|NNS NN|SYM NN|VBG NP",
    "NUM": "CD",
    "PRON": "PRP PRP$ PRP|VBP WP WP$",
    "PRT": "POS PRT RP TO",
    "VERB": "MD V VB VBD VBD|VBN VBG VBG|NN VBN VBP VBP|TO VBZ VP",
    "X": "CD|RB FW LS RN SYM UH WH",
}
PTB_UNIVERSAL: dict[str, str] = {t: u for u, tags in _PTB_GROUPS.items() for t in tags.split()}
"""Penn Treebank tag -> universal tag: Petrov et al.'s en-ptb.map (12-tag version), entry for entry."""


def brown_base(tag: str) -> str:
    """The base of a full Brown tag: ``np-tl`` -> ``np``, ``fw-nn`` -> ``fw``, ``pps+bez`` -> ``pps``."""
    tag = tag.lower()
    if tag.startswith("fw-"):
        return "fw"
    for suffix in ("-tl", "-hl", "-nc"):
        tag = tag.replace(suffix, "")
    tag = tag.split("+")[0]
    if len(tag) > 1 and tag.endswith("*"):  # negated forms: bez* (isn't), md* (can't)
        tag = tag[:-1]
    return tag


def brown_universal(tag: str) -> str:
    """Universal tag of a full Brown tag; possessive ``$`` forms map as their base. Unknown: KeyError."""
    base = brown_base(tag)
    if base not in BROWN_UNIVERSAL and base.endswith("$"):
        base = base[:-1]
    return BROWN_UNIVERSAL[base]


def ptb_universal(tag: str) -> str:
    """Universal tag of a Penn Treebank tag (Petrov et al.'s en-ptb.map). Unknown: KeyError."""
    return PTB_UNIVERSAL[tag]
