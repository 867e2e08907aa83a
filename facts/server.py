"""Facts about our running Triton server: its pid (verified), its configuration hash, readiness."""

from __future__ import annotations

import json
from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from remote import python, shell


class ServerStateData(TypedDict):
    pid: int | None  # the unit's main pid, else the pid file's; only while that process is a tritonserver
    config_hash: str | None  # what the running server was started with
    models: dict[str, str] | None  # each model it loaded -> that load's digest; None: no record
    ready: bool  # GET /v2/health/ready answered 200
    stale: list[int]  # other tritonserver processes serving our model repository (lost pid file)
    unit_sha256: str | None  # sha256 of tritonserver.service where systemd runs the host and it exists
    unit_enabled: bool  # `systemctl is-enabled`: started again at boot
    unit_active: bool  # the unit is active (running or starting again after a failure)
    reuse_ports: bool  # started with --reuse-http-port and --reuse-grpc-port: a second server may share them
    metrics_port: int | None  # the metrics port it was started with (a handover alternates two)
    user: str | None  # who it runs as (its effective uid's name, else the uid)
    http_port: int | None  # the HTTP port it was started with (behind the front: its slot's)


UNIT_PATH = "/etc/systemd/system/tritonserver.service"


def parse_loaded(lines: list[str]) -> dict[str, str]:
    """The record's lines back into {name: digest}; a line that is not "HEX NAME" is skipped."""
    out = {}
    for line in lines:
        digest, _, name = line.strip().partition(" ")
        if name and digest and all(c in "0123456789abcdef" for c in digest):
            out[name] = digest
    return out


class ServerState(FactBase[ServerStateData]):
    """The server started from run_dir: alive (by pid file and /proc cmdline), its config hash, ready."""

    def command(self, run_dir: str, http_host: str, http_port: int, models_dir: str) -> StringCommand:
        return shell("server_state.sh", run_dir, http_host, http_port, models_dir, UNIT_PATH)

    @staticmethod
    def default() -> ServerStateData:
        return ServerStateData(
            pid=None,
            config_hash=None,
            models=None,
            ready=False,
            stale=[],
            unit_sha256=None,
            unit_enabled=False,
            unit_active=False,
            reuse_ports=False,
            metrics_port=None,
            user=None,
            http_port=None,
        )

    def process(self, output: list[str]) -> ServerStateData:
        data = self.default()
        for line in output:
            if line.startswith("PID=") and line[4:].isdigit():
                data["pid"] = int(line[4:])
            elif line.startswith("HASH="):
                data["config_hash"] = line[5:] or None
            elif line == "LOADED":
                data["models"] = {}
            elif line.startswith("LOADED=") and data["models"] is not None:
                data["models"].update(parse_loaded([line[7:]]))
            elif line == "READY":
                data["ready"] = True
            elif line.startswith("STALE=") and line[6:].isdigit() and int(line[6:]) not in data["stale"]:
                data["stale"].append(int(line[6:]))
            elif line.startswith("UNITSHA="):
                data["unit_sha256"] = line[8:] or None
            elif line == "UNIT_ENABLED":
                data["unit_enabled"] = True
            elif line == "UNIT_ACTIVE":
                data["unit_active"] = True
            elif line == "REUSE":
                data["reuse_ports"] = True
            elif line.startswith("METRICS=") and line[8:].isdigit():
                data["metrics_port"] = int(line[8:])
            elif line.startswith("HTTP_PORT=") and line[10:].isdigit():
                data["http_port"] = int(line[10:])
            elif line.startswith("USER="):
                data["user"] = line[5:] or None
        if data["pid"] is None:
            data["ready"] = data["reuse_ports"] = False
            data["metrics_port"] = data["http_port"] = data["user"] = None
        return data


class ServerStatusData(TypedDict):
    uptime_s: float | None  # seconds since the server's process started
    started: str | None  # when the running configuration was started (UTC, ISO 8601)
    models: list[dict[str, str]] | None  # Triton's repository index: name, version, state, reason
    disk_used: dict[str, int]  # bytes under each path asked about
    log: str  # where the server's log is: its file, or "journalctl -u tritonserver.service" (systemd)
    log_tail: list[str]  # the server log's last lines


class ServerStatus(FactBase[ServerStatusData | None]):
    """What deploy/status.py shows beyond the other facts, in one round trip: uptime, the models'
    states from Triton, disk used under paths, the log's last lines. None where python3 is missing."""

    def command(
        self, run_dir: str, http_host: str, http_port: int, pid: int | None, key_file: str, paths: list[str]
    ) -> StringCommand:
        return python(
            "python3", "server_status.py", run_dir, http_host, str(http_port), str(pid or ""), "20", key_file, *paths
        )

    def process(self, output: list[str]) -> ServerStatusData | None:
        try:
            return json.loads("".join(output))
        except ValueError:
            return None
