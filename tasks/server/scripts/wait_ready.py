"""Wait until Triton is ready and each model answers ready, then (optionally) prove one inference.

    python3 wait_ready.py HTTP_HOST HTTP_PORT PID_FILE LOG_FILE TIMEOUT_S [MODEL ...]

On failure prints the server log lines that explain it, and exits 1. Runs on the host (3.8+).
With TRITON_HANDOVER="OLD_PID USER GRPC_PORT" (a build upgrade: PID_FILE's server started beside the old
one on the same ports), it first waits until the new server listens on the HTTP and gRPC ports, then
steers both to it (remote/_reuseport.py): what follows, readiness and proof, reaches the new server alone.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

from _causes import cause_of, is_error
from _common import printable, proof
from _reuseport import listening, steer_ports

# Lines after which this start cannot become ready: a model Triton gave up loading (it does not
# retry), or a stub or server that cannot load a library. Seen, the wait stops at once.
FATAL = ("failed to load '", "error while loading shared libraries", "failed to initialize python stub")
# What a host without a GPU always logs: warnings, never the cause of a failure.
HARMLESS = (
    "failed to initialize nvml",
    "dcgm unable to start",
    "cuda driver version is insufficient",
    "unable to get cuda device count",
    "pinned memory pool",
)


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def explain(log: str, limit: int = 30) -> str:
    """The log lines that explain a failure, each followed by its cause and fix where known."""
    lines = this_start(log)
    if not lines:
        return "(no server log)"
    out, causes = [], []
    for line in lines:
        low = line.lower()
        if any(h in low for h in HARMLESS):
            continue
        hit = cause_of(line)
        if hit or is_error(line):
            out.append("  | " + printable(line))
            if hit and hit[0] not in causes:
                causes.append(hit[0])
                out.append(f"  => cause: {hit[0]}; fix: {hit[1]}")
    return "\n".join(out[-limit:] or ["  | " + printable(x) for x in lines[-limit:]])


def this_start(log: str) -> list[str]:
    """The log lines of the latest start: of the file log after its last '--- start' line, or where log
    is journal:UNIT@CURSOR_FILE (systemd), the unit's journal after the cursor the start recorded (never
    a line of an earlier start that the journal had not yet passed on)."""
    try:
        if log.startswith("journal:"):
            unit, _, cursor_file = log[8:].partition("@")
            command = ["journalctl", "-u", unit, "-o", "cat", "--no-pager", "-n", "5000"]
            try:
                with open(cursor_file) as f:
                    cursor = f.read().strip()
            except OSError:
                cursor = ""
            if cursor:
                command.append(f"--after-cursor={cursor}")
            text = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=30).stdout
        else:
            with open(log, errors="replace") as f:
                text = f.read()
    except (OSError, subprocess.SubprocessError):
        return []
    return re.split(r"^--- start.*$", text, flags=re.MULTILINE)[-1].strip("\n").splitlines()


def fatal(log: str) -> str:
    """The first line of this start that means it will never be ready; "" while there is none."""
    return next((line for line in this_start(log) if any(p in line.lower() for p in FATAL)), "")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def smoke(base: str) -> None:
    body = {"inputs": [{"name": "TEXT", "shape": [2, 1], "datatype": "BYTES", "data": ["hello", "triton"]}]}
    req = urllib.request.Request(
        f"{base}/v2/models/smoke/infer", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        out = {o["name"]: o["data"] for o in json.load(resp)["outputs"]}
    if out.get("LENGTH") != [5, 6] or out.get("UPPER") != ["HELLO", "TRITON"]:
        raise RuntimeError(f"smoke inference answered {out}")
    proof(f"ready: smoke inference answered {out}")


def handed_over(pid: int, port: int, log: str, deadline: float) -> bool:
    """TRITON_HANDOVER's new server (pid) listens on both ports, and they are steered to it; False (said)
    where it exits or cannot become ready first."""
    old, user, grpc = os.environ["TRITON_HANDOVER"].split()
    ports = [port, int(grpc)]
    while time.monotonic() < deadline:
        if not alive(pid) or fatal(log):
            return True  # the wait below says why
        if all(listening(pid, p) for p in ports):
            steer_ports(int(old), ports, lambda held: held, pwd.getpwnam(user).pw_uid)  # past the old's sockets
            proof(f"handover: new connections to ports {port} and {grpc} go to Triton pid {pid}, not {old}")
            return True
        time.sleep(0.25)
    return False


def main(address: str, port: str, pid_file: str, log: str, timeout: str, *models: str) -> int:
    base = f"http://{address}:{port}"  # the address a client on this host connects to
    deadline = time.monotonic() + float(timeout)
    with open(pid_file) as f:
        pid = int(f.read().strip())
    if os.environ.get("TRITON_HANDOVER") and not handed_over(pid, int(port), log, deadline):
        print(f"Triton (pid {pid}) did not open its ports in {timeout}s. Server log:\n{explain(log)}", file=sys.stderr)
        return 1
    while time.monotonic() < deadline:
        if not alive(pid):
            print(f"Triton (pid {pid}) exited while starting. Server log:\n{explain(log)}", file=sys.stderr)
            return 1
        line = fatal(log)
        if line:
            print(
                f"Triton (pid {pid}) cannot become ready; stopped waiting at this log line:\n  | {line.strip()}\n"
                f"Server log:\n{explain(log)}",
                file=sys.stderr,
            )
            return 1
        if get(f"{base}/v2/health/ready") == 200 and all(get(f"{base}/v2/models/{m}/ready") == 200 for m in models):
            proof(f"ready: Triton pid {pid} at {base}, models {', '.join(models) or '-'}")
            if "smoke" in models:
                smoke(base)
            return 0
        time.sleep(0.25)
    print(f"Triton at {base} was not ready after {timeout}s. Server log:\n{explain(log)}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
