"""Retrofitting options: one table of defaults shared by the API, the CLI and studies (no numpy)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from enum import Enum

from ctx2static.errors import OptionError, spell
from ctx2static.options import Options, Rule, opt, rate_rule, seed_rule


class Method(str, Enum):
    """Retrofitting method."""

    FARUQUI = "faruqui"  # Faruqui et al. 2015, Eq. 1 update
    GRAPH = "graph"  # Zheng et al. 2022 (Context-to-Vec), Eq. 9-13
    ATTRACT_REPEL = "attract-repel"  # Mrksic et al. 2017 (TACL), Sec. 3


_F, _G, _A = Method.FARUQUI, Method.GRAPH, Method.ATTRACT_REPEL
READ_BY: dict[str, tuple[Method, ...]] = {
    "iterations": (_F, _G),
    "alpha": (_F,),
    **dict.fromkeys(("a", "b", "nu", "sigma"), (_G,)),
    **dict.fromkeys(
        ("epochs", "batch_size", "delta_att", "delta_rep", "l2_reg", "lr", "mix",
         "expand_antonyms", "seed"),
        (_A,),
    ),
}  # fmt: skip
"""The options only some methods read (the rest serve every method): one set for another method is
refused rather than ignored, and the help says whose each one is."""


def _of(name: str, help: str) -> str:
    """``help`` headed by the methods that read option ``name`` (``faruqui/graph: ...``)."""
    return "/".join(m.value for m in READ_BY[name]) + ": " + help


@dataclass(frozen=True)
class RetrofitConfig(Options):
    """Defaults of the papers and their reference code.

    ``alpha`` is Faruqui's weight of the original vector (beta_ij = 1/deg(i) is fixed).
    ``a``/``b`` are Context-to-Vec's a_i/b_i (Eq. 9-10); ``nu``/``sigma`` its Student-t kernel
    (Eq. 11). ``sigma = 1`` as the reference code (its ``Dist2prob`` divides the squared
    distance by ``nu`` alone), which works on unit-length vectors: squared distances lie in
    [0, 4], so the kernel weights stay informative. ``normalize`` scales every input vector to
    unit length first, as both reference implementations do on reading.

    Attract-Repel (Mrksic et al. 2017): the margins, ``l2_reg``, ``batch_size`` and ``epochs``
    are the values of the reference code's ``config/experiment_parameters.cfg``
    (github.com/nmrksic/attract-repel, which its README calls the paper's defaults); the AdaGrad
    step 0.05 and the mixed negatives (half the hardest in-batch word, half a random one) are
    that code's ``attract-repel.py``. ``seed`` fixes the batch order and the random negatives.
    That code does not normalise its input, and the angle a step turns a row through shrinks as
    the row's norm grows (the costs read directions). On unit vectors (``normalize``, our
    default for every method) 0.05 can distort the space: with WordNet on the MiniLM word table
    SimLex rose but MEN and avg5 fell, where 0.01 cost MEN little and raised avg5; only with PPDB on SGNS
    did 0.05 do better (measured: Results page, attract_repel). We keep the published 0.05 as the
    default and the docs (guides/retrofitting.md) recommend 0.01.

    ``propagate`` is post-specialisation (Vulic et al. 2018, NAACL) in its linear form: a map fitted
    on the words the method moved, applied to every other word. ``ridge`` is our choice
    (not in the paper, which trains a deep feed-forward net): an MLP map was not better for its cost
    (measured: an earlier attract_repel, in the repository at commit 683c704).
    """

    method: Method = opt(
        Method.FARUQUI,
        "faruqui (Faruqui et al. 2015), graph (Context-to-Vec Eq. 9-13), attract-repel (Mrksic et al. 2017).",
    )
    iterations: int = opt(10, _of("iterations", "update sweeps."))
    alpha: float = opt(1.0, _of("alpha", "weight of the original vector."))
    a: float = opt(0.5, _of("a", "a_i, weight of the original vector (Eq. 9)."))
    b: float = opt(0.5, _of("b", "b_i, weight of the neighbours (Eq. 9)."))
    nu: float = opt(100.0, _of("nu", "Student-t degrees of freedom (Eq. 11)."))
    sigma: float = opt(1.0, _of("sigma", "kernel scale."))
    epochs: int = opt(5, _of("epochs", "passes over the pairs (reference code)."))
    batch_size: int = opt(50, _of("batch_size", "pairs per mini-batch (reference code)."))
    delta_att: float = opt(0.6, _of("delta_att", "attract margin delta_att (reference code)."))
    delta_rep: float = opt(0.0, _of("delta_rep", "repel margin delta_rep (reference code)."))
    l2_reg: float = opt(1e-9, _of("l2_reg", "lambda_reg, weight of ||x_init - x||^2 (reference code)."))
    lr: float = opt(
        0.05, _of("lr", "AdaGrad learning rate (reference code; 0.01 suits unit-length vectors better).")
    )
    mix: float = opt(0.5, _of("mix", "chance that a negative is a random in-batch word, not the hardest."))
    expand_antonyms: bool = opt(
        False, _of("expand_antonyms", "also repel each word from its antonyms' synonyms.")
    )
    seed: int = opt(0, _of("seed", "random seed (batch order, random negatives)."))
    propagate: bool = opt(False, "Post-specialisation: map the words without pairs too (Vulic et al. 2018).")
    ridge: float = opt(1.0, "propagate: ridge weight pulling the fitted map towards the identity.")
    normalize: bool = opt(True, "Scale input vectors to unit length first (Faruqui's and Zheng's codes do).")

    def rules(self) -> Iterable[Rule]:
        """Weights positive, counts counts, the mixing share a probability, the AdaGrad rate in (0, 1)."""
        return [
            ("iterations", self.iterations >= 0, ">= 0"),
            ("epochs", self.epochs >= 0, ">= 0"),
            ("batch_size", self.batch_size >= 2, ">= 2 (negatives come from the other pairs of a batch)"),
            ("mix", 0.0 <= self.mix <= 1.0, "in [0, 1]"),
            ("l2_reg", self.l2_reg >= 0, ">= 0"),
            ("ridge", self.ridge >= 0, ">= 0"),
            rate_rule("lr", self.lr),
            seed_rule(self.seed),
            *((name, getattr(self, name) > 0, "> 0") for name in ("alpha", "a", "b", "nu", "sigma")),
            *(
                (
                    name,
                    False,
                    f"left at its default: only {'/'.join(m.value for m in READ_BY[name])} reads it, "
                    f"and this run's method is {self.method.value}",
                )
                for name in self.foreign()
            ),
        ]

    def foreign(self) -> list[str]:
        """The options changed from their defaults that this run's method does not read."""
        defaults = {f.name: f.default for f in fields(self)}
        return [
            name
            for name, methods in READ_BY.items()
            if self.method not in methods and getattr(self, name) != defaults[name]
        ]

    def method_options(self) -> dict[str, object]:
        """The options this run's method reads, as they are saved and shown (``-v``)."""
        return {k: v for k, v in self.to_dict().items() if self.method in READ_BY.get(k, (self.method,))}

    def check_antonyms(self, antonyms: Sequence[object]) -> None:
        """Antonym lexicons are read by attract-repel only; giving them to another method is a mistake."""
        if antonyms and self.method is not Method.ATTRACT_REPEL:
            raise OptionError(
                f"antonym lexicons are used by {spell('method', 'attract-repel')} only, not "
                f"{self.method.value}; "
                "drop the antonyms or choose attract-repel",
                "antonyms",
                "method",
            )
