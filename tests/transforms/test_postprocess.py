import numpy as np
import pytest

from ctx2static.errors import UserError
from ctx2static.transforms.postprocess import all_but_the_top


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


def test_dimension_stats_stream_blocks_and_zscore():
    from ctx2static.transforms.postprocess import DimensionStats

    rng = np.random.default_rng(2)
    x = rng.normal(size=(50, 4)) * [1, 2, 3, 0] + [0, 5, -1, 7]  # the last dimension is constant
    stats = DimensionStats.of_rows([x[:7], x[7:30], x[30:]])
    np.testing.assert_allclose(stats.mean, x.mean(0), atol=1e-12)
    np.testing.assert_allclose(stats.std, x.std(0), atol=1e-9)
    energy = (x**2).mean(0)
    assert stats.rogue_ratio == pytest.approx(energy.max() / np.median(energy))
    z = stats.zscore(x)
    assert z.dtype == np.float32
    np.testing.assert_allclose(z[:, :3].mean(0), 0, atol=1e-6)
    np.testing.assert_allclose(z[:, :3].std(0), 1, atol=1e-5)
    assert not z[:, 3].any()  # a constant dimension carries nothing: 0, not a division by 0


@pytest.mark.parametrize(
    ("ratio", "mode", "wanted"),
    [(1001, "auto", True), (999, "auto", False), (1.0, "on", True), (1e6, "off", False)],
)
def test_auto_standardizes_above_the_rogue_ratio(ratio, mode, wanted):
    from ctx2static.transforms.postprocess import ROGUE_RATIO, DimensionStats, Standardize

    assert ROGUE_RATIO == 1000
    # 3 dimensions of energy 1 and one of energy `ratio`: max / median = ratio
    x = np.array([[1, 1, 1, np.sqrt(ratio)], [-1, -1, -1, -np.sqrt(ratio)]])
    assert DimensionStats.of_rows([x]).wanted(Standardize(mode)) is wanted
