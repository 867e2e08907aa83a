"""What a provisioned host runs (deploy/status.py), gathered from facts, changing nothing: `assemble` is
pure, facts in, one host's status out. reports/status_table.py shows it (a table, a JSON report)."""

from __future__ import annotations

from typing import Any

from config.layout import Layout
from config.secrets import mask
from config.settings import Settings
from remote._common import printable
from tasks.server.front_plan import slot_ports


def _torch(packages: dict[str, str]) -> dict[str, str] | None:
    """torch's version and variant: "2.13.0+cpu" -> {"version": "2.13.0", "variant": "cpu"}."""
    v = packages.get("torch")
    if not v:
        return None
    version, _, variant = v.partition("+")
    return {"version": version, "variant": variant or "default (PyPI: CUDA on Linux x86_64)"}


def _models(
    settings: Settings, loaded: list[dict], running: bool, hub_revisions: dict[str, str | None], envs: dict[str, str]
) -> list[dict]:
    """Each model the server reports or the settings name (and the built-in smoke model): its state, source,
    hub revision and the commit it resolved to, and the environment it runs in."""
    states = {m["name"]: m for m in loaded}
    specs = {m.name: m for m in settings.models}
    models = []
    for name in sorted(set(states) | set(specs) | {"smoke"}):
        spec = specs.get(name)
        got = states.get(name, {})
        models.append(
            {
                "name": name,
                "state": got.get("state") or ("not loaded" if running else "server not running"),
                "reason": got.get("reason", ""),
                "source": spec.source if spec else ("built in" if name == "smoke" else "not in the settings"),
                "revision": (spec.revision if spec and spec.kind == "hub" else ""),
                "resolved": hub_revisions.get(name) or "",
                "environment": envs.get(name, ""),
            }
        )
    return models


def _bound(facts: dict[str, Any], ports: dict[str, int], pid: int | None) -> dict[str, list[str]]:
    """Each port's addresses that this pid listens on."""
    held = facts["ports"]
    return {
        label: sorted({h["address"] for h in held.get(port, held.get(str(port), [])) if pid and h["pid"] == pid})
        for label, port in ports.items()
    }


def _front(settings: Settings, facts: dict[str, Any]) -> dict | None:
    """The front where one runs (triton_upgrade = "front"): HAProxy's pid, the slot it hands requests to,
    and that slot's ports, where the server listens."""
    front = facts.get("front") or {}
    if not front.get("pid"):
        return None
    slot = front["slot"]
    ports = slot_ports(settings, slot)
    return {"pid": front["pid"], "slot": slot, "ports": ports, "bound": _bound(facts, ports, facts["server"]["pid"])}


def assemble(
    settings: Settings,
    layout: Layout,
    facts: dict[str, Any],
    hub_revisions: dict[str, str | None],
    last_provision: dict | None,
    model_envs: dict[str, str] | None = None,
) -> dict:
    """One host's status from its facts (keys: triton, links, server, status, venv, nvidia, ports,
    systemd). hub_revisions: model name -> the commit its hub revision resolved to in the cache;
    model_envs: model name -> the environment of its own its config.pbtxt names (none: the venv)."""
    triton, server, extra = facts["triton"], facts["server"], facts["status"] or {}
    manifest = (triton or {}).get("manifest", {})
    running = bool(server["pid"])
    systemd = facts["systemd"] and (server["unit_enabled"] or server["unit_active"])
    # It should run where systemd is to start it, or where our last start was not undone by stop.
    should_run = bool(server["unit_enabled"] if facts["systemd"] else server["config_hash"])
    ports = dict(settings.triton_ports)
    if server.get("metrics_port"):  # after a handover, the other of the two metrics ports (triton_upgrade)
        ports["metrics"] = server["metrics_port"]
    front = _front(settings, facts)
    listening = _bound(facts, ports, front["pid"] if front else server["pid"])  # behind the front: HAProxy's
    models = _models(settings, extra.get("models") or [], running, hub_revisions, model_envs or {})
    venv = facts["venv"]
    nvidia = facts["nvidia"] or {}
    status = {
        "triton": {
            "version": (triton or {}).get("version"),
            "source": manifest.get("source"),
            "sha256": manifest.get("sha256"),
            "path": (triton or {}).get("real_home"),
        }
        if triton
        else None,
        "server": {
            "running": running,
            "ready": server["ready"],
            "pid": server["pid"],
            "uptime_s": extra.get("uptime_s") if running else None,
            "started": extra.get("started"),
            "started_by": ("systemd (tritonserver.service)" if systemd else "detached (pid file)") if running else None,
            "should_run": should_run,
            "user": settings.triton_user,
        },
        "listen": {"address": settings.triton_http_address, "ports": ports, "bound": listening},
        "front": front,
        "models": models,
        "venv": {
            "path": facts["links"].get(layout.venv, {}).get("target") or layout.venv,
            "python": venv["python"],
            "torch": _torch(venv["packages"]),
        }
        if venv
        else None,
        "gpus": [
            {"index": g["index"], "name": g["name"], "memory_mib": g["memory_mib"]} for g in nvidia.get("gpus", [])
        ],
        "driver": nvidia.get("driver_version"),
        "disk_used": {
            "triton_home": extra.get("disk_used", {}).get(layout.home),
            "persist_dir": extra.get("disk_used", {}).get(layout.persist),
        },
        "last_provision": last_provision,
        "log_tail": [],
    }
    status["ok"] = not should_run or (running and server["ready"])
    if not status["ok"]:
        status["problem"] = (
            "the server should run and does not" if not running else "the server runs but is not ready"
        ) + f"; its log: {extra.get('log') or layout.run + '/tritonserver.log'}"
        status["log_tail"] = [printable(mask(line)) for line in extra.get("log_tail", [])]  # the server user's lines
    return status
