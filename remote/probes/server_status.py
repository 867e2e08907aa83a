"""ServerStatus: what deploy/status.py shows beyond the other facts, read in one go, changing nothing.

    python3 server_status.py RUN_DIR HTTP_HOST HTTP_PORT PID LOG_LINES PATH...

Prints one JSON object: the pid's uptime in seconds, when the running server was started (its
config hash's time), each model Triton's repository index lists with its state, the bytes used
under each PATH, and the server log's last LOG_LINES lines (the journal's where systemd runs our unit).
Runs on the host (3.8+).
"""

import json
import os
import subprocess
import sys
import time
import urllib.request

from _common import tree_size


def uptime(pid: int):
    """Seconds since the process started, from /proc (clock ticks since boot); None where it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            since_boot = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return round(since_boot - start_ticks / os.sysconf("SC_CLK_TCK"), 1)


UNIT = "tritonserver.service"


def models(host: str, port: str, key_file: str):
    """Triton's repository index: [{name, version, state, reason}]; None where it does not answer. The
    repository API asks for the model-control key (root's file; read where this user may)."""
    headers = {"Content-Type": "application/json"}
    try:
        with open(key_file) as f:
            headers["triton-model-control"] = f.read().strip()
    except OSError:
        pass
    req = urllib.request.Request(f"http://{host}:{port}/v2/repository/index", b"{}", headers)
    try:
        with urllib.request.urlopen(req, timeout=3) as resp:
            return [{k: m.get(k, "") for k in ("name", "version", "state", "reason")} for m in json.load(resp)]
    except (OSError, ValueError):
        return None


def tail(path: str, lines: int):
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 64 * 1024))
            return f.read().decode("utf-8", "replace").splitlines()[-lines:]
    except OSError:
        return []


def journal_tail(lines: int):
    """The last lines of the unit's journal (systemd hosts: the unit writes its log there)."""
    try:
        res = subprocess.run(
            ["journalctl", "-u", UNIT, "-o", "cat", "--no-pager", "-n", str(lines)],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return res.stdout.splitlines()[-lines:]


def in_journal() -> bool:
    """Whether the server's log is the journal's: systemd runs the host and our unit is there."""
    return os.path.isdir("/run/systemd/system") and os.path.exists(f"/etc/systemd/system/{UNIT}")


def main(run: str, host: str, port: str, pid: str, lines: str, key_file: str, *paths: str) -> int:
    try:
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.stat(f"{run}/config.hash").st_mtime))
    except OSError:
        started = None
    out = {
        "uptime_s": uptime(int(pid)) if pid.isdigit() else None,
        "started": started,
        "models": models(host, port, key_file),
        "disk_used": {p: tree_size(p) for p in paths},
        "log": f"journalctl -u {UNIT}" if in_journal() else f"{run}/tritonserver.log",
        "log_tail": journal_tail(int(lines)) if in_journal() else tail(f"{run}/tritonserver.log", int(lines)),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
