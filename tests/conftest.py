"""Marks each test by its folder: tests/unit are `unit`, tests/e2e are `e2e`; gives each parallel worker
(pytest-xdist, `-n`) a test bed of its own: its own state directory and ranges of ports (the hosts share
this machine's loopback), set before the test bed is imported. The first worker keeps the defaults."""

import os
from pathlib import Path

import pytest

from testbed.ports import bed_ports, worker_number

_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if worker_number(_WORKER):
    os.environ.setdefault("TRITON_TESTBED_DIR", f"/var/tmp/triton-testbed-{_WORKER}")
    for _name, _value in bed_ports(worker_number(_WORKER)).env().items():
        os.environ.setdefault(_name, _value)

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        kind = Path(item.fspath).relative_to(HERE).parts[0]
        if kind in ("unit", "e2e"):
            item.add_marker(getattr(pytest.mark, kind))
