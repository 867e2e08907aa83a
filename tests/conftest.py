"""Marks each test by its folder: tests/unit are `unit`, tests/e2e are `e2e`; gives each parallel worker
(pytest-xdist, `-n`) a test bed of its own: its own state directory and ranges of ports (the hosts share
this machine's loopback), set before the test bed is imported. The first worker keeps the defaults."""

import os
from pathlib import Path

import pytest


def _ports_module():
    """testbed/ports.py loaded on its own: importing the testbed package would read its port settings
    (testbed/config.py) before this worker's are set below."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("_testbed_ports", Path(__file__).parents[1] / "testbed" / "ports.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


_PORTS = _ports_module()
bed_ports, worker_number = _PORTS.bed_ports, _PORTS.worker_number
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
