"""The front (triton_upgrade = "front", tasks/server/front_plan.py): HAProxy on the server's ports, started as the
server's user beside it and restarted only when its configuration changes (a restart drops the clients'
kept connections: it says so). The switch from one slot to the other belongs to a build upgrade
(tasks/server/handover.py); this keeps the front running on the slot it serves."""

from __future__ import annotations

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation

import remote
from config.ports import FRONT_PROGRAM, FRONT_UNIT_PATH
from facts.front import FrontState
from facts.system import InitSystem
from tasks.server.front_plan import DRAIN_S, SLOT_ENV, FrontPlan


def started(front: FrontPlan, user: str, systemd: bool) -> StringCommand:
    """(Re)start the front on its recorded slot, writing both configurations: detached (front_start.sh), or
    as its own unit where systemd runs the host (front_start_systemd.sh)."""
    configs = dict(front.configs)
    if systemd:
        return remote.shell(
            "front_start_systemd.sh", front.run_dir, user, front.wanted_hash(True), FRONT_UNIT_PATH, front.unit,
            configs["a"], configs["b"],
        )  # fmt: skip
    return remote.shell(
        "front_start.sh", front.run_dir, user, front.config_hash, FRONT_PROGRAM, configs["a"], configs["b"]
    )


def slot_recorded(front: FrontPlan, slot: str) -> StringCommand:
    """The slot the front serves, kept for its next start (the switch itself is through its socket), and the
    slot file the systemd units start with (tasks/server/front_plan.SLOT_ENV)."""
    slot_file = QuoteString(f"{front.run_dir}/{SLOT_ENV}")
    return StringCommand(
        "echo", slot, ">", QuoteString(f"{front.run_dir}/front.slot"), "&&",
        "printf", "%s", QuoteString(front.slot_env(slot)), ">", slot_file,
    )  # fmt: skip


def switched(front: FrontPlan, user: str, old: str, new: str) -> StringCommand:
    """Every request to slot new, the old slot drained (tasks/server/scripts/front_switch.py), as the server's user:
    the runtime socket is in that user's folder."""
    command = remote.python("python3", "front_switch.py", front.socket, old, new, str(DRAIN_S))
    return command if user == "root" else StringCommand(*remote.as_user(user), command)


@operation()
def running(front: FrontPlan, user: str):
    """The front runs with this configuration; else it is (re)started on the slot it serves."""
    state = host.get_fact(FrontState, front.run_dir)
    systemd = host.get_fact(InitSystem)["systemd"]
    if state["pid"] and state["config_hash"] == front.wanted_hash(systemd):
        host.noop(f"the front (HAProxy pid {state['pid']}) hands requests to slot {state['slot']}")
        return
    if state["pid"]:
        said = "front: its configuration changed: restarted (the clients' kept connections to it are closed)"
        yield StringCommand("echo", QuoteString(said), ">&2")
    yield started(front, user, systemd)


def stopped_now(run_dir: str) -> StringCommand:
    """The front recorded in run_dir stopped (while its pid is HAProxy's), its pid forgotten (a server stopped);
    its unit, where systemd runs it, stopped and disabled."""
    return remote.shell("front_stop.sh", run_dir, FRONT_PROGRAM, FRONT_UNIT_PATH)
