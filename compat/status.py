"""What a provisioned host runs (deploy/status.py): read from facts, changing nothing, and shown as a
table and JSON. `assemble` is pure: facts in, one host's status out."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from config.layout import Layout
from config.secrets import mask
from config.settings import Settings

_RUN: dict[str, dict] = {}  # every host's status in this run, for the JSON report


def _torch(packages: dict[str, str]) -> dict[str, str] | None:
    """torch's version and variant: "2.13.0+cpu" -> {"version": "2.13.0", "variant": "cpu"}."""
    v = packages.get("torch")
    if not v:
        return None
    version, _, variant = v.partition("+")
    return {"version": version, "variant": variant or "default (PyPI: CUDA on Linux x86_64)"}


def assemble(
    settings: Settings,
    layout: Layout,
    facts: dict[str, Any],
    hub_revisions: dict[str, str | None],
    last_provision: dict | None,
) -> dict:
    """One host's status from its facts (keys: triton, links, server, status, venv, nvidia, ports,
    systemd). hub_revisions: model name -> the commit its hub revision resolved to in the cache."""
    triton, server, extra = facts["triton"], facts["server"], facts["status"] or {}
    manifest = (triton or {}).get("manifest", {})
    running = bool(server["pid"])
    systemd = facts["systemd"] and (server["unit_enabled"] or server["unit_active"])
    # It should run where systemd is to start it, or where our last start was not undone by stop.
    should_run = bool(server["unit_enabled"] if facts["systemd"] else server["config_hash"])
    listening = {
        label: sorted({h["address"] for h in facts["ports"].get(port, []) if h["pid"] == server["pid"]})
        for label, port in settings.triton_ports
    }
    states = {m["name"]: m for m in (extra.get("models") or [])}
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
            }
        )
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
        "listen": {"address": settings.triton_http_address, "ports": dict(settings.triton_ports), "bound": listening},
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
        ) + f"; its log is {layout.run}/tritonserver.log"
        status["log_tail"] = [mask(line) for line in extra.get("log_tail", [])]
    return status


def _size(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _uptime(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = int(seconds)
    if whole >= 86400:
        return f"{whole // 86400}d {whole % 86400 // 3600}h"
    return f"{whole // 3600}h {whole % 3600 // 60}m {whole % 60}s"


def table(host_name: str, status: dict) -> str:
    """The status as aligned lines, the log's last lines under a server that should run and does not."""
    t, srv, v, last = status["triton"], status["server"], status["venv"], status["last_provision"]
    head = f"== status of {host_name}: " + ("OK" if status["ok"] else f"PROBLEM: {status.get('problem', '')}")
    rows = [
        (
            "triton",
            f"{t['version'] or '?'} from {t['source'] or '?'}, sha256 {(t['sha256'] or '?')[:16]}..., {t['path']}"
            if t
            else "not installed",
        ),
        (
            "server",
            (
                f"running, pid {srv['pid']}, up {_uptime(srv['uptime_s'])}, {srv['started_by']}, "
                f"{'ready' if srv['ready'] else 'NOT READY'}, as {srv['user']}"
            )
            if srv["running"]
            else ("NOT RUNNING (it should)" if srv["should_run"] else "stopped"),
        ),
        (
            "listen",
            f"{status['listen']['address']} "
            + ", ".join(
                f"{k} {p}"
                + (f" (bound {','.join(status['listen']['bound'][k])})" if status["listen"]["bound"][k] else "")
                for k, p in status["listen"]["ports"].items()
            ),
        ),
    ]
    for m in status["models"]:
        resolved = f" -> {m['resolved'][:12]}" if m["resolved"] and m["resolved"] != m["revision"] else ""
        reason = f" ({m['reason']})" if m["reason"] else ""
        rows.append((f"model {m['name']}", f"{m['state']}{reason}; {mask(m['source'])}{resolved}"))
    torch = v and v["torch"]
    rows += [
        (
            "venv",
            f"Python {v['python']}, torch {torch['version']} ({torch['variant']}), {v['path']}"
            if torch
            else (f"Python {v['python']}, no torch, {v['path']}" if v else "absent"),
        ),
        (
            "gpus",
            ", ".join(f"{g['index']}: {g['name']} ({g['memory_mib']} MiB)" for g in status["gpus"])
            + f"; driver {status['driver']}"
            if status["gpus"]
            else "none",
        ),
        (
            "disk",
            f"triton_home {_size(status['disk_used']['triton_home'])}, "
            f"persist_dir {_size(status['disk_used']['persist_dir'])}",
        ),
        (
            "provisioned",
            f"{last['finished']} {last['result']}" + (f": {last['detail']}" if last.get("detail") else "")
            if last
            else "no record on this controller",
        ),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [head, *(f"  {k:<{width}}  {v}" for k, v in rows)]
    if status["log_tail"]:
        lines.append("  server log, last lines:")
        lines += [f"    | {line}" for line in status["log_tail"]]
    return "\n".join(lines)


def record(host_name: str, status: dict, path: Path) -> Path:
    """Add this host to the run's JSON report and rewrite it (atomically)."""
    _RUN[host_name] = {**status, "host": host_name}
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps({"hosts": _RUN, "ok": all(h["ok"] for h in _RUN.values())}, indent=2) + "\n")
    os.replace(tmp, path)
    return path
