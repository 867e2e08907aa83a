"""The Triton server process: a model repository, started detached, restarted only on change."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from pyinfra import host
from pyinfra.api import OperationError, QuoteString, StringCommand, operation

import remote
from facts.front import FrontState
from facts.ports import ListeningPorts
from facts.server import UNIT_PATH, ServerState, ServerStateData
from facts.system import InitSystem
from run import host_log
from tasks.command_chain import all_of, with_rollback
from tasks.models import control as model_control
from tasks.models.repository import ModelCheck
from tasks.server import front as front_tasks
from tasks.server import handover as server_handover
from tasks.server import switch
from tasks.server import wait as server_wait
from tasks.server.unit import ServerPlan, why_start


def _port_holders(plan: ServerPlan, ours: set[int]) -> list[str]:
    """Each of our ports held by a process that is not our server (nor our front): 'port P: NAME (pid N)'."""
    listening = host.get_fact(ListeningPorts)
    held = []
    slots = plan.front.slot_ports if plan.front else ()
    for label, port in [*plan.ports, *((f"{name} (slot {slot})", p) for slot, ports in slots for name, p in ports)]:
        for h in listening.get(port, []):
            if h["pid"] in ours:
                continue
            who = f"{h['process']} (pid {h['pid']})" if h["pid"] else "a process not visible to this user"
            held.append(f"triton_{label}_port {port} is held by {who} on {h['address']}")
    return held


def _started(plan: ServerPlan, systemd: bool, config_hash: str, stale: str) -> StringCommand:
    """Start (or restart) the server as planned, recording config_hash."""
    if systemd:
        return remote.shell("server_start_systemd.sh", UNIT_PATH, plan.unit, plan.run_dir, config_hash, stale)
    return remote.shell(
        "server_start.sh", plan.run_dir, plan.starter, config_hash, stale, plan.user, *plan.watch_args, *plan.args
    )


def _ready(plan: ServerPlan, python: str, models: list[str], systemd: bool, started: bool = True) -> StringCommand:
    """Wait until the server and these models are ready, or fail with the server log's lines that explain why
    (the journal's under systemd). After a reload (not started) the log of the server's start is not this
    change's: model_control.py has said what failed."""
    return server_wait.ready(plan, python, models, server_wait.server_log(plan, systemd) if started else "")


def _as_server_user(user: str, proof_file: str, job: str, build: Callable[[str], StringCommand]) -> StringCommand:
    """build(its proof file)'s command run as the server's user (no new privileges, no capabilities), never
    as root: what it runs (the venv's Python: a package's .pth file, the models' code) is that user's to
    run. Its proof goes to a file root made for it (that user's, 0600, in root's run directory: it cannot be
    swapped for a link), which root then adds to proof_file. As root where the server runs as root."""
    if user == "root":
        return build(proof_file)
    mine = f"{proof_file}.{job}"
    who, q = QuoteString(user), QuoteString(mine)
    return StringCommand(
        "rm", "-f", q, "&&", "install", "-o", who, "-g", who, "-m", "600", "/dev/null", q, "&&",
        *remote.as_user(user), build(mine), "&&",
        "cat", q, ">>", QuoteString(proof_file), "&&", "rm", "-f", q,
    )  # fmt: skip


def _verified(plan: ServerPlan, verify: list[ModelCheck], in_process: bool, proof_file: str) -> StringCommand:
    """The models called over HTTP and gRPC and, in-process, loaded in the venv: as the server's user (the
    in-process check loads what the HF cache holds, which that user may write); the in-process answers
    are kept in that user's cache for the next proof of the same model and venv."""

    def check(proof: str) -> StringCommand:
        return remote.python(
            "python3",
            "verify_models.py",
            f"{plan.http_host}:{plan.http_port}",
            f"{plan.http_host}:{plan.grpc_port}",
            plan.models_dir,
            "1" if in_process else "0",
            json.dumps(verify),
            via=plan.launcher,
            env={
                "TRITON_PROOF_FILE": proof,
                **({"TRITON_REFERENCES": plan.verified_answers} if plan.verified_answers else {}),
                # run as the server's user (or root where it runs as root): that user's bytecode folder
                **({"PYTHONPYCACHEPREFIX": plan.python_bytecode} if plan.python_bytecode else {}),
            },
        )

    return _as_server_user(plan.user, proof_file, "verify", check)


def _control(plan: ServerPlan, proof_file: str, items: list[str]) -> StringCommand:
    """The models' loads, reloads and unloads through the repository API, as the server's user (it runs the
    venv's Python; that user's group may read the key)."""
    grpc = f"{plan.http_host}:{plan.grpc_port}"

    def control(proof: str) -> StringCommand:
        return model_control.command(plan.base_url, grpc, plan.key_file, proof, plan.models_dir, items, plan.launcher)

    touch = remote.python("python3", "model_control.py", "--touch", plan.models_dir, *items)  # root's files
    return StringCommand(touch, "&&", _as_server_user(plan.user, proof_file, "control", control))


@operation()
def running(
    plan: ServerPlan,
    wanted_hash: str,
    links: tuple[tuple[str, str], ...],
    models: list[str],
    loaded: dict[str, str],
    verify: list[ModelCheck] | None = None,
    in_process: bool = True,
    python: str = "python3",
):
    """Our server runs with wanted_hash and has loaded each model's digest (loaded: name -> digest, from
    tasks.model_control.digests); else make it so.

    links: (link, target) pairs, the Triton install, the venv, the model repository, switched to first.
    Where only the models or the venv changed, the server goes on running: the models the change touches
    are loaded, reloaded or unloaded through the repository API (a model whose second copy does not fit in
    memory is unloaded first: facts.memory). Otherwise (a new build, Python, server arguments, or no
    server) it is (re)started, waited for, and proven.

    A change that fails (a model that does not load, a server that does not become ready, a failed
    proof) is rolled back where a ready server ran before: the links point at what served before and
    the models it changed are loaded back (or that server starts again), proven, and the run fails
    naming what failed. A port held by another process stops here with its name and pid; our own stale
    server (recorded pid, or serving our repository) is stopped cleanly first. verify: the models as
    tasks.models.verify_spec lists them, each then called over HTTP and gRPC.
    """
    state = host.get_fact(ServerState, plan.run_dir, plan.http_host, plan.http_port, plan.models_dir)
    systemd = host.get_fact(InitSystem)["systemd"]
    proof_file = f"{plan.run_dir}/proof.txt"

    def prove_on(where: ServerPlan) -> list[StringCommand]:
        return [_verified(where, verify, in_process, proof_file)] if verify else []

    change = _Change(
        plan=plan,
        state=state,
        systemd=systemd,
        links=links,
        models=models,
        loaded=loaded,
        proven=prove_on(plan),
        prove_on=prove_on,
        python=python,
        proof_file=proof_file,
    )
    if why_start(state, systemd, plan, wanted_hash):
        yield from _restarted(change, wanted_hash)
    else:
        yield from _reloaded(change)


@dataclass(frozen=True)
class _Change:
    """What `running` read and decided, shared by its two ways: a reload and a restart."""

    plan: ServerPlan
    state: ServerStateData
    systemd: bool
    links: tuple[tuple[str, str], ...]
    models: list[str]
    loaded: dict[str, str]
    proven: list[StringCommand]  # the proof by inference, where models are verified
    prove_on: Callable[[ServerPlan], list[StringCommand]]  # that proof of another plan's server (a slot's)
    python: str
    proof_file: str


def _reloaded(change: _Change) -> Iterator:
    """The server runs as wanted: the models the change touches are loaded, reloaded or unloaded through
    the repository API, the server kept running; rolled back (the links and those models) on failure."""
    plan, state, systemd, proof_file = change.plan, change.state, change.systemd, change.proof_file
    serving = plan.front.slot_of(state["http_port"]) if plan.front else ""
    plan = plan.on_slot(serving) if serving else plan  # behind the front: its server's own ports
    enable = systemd and not state["unit_enabled"]
    if enable:
        yield "systemctl enable --quiet tritonserver.service"  # serving as wanted: no restart
    models_change = model_control.planned(state["models"], change.loaded, plan.models_dir)
    if not models_change:
        if not enable:
            host.noop(f"Triton pid {state['pid']} is ready with this configuration and these models")
        return
    control = partial(_control, plan, proof_file)
    new = [
        StringCommand(
            "echo",
            QuoteString(f"models: {models_change.words()}; the server keeps running"),
            ">",
            QuoteString(proof_file),
        ),
        # the server's pid as the facts found it (under systemd the unit's: it may have restarted it since)
        StringCommand("echo", str(state["pid"]), ">", QuoteString(f"{plan.run_dir}/tritonserver.pid")),
        switch.command(change.links),
        control(models_change.forward()),
        _ready(plan, change.python, change.models, systemd, started=False),
        *change.prove_on(plan),
        model_control.recorded(plan.run_dir, change.loaded),
    ]
    old = switch.previous(change.links)
    if old is None:
        yield StringCommand(*all_of(*new))
    else:
        back = [
            switch.command(old),
            control(models_change.back()),
            _ready(plan, change.python, ["smoke"], systemd, False),
        ]
        yield with_rollback(
            new,
            back,
            "The change failed (above); rolled back to what served before: the links point back and the models "
            "it had changed are loaded back from there; the server kept running. Fix the cause named above, "
            "then run again.",
            "The change failed (above), and so did loading back what served before (above).",
            "loading back what served before",
        )
    yield host_log.shown(proof_file)


def _restarted(change: _Change, wanted_hash: str) -> Iterator:
    """A new build, Python or server arguments, or no server: (re)started, waited for and proven; what
    served before comes back where the new server fails."""
    plan, state, systemd, proof_file = change.plan, change.state, change.systemd, change.proof_file
    front = host.get_fact(FrontState, plan.run_dir)  # ours, running or not, whatever the settings say now
    held = _port_holders(plan, {pid for pid in [state["pid"], *state["stale"], front["pid"]] if pid})
    if held:
        raise OperationError("; ".join(held) + ". Stop that process, or choose other ports in the settings.")
    recorded = model_control.recorded(plan.run_dir, change.loaded)
    why_not = server_handover.refusal(plan, state)
    if not why_not:  # the new server beside the old one: no request fails
        proven = change.prove_on(plan.on_slot(server_handover.new_slot(plan, state))) if plan.front else change.proven
        yield server_handover.handed_over(
            plan, state, change.links, wanted_hash, change.python, change.models, proven, recorded, systemd
        )
        yield host_log.shown(proof_file)
        return
    # behind the front, the server starts on the slot the front serves (and records it for the front's start)
    slot = front["slot"] if plan.front else ""
    where = plan.on_slot(slot) if slot else plan
    if front["pid"] and not plan.front:  # triton_upgrade is no longer "front": the server takes its ports back
        yield front_tasks.stopped_now(plan.run_dir)
    stale = " ".join(str(pid) for pid in state["stale"])
    said = f"server: restarted: {why_not}"
    # kept with the proof (shown after a start) and said at once (shown where the start fails)
    said_it = (
        []
        if why_not == "-"
        else [StringCommand("echo", QuoteString(said), "|", "tee", "-a", QuoteString(proof_file), ">&2")]
    )
    new = [
        switch.command(change.links),
        # the slot first: under systemd the server's unit starts on the slot its file names
        *([front_tasks.slot_recorded(plan.front, slot)] if plan.front else []),
        _started(where, systemd, wanted_hash, stale),
        *said_it,
        _ready(where, change.python, change.models, systemd),
        *(change.prove_on(where) if slot else change.proven),
        recorded,
    ]
    old = switch.previous(change.links) if state["pid"] and state["ready"] and state["config_hash"] else None
    if old is None or old == change.links:
        yield StringCommand(*all_of(*new))
    else:
        # What served before comes back when the new server fails: the old links, the old hash (so
        # the next run tries the change again), the same start and proof of readiness.
        back = [
            switch.command(old),
            _started(where, systemd, state["config_hash"], ""),
            _ready(where, change.python, ["smoke"], systemd),
            model_control.recorded(plan.run_dir, state["models"]),
            StringCommand("cat", QuoteString(proof_file), ">&2"),
        ]
        yield with_rollback(
            new,
            back,
            "The new server failed (above); rolled back to what served before: the Triton install, venv "
            "and model repository it ran. Fix the cause named above, then run again.",
            "The new server failed (above), and so did the rollback to what served before (above).",
            "starting what served before",
        )
    yield host_log.shown(proof_file)  # what the start proved: readiness and each model's inference


@operation()
def stopped(plan: ServerPlan):
    """No server of ours runs, and none comes back at boot: the unit stopped **and disabled** where
    systemd runs the host; TERM (KILL after 30 s) to the recorded pid and to any serving our repository;
    the front stopped too (whatever triton_upgrade says now)."""
    state = host.get_fact(ServerState, plan.run_dir, plan.http_host, plan.http_port, plan.models_dir)
    front_pid = host.get_fact(FrontState, plan.run_dir)["pid"]
    if front_pid:
        yield front_tasks.stopped_now(plan.run_dir)
    unit_on = state["unit_enabled"] or state["unit_active"]
    if not state["pid"] and not state["stale"] and not unit_on:
        if state["config_hash"]:  # it died: forget that it should run (deploy/status.py reads this)
            yield StringCommand(
                "rm",
                "-f",
                *(QuoteString(f"{plan.run_dir}/{f}") for f in ("tritonserver.pid", "config.hash", "models.loaded")),
            )
        elif not front_pid:
            host.noop("no Triton server of ours is running")
        return
    if unit_on:
        yield "systemctl disable --now --quiet tritonserver.service"
    yield remote.shell("server_stop.sh", plan.run_dir, " ".join(str(pid) for pid in state["stale"]))
