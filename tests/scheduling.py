"""Which test file a pytest-xdist worker runs next: the costliest one left (greedy longest-first), by each
file's seconds in a measured clean-clone CI run. xdist's own `--dist loadfile` hands out files by their
number of tests, so the unit files go first and a slow e2e file can be left to one worker at the end
while the other idles: in the run measured below, the tests' seconds summed over both workers were 2549,
pytest took 1313 s (an even split is 1275)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

# Seconds of each file's tests (setup, call and teardown summed) in `CI=true bash .ci/run` of 3c7d000 in a
# clean clone on this machine kind (2 cores), 2026-12-06, the test bed's cache moved aside first, from its junit
# XML. Files not named cost 0 here and run after these, in xdist's order; a file that grows much slower belongs
# in the table.
FILE_SECONDS: dict[str, float] = {
    "tests/e2e/test_provision.py": 401,
    "tests/e2e/test_serve.py": 372,
    "tests/e2e/test_model_changes.py": 327,
    "tests/e2e/test_faults.py": 269,
    # + the front under systemd: a failed and a good build upgrade with five clients, kills, a reboot (~55 s)
    "tests/e2e/test_vm_hosts.py": 300,
    "tests/e2e/test_python_hosts.py": 240,
    # + the front's failed and good build upgrades with five clients (about 115 s alone, 2026-12-07)
    "tests/e2e/test_lifecycle.py": 345,
    # on Drive's semantics with a hub model since 221c145: 261 s in the clean-clone run of b2f5362, on a slow day
    # (every file about 1.7x its figure here): about 150 s on this table's machine
    "tests/e2e/test_notebook_inside.py": 150,
    "tests/e2e/test_image.py": 149,
    "tests/e2e/test_fleet.py": 112,
    "tests/e2e/test_registries.py": 60,  # measured alone (a real registry and one test host), 2026-12-07
    "tests/e2e/test_testbed.py": 30,
    "tests/unit/test_types.py": 23,
    "tests/e2e/test_audit.py": 12,
}


class LongestFirstScheduling(LoadFileScheduling):
    """xdist's scheduling by file, each worker that runs low given the costliest file left."""

    def __init__(
        self, config: pytest.Config, log: Producer | None = None, seconds: Mapping[str, float] = FILE_SECONDS
    ) -> None:
        super().__init__(config, log)
        self.seconds = seconds

    def _assign_work_unit(self, node: WorkerController) -> None:
        costliest = max(self.workqueue, key=lambda scope: self.seconds.get(scope, 0.0))
        self.workqueue.move_to_end(costliest, last=False)  # xdist takes the first
        super()._assign_work_unit(node)
