"""A host's status (reports/status.py) shown: aligned lines with the log's last lines where the server
should run and does not, and every host of the run in one JSON report (0600)."""

from __future__ import annotations

import json
from pathlib import Path

from config.secrets import mask, write_private

_RUN: dict[str, dict] = {}  # every host's status in this run, for the JSON report


def _size(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _uptime(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = int(seconds)
    if whole >= 86400:
        return f"{whole // 86400}d {whole % 86400 // 3600}h"
    return f"{whole // 3600}h {whole % 3600 // 60}m {whole % 60}s"


def _ports(where: dict) -> str:
    """Each port of where["ports"], with the addresses where["bound"] says it is bound to: "http 8000 (bound
    127.0.0.1), grpc 8001"."""
    bound = where["bound"]
    return ", ".join(
        f"{k} {p}" + (f" (bound {','.join(bound[k])})" if bound[k] else "") for k, p in where["ports"].items()
    )


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
        ("listen", f"{status['listen']['address']} {_ports(status['listen'])}"),
    ]
    if front := status.get("front"):
        rows.append(
            (
                "front",
                f"HAProxy pid {front['pid']} on those ports, to the server on slot {front['slot']}: {_ports(front)}",
            )
        )
    for m in status["models"]:
        resolved = f" -> {m['resolved'][:12]}" if m["resolved"] and m["resolved"] != m["revision"] else ""
        reason = f" ({m['reason']})" if m["reason"] else ""
        own = f"; in its own environment {m['environment']}" if m.get("environment") else ""
        rows.append((f"model {m['name']}", f"{m['state']}{reason}; {mask(m['source'])}{resolved}{own}"))
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
    """Add this host to the run's JSON report and rewrite it (masked, 0600, atomically)."""
    _RUN[host_name] = {**status, "host": host_name}
    report = {"hosts": _RUN, "ok": all(h["ok"] for h in _RUN.values())}
    return write_private(path, json.dumps(report, indent=2) + "\n")
