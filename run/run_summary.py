"""One line per host at the end of a run: OK, BLOCKED (the rules refused it, nothing changed) or
FAILED (the step that failed), so that a fleet run with one bad host says which and why while the
other hosts go on (pyinfra drops a failed host and carries on with the rest)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TypeVar

from pyinfra import logger
from pyinfra.api.state import BaseStateCallback, State

from config.settings import record_name


class RunSummary(BaseStateCallback):
    """Collects each host's outcome; prints them all once the last host has disconnected."""

    def __init__(self) -> None:
        self.blocked: dict[str, str] = {}
        self.failed: dict[str, str] = {}
        self.disconnected: list[str] = []
        self.ran: set[str] = set()  # hosts on which an operation ran (none in a --dry run)
        self.records: dict[str, Path] = {}  # host -> the controller folder its outcome is recorded in

    def operation_host_start(self, state: State, host, op_hash) -> None:
        self.ran.add(host.name)

    def operation_host_error(self, state: State, host, op_hash, retry_count: int = 0, max_retries: int = 0) -> None:
        if host.name not in self.blocked:
            self.failed.setdefault(host.name, ", ".join(sorted(state.get_op_meta(op_hash).names)) or op_hash)

    def host_disconnect(self, state: State, host) -> None:
        self.disconnected.append(host.name)
        if host.name in self.records and host.name in self.ran:
            self.write_record(host.name)
        if len(self.disconnected) < len(state.activated_hosts):
            return
        logger.info("--> Summary:")
        for name in sorted(self.disconnected):
            logger.info(f"    [{name}] {self.outcome(name)}")

    def outcome(self, name: str) -> str:
        if name in self.blocked:
            return f"BLOCKED, nothing changed: {self.blocked[name]}"
        if name in self.failed:
            return f"FAILED at '{self.failed[name]}' (its output is above)"
        return "OK"

    def write_record(self, name: str) -> None:
        """The host's outcome as JSON in its records folder (written aside, then renamed): deploy/status.py
        shows it as the last provision."""
        result = "BLOCKED" if name in self.blocked else "FAILED" if name in self.failed else "OK"
        record = {
            "host": name,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "result": result,
            "detail": self.blocked.get(name) or (f"failed at '{self.failed[name]}'" if name in self.failed else ""),
        }
        folder = self.records[name]
        folder.mkdir(parents=True, exist_ok=True)
        dest = folder / f"{record_name(name)}.json"
        tmp = dest.with_name(f".{dest.name}.tmp")
        tmp.write_text(json.dumps(record, indent=2) + "\n")
        os.replace(tmp, dest)


def last_record(folder: Path, host_name: str) -> dict | None:
    """The host's last provision, as write_record left it; None where none is recorded."""
    try:
        return json.loads((folder / f"{record_name(host_name)}.json").read_text())
    except (OSError, ValueError):
        return None


Handler = TypeVar("Handler", bound=BaseStateCallback)


def registered(state: State, kind: type[Handler]) -> Handler:
    """The run's callback handler of this kind, made and registered once per run."""
    found = next((h for h in state.callback_handlers if isinstance(h, kind)), None)
    if found is None:
        found = kind()
        state.add_callback_handler(found)
    return found


def summary(state: State) -> RunSummary:
    """The run's RunSummary."""
    return registered(state, RunSummary)


def refuse(state: State, host, reasons: str, what: str) -> None:
    """Refuse this host before any change: record why and add one step that fails it, so that
    pyinfra drops it and the other hosts of the run go on (raising in a deploy file stops them all)."""
    from pyinfra.operations import python

    summary(state).blocked[host.name] = reasons

    def refused(state, host) -> bool:
        host.log_styled(f"refusing to {what} {host.name}, nothing was changed: {reasons}", fg="red")
        return False

    python.call(name=f"Refused to {what}: {reasons.split(':')[0]}", function=refused)
