"""The test bed's port plan (testbed/ports.py): no two ranges it hands out overlap, none reaches the
kernel's ephemeral ports on this machine or Triton's default ports, and the suite's worker count fits."""

import re
import tomllib
from itertools import combinations
from pathlib import Path

import pytest

from testbed import ports

pytestmark = pytest.mark.unit

REPO = Path(__file__).parents[2]


def _workers() -> int:
    """The -n the suite runs with (pyproject.toml's addopts)."""
    addopts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    found = re.search(r"-n (\d+)", addopts)
    return int(found.group(1)) if found else 1


def test_no_two_ranges_overlap_and_none_reaches_the_ephemeral_ports_or_triton_s() -> None:
    plan = ports.ranges(ports.MAX_WORKERS)
    for (a, a_first, a_last), (b, b_first, b_last) in combinations(plan, 2):
        assert a_last < b_first or b_last < a_first, f"{a} {a_first}..{a_last} overlaps {b} {b_first}..{b_last}"
    low, high = ports.ephemeral_range()
    default_first, default_last = ports.TRITON_DEFAULTS
    for what, first, last in plan:
        assert last < low or first > high, f"{what} {first}..{last} reaches the ephemeral ports {low}..{high}"
        assert last < default_first or first > default_last, f"{what} {first}..{last} holds Triton's defaults"


def test_the_suite_s_workers_fit_the_plan_and_one_more_is_refused() -> None:
    assert _workers() <= ports.MAX_WORKERS
    with pytest.raises(ValueError, match="room for 3"):
        ports.bed_ports(ports.MAX_WORKERS)


def test_a_bed_beside_a_worker_s_has_ports_of_its_own() -> None:
    own, nested = ports.bed_ports(1), ports.bed_ports(1, nested=True)
    assert own.ssh_last < nested.ssh_first <= nested.ssh_last < ports.bed_ports(2).ssh_first
    assert own.env()["TRITON_TESTBED_FIRST_SSH_PORT"] != nested.env()["TRITON_TESTBED_FIRST_SSH_PORT"]
    assert ports.worker_number("gw2") == 2 and ports.worker_number("") == 0


def test_host_indexes_and_named_slots_stay_in_their_block() -> None:
    offset = ports.bed_ports(1).triton_offset
    assert ports.triton_base(offset, ports.HOSTS_PER_BED - 1) + 2 < ports.named_base(offset, 0)
    with pytest.raises(ValueError, match="room for 30 hosts"):
        ports.triton_base(offset, ports.HOSTS_PER_BED)
    with pytest.raises(ValueError, match="has 10"):
        ports.named_base(offset, ports.NAMED_SLOTS)


def test_the_ephemeral_range_is_read_from_the_kernel_s_file(tmp_path: Path) -> None:
    (tmp_path / "range").write_text("40000\t50000\n")
    assert ports.ephemeral_range(tmp_path / "range") == (40000, 50000)
    assert ports.ephemeral_range(tmp_path / "absent") == (32768, 60999)


def test_a_worker_s_test_bed_takes_its_ports_from_the_plan() -> None:
    """tests/conftest.py sets a worker's ports before the test bed reads them (importing the testbed
    package first would leave every worker on worker 0's ports)."""
    import os
    import subprocess
    import sys

    probe = "import tests.conftest, testbed.config as c; print(c.FIRST_SSH_PORT, c.LAST_SSH_PORT, c.PORT_OFFSET)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_TESTBED_")}
    res = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        env={**env, "PYTEST_XDIST_WORKER": "gw1"},
        capture_output=True,
        text=True,
    )
    bed = ports.bed_ports(1)
    assert res.stdout.split() == [str(bed.ssh_first), str(bed.ssh_last), str(bed.triton_offset)], res.stderr


def test_a_state_directory_set_for_the_whole_run_is_split_between_workers() -> None:
    """Two workers in one state directory take down each other's hosts (a clean-clone run that inherited a
    private bed's TRITON_TESTBED_DIR failed so): each worker gets the directory with its name appended."""
    from tests.conftest import worker_bed_env

    mine = {"TRITON_TESTBED_DIR": "/var/tmp/mine"}
    assert worker_bed_env("gw0", mine) == {"TRITON_TESTBED_DIR": "/var/tmp/mine-gw0"}
    assert worker_bed_env("gw1", mine)["TRITON_TESTBED_DIR"] == "/var/tmp/mine-gw1"
    assert worker_bed_env("gw0", {}) == {}  # the first worker keeps the defaults
    assert worker_bed_env("gw1", {})["TRITON_TESTBED_DIR"] == "/var/tmp/triton-testbed-gw1"
    assert worker_bed_env("", mine) == {}  # one process: the setting as it is


def test_ports_set_for_the_whole_run_of_several_workers_are_refused() -> None:
    import pytest

    from tests.conftest import worker_bed_env

    with pytest.raises(pytest.UsageError, match="TRITON_TESTBED_FIRST_SSH_PORT set for a run with several"):
        worker_bed_env("gw1", {"TRITON_TESTBED_FIRST_SSH_PORT": "2601"})
    assert worker_bed_env("", {"TRITON_TESTBED_FIRST_SSH_PORT": "2601"}) == {}
