"""The test scheduler (tests/scheduling.py) driven as xdist's controller drives it, by workers simulated over
given seconds per test: each worker runs the tests it was sent in order, and reports each one done at the
moment its clock reaches the test's end."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from xdist.scheduler import LoadFileScheduling

from tests.scheduling import FILE_SECONDS, LongestFirstScheduling

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


class Worker:
    """What the scheduler sees of an xdist worker: its id, what it was sent, its shutdown."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.queue: list[int] = []
        self.ran: list[int] = []
        self.clock = 0.0
        self.shutting_down = False

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.queue.extend(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


def makespan(scheduling_class, collection: list[str], durations: dict[str, float], workers: int = 2, **kw) -> tuple:
    """(seconds until the last worker is done, the workers) for collection, each test taking durations[nodeid];
    kw goes to the scheduler."""
    config = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"], option=SimpleNamespace(loadscopereorder=True))
    sched = scheduling_class(config, None, **kw)
    nodes = [Worker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    while True:
        busy = [n for n in nodes if n.queue]
        if not busy:
            break
        node = min(busy, key=lambda n: n.clock + durations[collection[n.queue[0]]])  # the next test to end
        index = node.queue.pop(0)
        node.clock += durations[collection[index]]
        node.ran.append(index)
        sched.mark_test_complete(node, index)
    assert sched.tests_finished
    return max(n.clock for n in nodes), nodes


def suite(files: dict[str, list[float]]) -> tuple[list[str], dict[str, float]]:
    """A collection of test ids (file::test_N) in the files' order, and each test's seconds."""
    collection, seconds = [], {}
    for path, tests in files.items():
        for i, s in enumerate(tests):
            collection.append(f"{path}::test_{i}")
            seconds[collection[-1]] = s
    return collection, seconds


# Two files of many quick tests and a slow file of fewer, collected last (xdist orders by number of tests).
# (A worker is sent its next file once it has 2 tests or fewer left to run: a file of 2 tests gets a second
# file at once, as xdist does.)
FILES = {"unit/a.py": [1.0] * 10, "unit/b.py": [1.0] * 10, "e2e/slow.py": [5.0] * 4}
COSTS = {"unit/a.py": 10, "unit/b.py": 10, "e2e/slow.py": 20}


def test_the_costliest_file_goes_first_and_the_workers_end_together() -> None:
    collection, seconds = suite(FILES)
    ours, nodes = makespan(LongestFirstScheduling, collection, seconds, seconds=COSTS)
    theirs, _ = makespan(LoadFileScheduling, collection, seconds)
    assert ours == 20.0  # the slow file on one worker, both quick ones on the other: 40 s over 2
    assert theirs == 30.0  # xdist's order: the slow file last, to whichever worker ran low first
    assert collection[nodes[0].ran[0]].startswith("e2e/slow.py")


def test_every_test_runs_once_whatever_the_workers() -> None:
    collection, seconds = suite({**FILES, "unit/c.py": [0.5] * 7, "e2e/other.py": [3.0] * 3})
    for workers in (1, 2, 3):
        _, nodes = makespan(LongestFirstScheduling, collection, seconds, workers=workers, seconds=COSTS)
        ran = sorted(i for n in nodes for i in n.ran)
        assert ran == list(range(len(collection))), workers
        assert all(n.shutting_down for n in nodes)


def test_every_costed_file_exists_and_every_e2e_file_is_costed() -> None:
    """A file renamed or added without its seconds would run in xdist's order, maybe last."""
    named = set(FILE_SECONDS)
    assert all((REPO / path).is_file() for path in named), sorted(p for p in named if not (REPO / p).is_file())
    e2e = {str(p.relative_to(REPO)) for p in (REPO / "tests" / "e2e").glob("test_*.py")}
    assert e2e <= named, sorted(e2e - named)
