"""Fixtures over the testbed: test hosts for the session, reset per test, a local mirror."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import testbed
from tests.mirror import Mirror

REPO = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """e2e tests need root and the testbed's tools; elsewhere they say why they skip.

    In CI they never skip: a missing tool is an error there.
    """
    missing = [t for t in ("debootstrap", "unshare", "ssh-keygen") if not shutil.which(t)]
    reason = None
    if os.geteuid() != 0:
        reason = "e2e tests need root (mounts and namespaces)"
    elif missing:
        reason = f"e2e tests need {', '.join(missing)} (bash scripts/setup.sh installs them)"
    if reason and os.environ.get("CI"):
        raise pytest.UsageError(f"CI cannot run the e2e tests: {reason}")
    if reason:
        for item in items:
            if "e2e" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


@dataclass
class TestHost:
    """A running test host and the ways to reach it."""

    __test__ = False

    host: testbed.Host

    @property
    def name(self) -> str:
        return self.host.name

    @property
    def data(self) -> dict:
        return testbed.host_data(self.host)

    def ssh_argv(self, *command: str) -> list[str]:
        """The ssh command line that runs COMMAND on the host as root (host key checked)."""
        d = self.data
        return [
            "ssh",
            "-i",
            d["ssh_key"],
            "-p",
            str(d["ssh_port"]),
            "-o",
            f"UserKnownHostsFile={d['ssh_known_hosts_file']}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            f"root@{d['ssh_hostname']}",
            *command,
        ]

    def ssh(self, command: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run a shell command on the host over SSH (host key checked); stdin closed."""
        argv = self.ssh_argv(command)
        return subprocess.run(argv, check=check, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)

    def reset(self) -> None:
        self.host = testbed.reset(self.name)


def write_inventory(path: Path, hosts: list[TestHost], **data) -> Path:
    """A pyinfra inventory file for these hosts, with extra host data for all of them."""
    rows = ",\n".join(f"    ({h.name!r}, {{**{h.data!r}, **{data!r}}})" for h in hosts)
    path.write_text(f"testbed = [\n{rows},\n]\n")
    return path


def run_pyinfra(inventory: Path | str, *args: str, check: bool = False) -> subprocess.CompletedProcess:
    """Run the pyinfra CLI from the repository root, as a user would."""
    argv = [sys.executable, "-m", "pyinfra", str(inventory), *args]
    res = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=1800)
    if check and res.returncode != 0:
        raise AssertionError(f"pyinfra failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return res


@pytest.fixture(scope="session")
def testbed_hosts() -> Iterator[list[TestHost]]:
    """Two fresh hosts for the whole session; all of them go down at its end."""
    made = testbed.up(2)
    try:
        yield [TestHost(h) for h in made]
    finally:
        testbed.down()


@pytest.fixture
def host(testbed_hosts: list[TestHost]) -> TestHost:
    """A fresh host: tb1, reset before the test (its /persist is kept)."""
    h = testbed_hosts[0]
    h.reset()
    return h


@pytest.fixture
def two_hosts(testbed_hosts: list[TestHost]) -> list[TestHost]:
    """Both hosts, each reset before the test."""
    for h in testbed_hosts:
        h.reset()
    return testbed_hosts


def op_results(output: str) -> dict[str, dict[str, int]]:
    """pyinfra's closing table: operation -> {hosts, success, error, no_change}."""
    rows: dict[str, dict[str, int]] = {}
    in_table = False
    for line in output.splitlines():
        if line.strip().startswith("Operation") and "No Change" in line:
            in_table = True
            continue
        if in_table:
            parts = line.split()
            if len(parts) < 5:
                break
            nums = [0 if p == "-" else int(p) for p in parts[-4:]]
            rows[" ".join(parts[:-4])] = dict(zip(("hosts", "success", "error", "no_change"), nums, strict=True))
    return rows


def host_index(name: str) -> int:
    """tb1 -> 1, bench2 -> 2: the number a testbed host's name ends with."""
    return int("".join(ch for ch in name if ch.isdigit()) or 0)


def triton_ports(index: int) -> dict:
    """Each test host gets its own ports: the hosts share this machine's loopback."""
    base = 18000 + 100 * index
    return {"triton_http_port": base, "triton_grpc_port": base + 1, "triton_metrics_port": base + 2}


def provision_inventory(path: Path, hosts: list[TestHost], settings: dict, **extra) -> Path:
    """An inventory for provisioning: mirror settings for all, own ports per host."""
    rows = []
    for h in hosts:
        data = {**h.data, **settings, **triton_ports(host_index(h.name)), **extra}
        rows.append(f"    ({h.name!r}, {data!r})")
    path.write_text("testbed = [\n" + ",\n".join(rows) + ",\n]\n")
    return path


@pytest.fixture(scope="session")
def served(mirror: Mirror) -> dict:
    """Settings that make hosts fetch Triton and torch from the local mirror (no PyTorch index here)."""
    from tests.e2e import artifacts

    if not artifacts.TORCH_WHEEL.exists():
        pytest.fail(f"{artifacts.TORCH_WHEEL} is missing: this machine kind ships it (../shared/notes)")
    return artifacts.mirror_settings(mirror)


@pytest.fixture(scope="session")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mirror]:
    """The local artifact mirror on loopback, for the whole session."""
    with Mirror(tmp_path_factory.mktemp("mirror") / "files") as m:
        yield m
