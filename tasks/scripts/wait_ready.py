"""Wait until Triton is ready and each model answers ready, then (optionally) prove one inference.

    python3 wait_ready.py HTTP_ADDRESS HTTP_PORT PID_FILE LOG_FILE TIMEOUT_S [MODEL ...]

On failure prints the server log lines that explain it, and exits 1. Runs on the host (3.8+).
"""

import json
import sys
import time
import urllib.error
import urllib.request

EXPLAIN = ("error", "failed", "not found", "unable", "cannot", "exception", "traceback", "unpack_from", "in use")


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def log_tail(log: str, limit: int = 40) -> str:
    try:
        with open(log, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return "(no log)"
    relevant = [line for line in lines if any(k in line.lower() for k in EXPLAIN)]
    return "\n".join((relevant or lines)[-limit:])


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
    print(f"ready: smoke inference answered {out}", file=sys.stderr)


def main(address: str, port: str, pid_file: str, log: str, timeout: str, *models: str) -> int:
    host = "127.0.0.1" if address in ("0.0.0.0", "::") else address
    base = f"http://{host}:{port}"
    deadline = time.monotonic() + float(timeout)
    with open(pid_file) as f:
        pid = int(f.read().strip())
    while time.monotonic() < deadline:
        if not alive(pid):
            print(f"Triton (pid {pid}) exited while starting. Server log:\n{log_tail(log)}", file=sys.stderr)
            return 1
        if get(f"{base}/v2/health/ready") == 200 and all(get(f"{base}/v2/models/{m}/ready") == 200 for m in models):
            print(f"ready: Triton pid {pid} at {base}, models {', '.join(models) or '-'}", file=sys.stderr)
            if "smoke" in models:
                smoke(base)
            return 0
        time.sleep(0.25)
    print(f"Triton at {base} was not ready after {timeout}s. Server log:\n{log_tail(log)}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
