"""The front (tasks/server/front_plan.py): HAProxy on the server's ports, handing each request to one slot's server."""

from __future__ import annotations

from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from config.ports import FRONT_PROGRAM, FRONT_UNIT_PATH
from remote import shell


class FrontStateData(TypedDict):
    pid: int | None  # the unit's main pid under systemd, else the recorded pid; while it is HAProxy's
    config_hash: str | None  # the configurations it started from (FrontPlan.config_hash)
    slot: str  # the slot it hands requests to ("a" where none is recorded)


class FrontState(FactBase[FrontStateData]):
    """The front started from run_dir: alive (its recorded pid runs HAProxy), its hash, its slot."""

    def command(self, run_dir: str) -> StringCommand:
        return shell("front_state.sh", run_dir, FRONT_PROGRAM, FRONT_UNIT_PATH)

    @staticmethod
    def default() -> FrontStateData:
        return FrontStateData(pid=None, config_hash=None, slot="a")

    def process(self, output: list[str]) -> FrontStateData:
        data = self.default()
        for line in output:
            if line.startswith("PID=") and line[4:].isdigit():
                data["pid"] = int(line[4:])
            elif line.startswith("HASH="):
                data["config_hash"] = line[5:] or None
            elif line in ("SLOT=a", "SLOT=b"):
                data["slot"] = line[5:]
        return data
