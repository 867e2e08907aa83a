"""The front (triton_upgrade = "front", compat/front.py): HAProxy on the server's ports, started as the
server's user beside it and restarted only when its configuration changes (a restart drops the clients'
kept connections: it says so). The switch from one slot to the other belongs to a build upgrade
(tasks/server_handover.py); this keeps the front running on the slot it serves."""

from __future__ import annotations

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation

import remote
from compat.front import DRAIN_S, FrontPlan
from config.ports import FRONT_PROGRAM
from facts.front import FrontState


def started(front: FrontPlan, user: str) -> StringCommand:
    """(Re)start the front on its recorded slot, writing both configurations (remote/actions/front_start.sh)."""
    configs = dict(front.configs)
    return remote.shell(
        "front_start.sh", front.run_dir, user, front.config_hash, FRONT_PROGRAM, configs["a"], configs["b"]
    )


def slot_recorded(front: FrontPlan, slot: str) -> StringCommand:
    """The slot the front serves, kept for its next start (the switch itself is through its socket)."""
    return StringCommand("echo", slot, ">", QuoteString(f"{front.run_dir}/front.slot"))


def switched(front: FrontPlan, user: str, old: str, new: str) -> StringCommand:
    """Every request to slot new, the old slot drained (remote/actions/front_switch.py), as the server's user:
    the runtime socket is in that user's folder."""
    command = remote.python("python3", "front_switch.py", front.socket, old, new, str(DRAIN_S))
    return command if user == "root" else StringCommand(*remote.as_user(user), command)


@operation()
def running(front: FrontPlan, user: str):
    """The front runs with this configuration; else it is (re)started on the slot it serves."""
    state = host.get_fact(FrontState, front.run_dir)
    if state["pid"] and state["config_hash"] == front.config_hash:
        host.noop(f"the front (HAProxy pid {state['pid']}) hands requests to slot {state['slot']}")
        return
    if state["pid"]:
        said = "front: its configuration changed: restarted (the clients' kept connections to it are closed)"
        yield StringCommand("echo", QuoteString(said), ">&2")
    yield started(front, user)


def stopped_now(run_dir: str) -> StringCommand:
    """The front recorded in run_dir stopped (while its pid is HAProxy's), its pid forgotten (a server stopped)."""
    return remote.shell("front_stop.sh", run_dir, FRONT_PROGRAM)
