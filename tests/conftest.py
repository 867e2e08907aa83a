"""Marks each test by its folder: tests/unit are `unit`, tests/e2e are `e2e`; gives each parallel worker
(pytest-xdist, `-n`) a test bed of its own: its own state directory and ranges of ports (the hosts share
this machine's loopback), set before the test bed is imported. The first worker keeps the defaults."""

import os
from pathlib import Path

import pytest

_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER.startswith("gw") and _WORKER != "gw0":
    _number = int(_WORKER[2:])
    os.environ.setdefault("TRITON_TESTBED_DIR", f"/var/tmp/triton-testbed-{_WORKER}")
    os.environ.setdefault("TRITON_TESTBED_FIRST_SSH_PORT", str(2201 + 100 * _number))
    os.environ.setdefault("TRITON_TESTBED_PORT_OFFSET", str(5000 * _number))

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        kind = Path(item.fspath).relative_to(HERE).parts[0]
        if kind in ("unit", "e2e"):
            item.add_marker(getattr(pytest.mark, kind))
