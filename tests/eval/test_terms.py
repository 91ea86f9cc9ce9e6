"""eval/terms.py: every bundled set and every loss a curve plots has its line for the report."""

from pathlib import Path

from ctx2static.eval.families import FAMILIES
from ctx2static.eval.terms import SETS, TERMS, defined
from ctx2static.students.registry import STUDENTS


def test_every_bundled_set_has_a_line():
    bundled = {Path(f).name.split(".")[0] for spec in FAMILIES.values() for f in spec.bundled or ()}
    assert bundled and bundled <= set(SETS), bundled - set(SETS)


def test_every_loss_a_training_curve_names_beyond_a_plain_loss_is_defined():
    labels = {s.loss_label for s in STUDENTS.values() if s.loss_label}
    special = {label for label in labels if not label.startswith(("loss per ", "in-batch loss per "))}
    assert special and all(any(term in label for term in TERMS) for label in special), special


def test_a_set_counts_where_a_row_names_it_and_a_term_where_its_words_occur():
    found = dict(
        defined(["| google/syntactic | 3CosAdd acc | 40 |", "online NS loss per pair", "| rws | x |"])
    )
    assert set(found) == {"google", "3CosAdd", "online NS loss"}
