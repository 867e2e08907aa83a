"""How long each step took on each host: a summary line per host at the end of a run, and, when
`step_timings_path` is set, a JSON file on the controller (the benchmarks plot it).

The steps are pyinfra's operations, timed from their start to their end on each host (pyinfra's
state callbacks); "facts and rules" is the time the deploy spent reading the host and deciding.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from pyinfra import logger
from pyinfra.api.state import BaseStateCallback, State


class StepTimings(BaseStateCallback):
    """Per host: [step, seconds, changed] in the order they ran."""

    def __init__(self, path: str):
        self.path = path
        self.started: dict[tuple[str, str], float] = {}
        self.steps: dict[str, list[dict]] = {}

    def add(self, host_name: str, step: str, seconds: float, changed: bool) -> None:
        self.steps.setdefault(host_name, []).append({"step": step, "seconds": round(seconds, 3), "changed": changed})
        self._write()

    def _write(self) -> None:
        if self.path:
            tmp = Path(self.path + ".tmp")
            tmp.write_text(json.dumps(self.steps, indent=1) + "\n")
            tmp.replace(self.path)

    def operation_host_start(self, state: State, host, op_hash) -> None:
        self.started[(host.name, op_hash)] = time.monotonic()

    def _end(self, state: State, host, op_hash, ok: bool) -> None:
        t0 = self.started.pop((host.name, op_hash), None)
        if t0 is None:
            return
        name = ", ".join(sorted(state.get_op_meta(op_hash).names)) or op_hash
        step = {"step": name if ok else f"{name} (failed)", "seconds": round(time.monotonic() - t0, 3)}
        self.steps.setdefault(host.name, []).append({**step, "changed": False, "_op": op_hash})

    def operation_host_success(self, state: State, host, op_hash, retry_count: int = 0) -> None:
        self._end(state, host, op_hash, True)

    def operation_host_error(self, state: State, host, op_hash, retry_count: int = 0, max_retries: int = 0) -> None:
        self._end(state, host, op_hash, False)

    def operation_end(self, state: State, op_hash) -> None:
        """Every host has finished this step: whether it changed anything is known now."""
        for host_name, steps in self.steps.items():
            for step in steps:
                if step.get("_op") == op_hash:
                    meta = next(state.get_op_data_for_host(h, op_hash) for h in state.inventory if h.name == host_name)
                    step["changed"] = meta.operation_meta.did_change()
                    del step["_op"]
        self._write()

    def host_disconnect(self, state: State, host) -> None:
        steps = self.steps.get(host.name, [])
        if not steps:
            return
        total = sum(s["seconds"] for s in steps)
        slowest = sorted(steps, key=lambda s: -s["seconds"])[:3]
        logger.info(
            f"[{host.name}] {len(steps)} steps, {total:.1f} s; slowest: "
            + ", ".join(f"{s['step']} {s['seconds']:.1f} s" for s in slowest)
        )


def record(state: State, host_name: str, facts_seconds: float, path: str) -> StepTimings:
    """The run's StepTimings (made once per run), with this host's fact reading as its first step."""
    timings = next((h for h in state.callback_handlers if isinstance(h, StepTimings)), None)
    if timings is None:
        timings = StepTimings(path)
        state.add_callback_handler(timings)
    timings.add(host_name, "facts and rules", facts_seconds, False)
    return timings
