"""Peak resident memory of a block: a 200 MB array allocated and freed inside it is seen; heap trims."""

import sys

import numpy as np
import pytest

from ctx2static import memory
from ctx2static.errors import UserError
from ctx2static.memory import HeapTrim, PeakRss, current_rss, release_freed


def test_a_transient_allocation_shows_in_the_peak_and_not_after():
    before = current_rss()
    with PeakRss(interval=0.01) as peak:
        block = np.ones(200 * 2**20 // 8)  # 200 MiB, touched
        block.sum()
        del block
    # after many tests the heap may keep the freed block; steps trim it as the product does
    release_freed()
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


def test_available_memory_is_the_least_of_the_machine_the_container_and_the_ulimit(monkeypatch, tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:  8000000 kB\nMemAvailable:  4000000 kB\n")
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    (cgroup / "memory.max").write_text("3000000000\n")
    (cgroup / "memory.current").write_text("2500000000\n")
    (cgroup / "memory.stat").write_text("anon 1\ninactive_file 500000000\n")
    monkeypatch.setattr(memory, "_MEMINFO", meminfo)
    monkeypatch.setattr(memory, "_CGROUP_V2", cgroup)
    monkeypatch.setattr(memory, "_CGROUP_V1", tmp_path / "absent")
    monkeypatch.setattr(memory, "_address_space_headroom", lambda: None)
    assert memory.available_bytes() == 1_000_000_000  # 3 GB limit, 2.5 GB used of which 0.5 GB cache
    (cgroup / "memory.max").write_text("max\n")  # no container limit: the machine decides
    assert memory.available_bytes() == 4_000_000 * 1024
    monkeypatch.setattr(memory, "_MEMINFO", tmp_path / "absent")
    assert memory.available_bytes() is None


def test_check_fits_refuses_in_one_line_naming_what_and_the_fix(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 2 * 2**30)
    memory.check_fits(2**30, "--dim 300", "lower --dim")  # fits: nothing happens
    with pytest.raises(UserError) as err:
        memory.check_fits(3 * 2**40, "--dim 200000", "lower --dim")
    line = "--dim 200000 needs about 3 TiB of memory, more than the 2 GiB available: lower --dim"
    assert str(err.value) == line
    monkeypatch.setattr(memory, "available_bytes", lambda: None)
    memory.check_fits(3 * 2**40, "--dim 200000", "lower --dim")  # unknown: not refused
