"""Fixtures only, over the test bed (testbed/): hosts for the session, reset per test, a local mirror."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

import testbed
from testbed import TestHost
from testbed.config import CACHE_DIR
from testbed.hub import Hub
from testbed.mirror import Mirror
from testbed.pypi_cache import PypiCache


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


@pytest.fixture(scope="session")
def testbed_hosts() -> Iterator[list[TestHost]]:
    """Two fresh hosts for the whole session, tb1 and tb2 (what a run killed before its end left in this
    worker's bed is taken down first); all of them go down at its end."""
    made = testbed.up(2, fresh=True)
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
    # PyPI through a cache that both test workers share: each file is fetched from PyPI once per machine
    with Mirror(tmp_path_factory.mktemp("mirror") / "files", pypi=PypiCache(CACHE_DIR / "pypi")) as m:
        yield m


@pytest.fixture(scope="session")
def hub() -> Iterator[Hub]:
    """The stand-in for the HuggingFace Hub's API on loopback (hosts reach it through hf_endpoint)."""
    with Hub() as h:
        yield h
