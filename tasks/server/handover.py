"""A build upgrade without a failed request (triton_upgrade = "handover"): the new server started beside the
running one on the same HTTP and gRPC ports, new connections steered to it only once it listens, proven
on its own, and only then the old one stopped gracefully; a new server that fails is stopped and the old
one, which never stopped, serves on. Under systemd the new server starts inside the unit (`systemctl
reload`) and, once proven, becomes its main process before the old one stops: the unit never restarts.
Measured: bench/reuse_port.py, BENCHMARKS.md section 4."""

from __future__ import annotations

from dataclasses import dataclass

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand

import remote
from facts.memory import ModelMemory
from facts.ports import ListeningPorts
from facts.server import UNIT_PATH, ServerStateData
from tasks.command_chain import all_of, with_rollback
from tasks.models.control import tight
from tasks.server import front, switch
from tasks.server import wait as server_wait
from tasks.server.front_plan import other_slot
from tasks.server.unit import ServerPlan


def refusal(plan: ServerPlan, state: ServerStateData) -> str:
    """Why this restart cannot be a handover, in words ("" where it can; "-" where there is nothing to hand
    over from or the settings ask for a restart: nothing to say)."""
    handover = plan.handover_metrics_port or plan.front
    if not handover or not (state["pid"] and state["ready"] and state["config_hash"]):
        return "-"
    if state.get("user") and state["user"] != plan.user:
        return f"the new server's user ({plan.user}) cannot share the ports of {state['user']}'s server"
    if plan.front and not plan.front.slot_of(state["http_port"]):
        return "the running server is not behind the front (started before triton_upgrade = 'front'): restarted once"
    if not plan.front and state.get("http_port") not in (None, plan.http_port):  # on a slot: its ports are the front's
        return "the running server is behind the front (triton_upgrade was 'front'): restarted once, on the ports"
    if not plan.front and not state["reuse_ports"]:
        return "the running server was started without shared ports (by an earlier version): restarted this once"
    if state["stale"]:
        return f"other servers of ours run ({', '.join(map(str, state['stale']))}): stopped, then a restart"
    port = dict(plan.front.ports(new_slot(plan, state)))["metrics"] if plan.front else new_metrics_port(plan, state)
    held = [h for h in host.get_fact(ListeningPorts).get(port, []) if h["pid"] != state["pid"]]
    if held:
        return f"the new server's metrics port {port} is held by {held[0]['process']} (pid {held[0]['pid']})"
    memory = host.get_fact(ModelMemory, plan.models_dir)
    short = tight(memory, sorted(memory["rss_kb"]))
    if short:
        return "a second server's models do not fit beside the running one's: " + "; ".join(short.values())
    return ""


def new_slot(plan: ServerPlan, state: ServerStateData) -> str:
    """Behind the front, the slot the new server starts on: the one the running server is not on."""
    return other_slot(plan.front.slot_of(state["http_port"])) if plan.front else ""


def new_metrics_port(plan: ServerPlan, state: ServerStateData) -> int:
    """The metrics port the old server does not hold: the two alternate, one handover after the other."""
    configured = dict(plan.ports)["metrics"]
    return plan.handover_metrics_port if state["metrics_port"] == configured else configured


def _handover(plan: ServerPlan, mode: str, config_hash: str, args: tuple[str, ...] = ()) -> StringCommand:
    return remote.shell(
        "server_handover.sh", mode, plan.run_dir, plan.starter, config_hash, plan.user, *plan.watch_args, *args
    )


def _steered_to_running(plan: ServerPlan, python: str) -> StringCommand:
    """New connections to the running server alone (tasks/server/scripts/reuseport_steer.py)."""
    pid_file = f"{plan.run_dir}/tritonserver.pid"
    return remote.python(python, "reuseport_steer.py", plan.user, pid_file, str(plan.http_port), str(plan.grpc_port))


def _handover_systemd(plan: ServerPlan, mode: str, *args: str | int) -> StringCommand:
    return remote.shell("server_handover_systemd.sh", mode, plan.run_dir, UNIT_PATH, *args)


@dataclass(frozen=True)
class _NewServer:
    """A handover's new server: its start, its taking over from the old one, and its abandon (where it failed)."""

    started: StringCommand
    took_over: list[StringCommand]  # under systemd: made the unit's main process, then the old one stopped
    abandoned: StringCommand


def _new_server(
    plan: ServerPlan,
    state: ServerStateData,
    wanted_hash: str,
    python: str,
    systemd: bool,
    args: tuple[str, ...],
    ports: tuple[int, ...],
) -> _NewServer:
    """The new server's steps: detached with these arguments, or under systemd inside tritonserver.service
    (`systemctl reload`) on these ports (its metrics port; behind the front, then its HTTP and gRPC ones)."""
    if systemd:
        main = remote.python(
            python, "systemd_main_pid.py", "tritonserver.service", f"{plan.run_dir}/tritonserver.pid.new"
        )
        return _NewServer(
            _handover_systemd(plan, "start", plan.unit, *ports),
            [main, _handover_systemd(plan, "finish", wanted_hash)],
            _handover_systemd(plan, "abandon"),
        )
    return _NewServer(
        _handover(plan, "start", wanted_hash, args),
        [_handover(plan, "finish", wanted_hash)],
        _handover(plan, "abandon", state["config_hash"] or ""),
    )


def handed_over(
    plan: ServerPlan,
    state: ServerStateData,
    links: tuple[tuple[str, str], ...],
    wanted_hash: str,
    python: str,
    models: list[str],
    proven: list[StringCommand],
    recorded: StringCommand,
    systemd: bool = False,
) -> StringCommand:
    """The handover's one command: the new server beside the old, steered to, proven, the old one stopped;
    or, where the new one fails, stopped, the links back, the old one (never stopped) proven again. Behind
    the front: proven on its slot (proven: that proof), then the front switched to it."""
    if plan.front:
        return _behind_front(plan, state, links, wanted_hash, python, models, proven, recorded, systemd)
    port = new_metrics_port(plan, state)
    where = " in tritonserver.service" if systemd else ""
    say = f"server: the new one starts beside Triton pid {state['pid']}{where} (metrics on port {port}); no restart"
    server = _new_server(plan, state, wanted_hash, python, systemd, plan.args_with_metrics(port), (port,))
    new = [
        StringCommand("echo", QuoteString(say), ">", QuoteString(f"{plan.run_dir}/proof.txt")),
        _steered_to_running(plan, python),
        switch.command(links),
        server.started,
        server_wait.ready(
            plan, python, models, server_wait.server_log(plan, systemd), "tritonserver.pid.new", str(state["pid"] or 0)
        ),
        *proven,
        *server.took_over,
        recorded,
    ]
    old = switch.previous(links) or links
    back = [
        # where steering back fails (the old server gone), the new one is stopped all the same: once its
        # sockets leave the groups, the kernel hands every connection to what is left
        StringCommand(_steered_to_running(plan, python), "||", "true"),
        server.abandoned,
        switch.command(old),
        server_wait.ready(plan, python, ["smoke"], ""),
    ]
    if not proven and not models:
        return StringCommand(*all_of(*new))
    return with_rollback(
        new,
        back,
        "The new server failed (above) and was stopped; the old one never stopped serving, with the Triton "
        "install, venv and model repository it ran. Fix the cause named above, then run again.",
        "The new server failed (above), and so did steering back to the old one (above).",
        "the new server stopped, the old one serves on",
    )


def _behind_front(
    plan: ServerPlan,
    state: ServerStateData,
    links: tuple[tuple[str, str], ...],
    wanted_hash: str,
    python: str,
    models: list[str],
    proven: list[StringCommand],
    recorded: StringCommand,
    systemd: bool,
) -> StringCommand:
    """The new server on the other slot, ready and proven there, the front switched to it (the old slot
    drained), the old one stopped; where the new one fails, it is stopped and the front (switched back where
    it had switched) goes on handing every request to the old one, which never stopped. Under systemd the new
    server starts inside tritonserver.service (`systemctl reload`) and becomes its main process once the
    front hands it every request."""
    assert plan.front is not None
    old, new = plan.front.slot_of(state["http_port"]), new_slot(plan, state)
    there = plan.on_slot(new)
    where = " in tritonserver.service" if systemd else ""
    say = f"server: the new one starts on slot {new} beside Triton pid {state['pid']} (slot {old}){where}; no restart"
    ports = dict(there.ports)
    ports_there = (ports["metrics"], ports["http"], ports["grpc"])
    server = _new_server(plan, state, wanted_hash, python, systemd, there.args, ports_there)
    steps = [
        StringCommand("echo", QuoteString(say), ">", QuoteString(f"{plan.run_dir}/proof.txt")),
        switch.command(links),
        server.started,
        server_wait.ready(there, python, models, server_wait.server_log(plan, systemd), "tritonserver.pid.new"),
        *proven,
        front.switched(plan.front, plan.user, old, new),
        StringCommand(
            "echo",
            QuoteString(f"front: every request now goes to the new server (slot {new})"),
            ">>",
            QuoteString(f"{plan.run_dir}/proof.txt"),
        ),
        front.slot_recorded(plan.front, new),
        *server.took_over,
        recorded,
    ]
    back = [
        StringCommand(front.switched(plan.front, plan.user, new, old), "||", "true"),
        front.slot_recorded(plan.front, old),
        server.abandoned,
        switch.command(switch.previous(links) or links),
        server_wait.ready(plan.on_slot(old), python, ["smoke"], ""),
    ]
    return with_rollback(
        steps,
        back,
        "The new server failed (above) and was stopped; the old one never stopped serving, with the Triton "
        "install, venv and model repository it ran, and the front hands it every request. Fix the cause named "
        "above, then run again.",
        "The new server failed (above), and so did handing every request back to the old one (above).",
        "the new server stopped, the old one serves on",
    )
