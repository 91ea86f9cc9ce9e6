import numpy as np
import pytest

from ctx2static.errors import UserError
from ctx2static.students.postprocess import all_but_the_top


def test_centres_and_removes_the_dominant_direction():
    rng = np.random.default_rng(0)
    common = np.array([3.0, -4.0, 0.0, 0.0])  # a shared offset plus one dominant direction
    strong = np.array([0.0, 0.0, 1.0, 0.0])
    x = common + rng.normal(size=(200, 1)) * 10 * strong + rng.normal(size=(200, 4)) * 0.1
    centred = all_but_the_top(x, 0)
    np.testing.assert_allclose(centred.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(centred, x - x.mean(0), atol=1e-12)
    out = all_but_the_top(x, 1)
    assert np.abs(out @ strong).max() < 0.05  # the high-variance direction is gone
    # what is left is the small noise in the other coordinates, untouched up to the tiny tilt of u_1
    np.testing.assert_allclose(out[:, [0, 1, 3]], centred[:, [0, 1, 3]], atol=0.05)


def test_keeps_dtype_and_rejects_bad_d():
    x = np.random.default_rng(1).normal(size=(10, 3)).astype(np.float32)
    assert all_but_the_top(x, 2).dtype == np.float32
    with pytest.raises(UserError, match="abtt=3"):
        all_but_the_top(x, 3)
