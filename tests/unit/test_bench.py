"""The benchmarks' arithmetic: ratios taken within each run, per-step medians, bytes per source."""

from __future__ import annotations

import os
from pathlib import Path

from bench.common import cpu_busy_seconds, median_table, mirror_bytes, network_bytes, per_step_medians, ratio


def test_ratio_is_the_median_of_ratios_within_runs_not_of_medians() -> None:
    # run by run: 2/1, 4/4, 6/3 -> 2, 1, 2 -> 2 (the medians' ratio would be 4/3)
    assert ratio([2.0, 4.0, 6.0], [1.0, 4.0, 3.0]) == 2.0


def test_median_table_shows_each_row_against_the_reference() -> None:
    table = median_table("case", {"one": [10.0, 12.0, 11.0], "four": [15.0, 18.0, 22.0]}, ref="one")
    lines = table.splitlines()
    assert lines[0] == "| case (median of 3) | s | min | max | vs one |"
    assert lines[2] == "| one | 11.0 | 10.0 | 12.0 | 100% |"
    assert lines[3] == "| four | 18.0 | 15.0 | 22.0 | 150% |"


def test_per_step_medians_keep_the_first_runs_order() -> None:
    runs = [
        [{"step": "b", "seconds": 1.0}, {"step": "a", "seconds": 5.0}],
        [{"step": "b", "seconds": 3.0}, {"step": "a", "seconds": 7.0}],
    ]
    assert list(per_step_medians(runs).items()) == [("b", 2.0), ("a", 6.0)]


class _Log:
    def __init__(self, path: Path):
        self.log_path = path


def test_mirror_bytes_counts_the_requests_after_since(tmp_path: Path) -> None:
    log = tmp_path / "files-access.log"
    log.write_text("1.0 GET /pytriton/p.whl 200 100\n2.0 GET /pytriton/p.whl 200 40\n3.0 GET /wheels/t.whl 200 1000\n")
    assert mirror_bytes(_Log(log), since=1) == 1040


def test_network_bytes_skips_loopback_and_ifb_copies(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    dev.write_text(  # /proc/net/dev of this machine, received bytes edited
        "Inter-|   Receive                                                |  Transmit\n"
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop\n"
        "    lo: 25717321792 1353320    0    0    0     0          0         0 25717321792 1353320    0    0\n"
        "  ifb0:     500       5    0    0    0     0          0         0        0       0    0    0\n"
        "  eth0: 12697708804 9200    0    0    0     0          0         0 3000    10    0    0\n"
    )
    assert network_bytes(dev) == 12697708804


def test_regress_gives_each_tree_only_the_settings_its_defaults_name() -> None:
    """bench.regress filters the test bed's settings per tree: this tree's defaults name every setting."""
    from dataclasses import fields

    from bench.regress import known_settings
    from config.settings import Settings

    assert known_settings(Path(__file__).resolve().parents[2]) == {f.name for f in fields(Settings)}


def test_cpu_busy_seconds_counts_every_busy_field_but_idle_and_iowait(tmp_path: Path) -> None:
    stat = tmp_path / "stat"  # this machine's /proc/stat, 2026-12-05 (CLK_TCK 100)
    stat.write_text("cpu  2989589 0 1232109 9854946 77239 0 17687 14247 0 0\ncpu0 1494790 0 616054 4927473 38619 0\n")
    ticks = 2989589 + 0 + 1232109 + 0 + 17687 + 14247  # user nice system irq softirq steal
    assert cpu_busy_seconds(stat) == ticks / os.sysconf("SC_CLK_TCK")
