"""The metadata keys checked when vectors are opened are the documented ones (VectorsMeta)."""

from ctx2static.vectors import VectorsMeta
from ctx2static.vectors.meta import META_SCHEMA


def test_every_checked_key_is_a_documented_key():
    assert not VectorsMeta.__required_keys__
    assert set(META_SCHEMA) <= VectorsMeta.__optional_keys__
