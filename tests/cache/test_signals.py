"""The signal table is the one place a signal is declared: what follows from it stays in step with it."""

import pytest

from ctx2static.cache.layout import SIGNALS
from ctx2static.pipeline.shard import SHARD_ARRAYS
from ctx2static.students.cache_input import CacheConfig
from ctx2static.students.registry import STUDENTS, Source, load_student, needed_signals, student_config


def test_every_shard_array_of_the_table_has_one_function_that_makes_it():
    assert set(SHARD_ARRAYS) == {name for name, s in SIGNALS.items() if s.stored == "shard"}


@pytest.mark.parametrize("name", [n for n, s in STUDENTS.items() if s.source is Source.CACHE])
def test_every_cache_student_names_its_signals_through_the_typed_base(name):
    assert issubclass(load_student(name).config, CacheConfig)
    assert set(needed_signals(name, student_config(name))) <= set(SIGNALS)


def test_a_cache_student_config_without_signals_cannot_be_made():
    class NoSignals(CacheConfig):
        pass

    with pytest.raises(TypeError, match="signals"):
        NoSignals()
