"""Peak resident memory of a block: a 200 MB array allocated and freed inside it is seen; heap trims."""

import sys

import numpy as np
import pytest

from ctx2static import memory
from ctx2static.memory import HeapTrim, PeakRss, current_rss, release_freed


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


def test_the_heap_is_trimmed_once_it_grew_the_slack_and_the_base_follows_what_stays(monkeypatch):
    rss = iter([1000, 1050, 1120, 900, 1020, 1030, 980, 1100, 990])  # what each call to current_rss reads
    trims = []
    monkeypatch.setattr(memory, "current_rss", lambda: next(rss))
    monkeypatch.setattr(memory, "release_freed", lambda: trims.append(True) or True)
    trim = HeapTrim(slack=100)  # trims what earlier loops left, then reads its base: 1000
    assert len(trims) == 1 and trim.base == 1000
    trim()  # 1050: within the slack
    assert len(trims) == 1 and trim.base == 1000
    trim()  # 1120: trimmed, 900 stays in use
    assert len(trims) == 2 and trim.base == 900
    trim()  # 1020: more than the slack above 900: trimmed, 1030 is in use
    assert len(trims) == 3 and trim.base == 1030
    trim()  # 980: memory was freed for good; the base goes down with it
    assert len(trims) == 3 and trim.base == 980
    trim()  # 1100: 120 above 980
    assert len(trims) == 4


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's (Linux)")
def test_release_freed_calls_the_c_library_on_linux():
    assert release_freed() is True
