"""Marks each test by its folder: tests/unit are `unit`, tests/e2e are `e2e`; gives each parallel worker
(pytest-xdist, `-n`) a test bed of its own: its own state directory and ranges of ports (the hosts share
this machine's loopback), set before the test bed is imported. The first worker keeps the defaults. The
costliest test file left goes to the worker that runs low first (tests/scheduling.py)."""

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


def worker_bed_env(worker: str, environ: dict[str, str]) -> dict[str, str]:
    """The test bed settings a pytest-xdist worker adds to its environment: a state directory and port
    ranges of its own. A state directory set for the whole run gets the worker's name appended (two
    workers in one directory would take down each other's hosts); ports set for the whole run cannot be
    split between workers, so that is refused."""
    if not worker:
        return {}
    fixed = [name for name in bed_ports(0).env() if name in environ]
    if fixed:
        raise pytest.UsageError(
            f"{', '.join(fixed)} set for a run with several test workers: each worker needs ports of its "
            "own (testbed/ports.py); unset them, or run one worker (-n 0)"
        )
    base = environ.get("TRITON_TESTBED_DIR", "/var/tmp/triton-testbed")
    number = worker_number(worker)
    own = {"TRITON_TESTBED_DIR": f"{base}-{worker}"} if number or "TRITON_TESTBED_DIR" in environ else {}
    return {**own, **(bed_ports(number).env() if number else {})}


os.environ.update(worker_bed_env(_WORKER, dict(os.environ)))

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        kind = Path(item.fspath).relative_to(HERE).parts[0]
        if kind in ("unit", "e2e"):
            item.add_marker(getattr(pytest.mark, kind))


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadfile` (pyproject's default) hands each worker that runs low the costliest test file left
    (tests/scheduling.py); any other mode is xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.scheduling import LongestFirstScheduling

    return LongestFirstScheduling(config, log)
