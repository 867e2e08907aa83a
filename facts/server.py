"""Facts about our running Triton server: its pid (verified), its configuration hash, readiness."""

from __future__ import annotations

from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from facts._shell import script_command


class ServerStateData(TypedDict):
    pid: int | None  # from the pid file, only while that process is a tritonserver
    config_hash: str | None  # what the running server was started with
    ready: bool  # GET /v2/health/ready answered 200
    stale: list[int]  # other tritonserver processes serving our model repository (lost pid file)


class ServerState(FactBase[ServerStateData]):
    """The server started from run_dir: alive (by pid file and /proc cmdline), its config hash, ready."""

    def command(self, run_dir: str, http_host: str, http_port: int, models_dir: str) -> StringCommand:
        return script_command(
            'r="$1"; pid=$(cat "$r/tritonserver.pid" 2>/dev/null);'
            ' if [ -n "$pid" ] && tr "\\0" " " < "/proc/$pid/cmdline" 2>/dev/null | grep -q tritonserver'
            ' && ! grep -q "^State:.*Z" "/proc/$pid/status" 2>/dev/null; then echo "PID=$pid"; fi;'
            ' [ -f "$r/config.hash" ] && echo "HASH=$(cat "$r/config.hash")";'
            " python3 -c \"import urllib.request as u,sys; u.urlopen(sys.argv[1], timeout=2); print('READY')\""
            ' "http://$2:$3/v2/health/ready" 2>/dev/null;'
            ' for p in /proc/[0-9]*; do c=$(tr "\\0" " " < "$p/cmdline" 2>/dev/null) || continue;'
            ' case "$c" in *tritonserver*"--model-repository $4 "*) [ "${p#/proc/}" = "$pid" ] ||'
            ' echo "STALE=${p#/proc/}";; esac; done; true',
            run_dir,
            http_host,
            str(http_port),
            models_dir,
        )

    @staticmethod
    def default() -> ServerStateData:
        return ServerStateData(pid=None, config_hash=None, ready=False, stale=[])

    def process(self, output: list[str]) -> ServerStateData:
        data = self.default()
        for line in output:
            if line.startswith("PID=") and line[4:].isdigit():
                data["pid"] = int(line[4:])
            elif line.startswith("HASH="):
                data["config_hash"] = line[5:] or None
            elif line == "READY":
                data["ready"] = True
            elif line.startswith("STALE=") and line[6:].isdigit():
                data["stale"].append(int(line[6:]))
        if data["pid"] is None:
            data["ready"] = False
        return data
