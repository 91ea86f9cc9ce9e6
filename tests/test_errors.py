"""The typo hint that every unknown-name message shares (students, options, families, teachers, formats)."""

from ctx2static.errors import did_you_mean


def test_did_you_mean_names_the_closest_choice():
    assert did_you_mean("x2statc", ["x2static", "ase"]) == " (did you mean 'x2static'?)"


def test_did_you_mean_stays_quiet_when_nothing_is_close():
    assert did_you_mean("qqqq", ["x2static", "ase"]) == ""
