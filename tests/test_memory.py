"""Peak resident memory of a block: a 200 MB array allocated and freed inside it is seen."""

import numpy as np

from ctx2static.memory import PeakRss, current_rss


def test_a_transient_allocation_shows_in_the_peak_and_not_after():
    before = current_rss()
    with PeakRss(interval=0.01) as peak:
        block = np.ones(200 * 2**20 // 8)  # 200 MiB, touched
        block.sum()
        del block
    assert peak.bytes - before > 150 * 2**20
    with PeakRss(interval=0.01) as quiet:
        np.ones(10).sum()
    assert quiet.bytes - before < 100 * 2**20  # the freed block is not counted in a later step
    assert quiet.megabytes == quiet.bytes / 2**20
