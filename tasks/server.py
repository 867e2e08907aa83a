"""The Triton server process: a model repository, started detached, restarted only on change."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, deploy, operation
from pyinfra.operations import files

from config.settings import Settings
from facts.server import ServerState
from tasks._script import python_script
from tasks.layout import Layout

TEMPLATES = Path(__file__).resolve().parents[1] / "templates" / "models"
READY_TIMEOUT_S = 180


def model_files(names: list[str]) -> dict[str, bytes]:
    """Relative path in the model repository -> content, for each template model."""
    out = {}
    for name in names:
        out[f"{name}/config.pbtxt"] = (TEMPLATES / name / "config.pbtxt").read_bytes()
        out[f"{name}/1/model.py"] = (TEMPLATES / name / "model.py").read_bytes()
    return out


def server_args(s: Settings, layout: Layout) -> list[str]:
    """tritonserver's command line: our own backend, cache and repository paths, addresses and ports."""
    a = s.triton_http_address
    return [
        "--model-repository",
        layout.models,
        "--backend-directory",
        f"{layout.current}/backends",
        "--cache-directory",
        f"{layout.current}/caches",
        "--http-address",
        a,
        "--http-port",
        str(s.triton_http_port),
        "--grpc-address",
        a,
        "--grpc-port",
        str(s.triton_grpc_port),
        "--metrics-address",
        a,
        "--metrics-port",
        str(s.triton_metrics_port),
        "--exit-timeout-secs",
        "10",
    ]


def config_hash(args: list[str], models: dict[str, bytes], install: str, venv_pins: dict[str, str]) -> str:
    """What the server depends on: a change in any of it restarts the server, nothing else does."""
    h = hashlib.sha256()
    for part in [*args, install, *(f"{k}=={v}" for k, v in sorted(venv_pins.items()))]:
        h.update(part.encode() + b"\0")
    for path, content in sorted(models.items()):
        h.update(path.encode() + b"\0" + hashlib.sha256(content).digest())
    return h.hexdigest()[:32]


@deploy("Model repository")
def repository(layout: Layout, models: dict[str, bytes]) -> None:
    """Each model's files under the repository, rewritten only when they differ."""
    from io import BytesIO

    for rel, content in sorted(models.items()):
        files.put(name=f"Model file {rel}", src=BytesIO(content), dest=f"{layout.models}/{rel}", mode="644")


_START = (
    'set -e; run="$1"; launcher="$2"; hash="$3"; shift 3\n'
    'mkdir -p "$run"\n'
    'pid=$(cat "$run/tritonserver.pid" 2>/dev/null || true)\n'
    # stop our own previous server: only the pid we recorded, and only if it is a tritonserver
    'if [ -n "$pid" ] && tr "\\0" " " < "/proc/$pid/cmdline" 2>/dev/null | grep -q tritonserver; then\n'
    '  echo "stopping Triton pid $pid" >&2; kill -TERM "$pid" 2>/dev/null || true\n'
    '  i=0; while [ -d "/proc/$pid" ] && ! grep -q "^State:.*Z" "/proc/$pid/status" 2>/dev/null'
    " && [ $i -lt 150 ]; do sleep 0.2; i=$((i+1)); done\n"
    '  kill -KILL "$pid" 2>/dev/null || true\n'
    "fi\n"
    'rm -f "$run/tritonserver.pid" "$run/config.hash"\n'
    'echo "--- start $(date -u +%FT%TZ)" >> "$run/tritonserver.log"\n'
    'setsid "$launcher" tritonserver "$@" >> "$run/tritonserver.log" 2>&1 < /dev/null &\n'
    'echo $! > "$run/tritonserver.pid"; echo "$hash" > "$run/config.hash"\n'
    'echo "started Triton pid $(cat "$run/tritonserver.pid")" >&2\n'
)


@operation()
def running(s: Settings, layout: Layout, wanted_hash: str, models: list[str], python: str = "python3"):
    """Our server runs with wanted_hash and is ready; else (re)start it and wait for readiness."""
    http_host = "127.0.0.1" if s.triton_http_address in ("0.0.0.0", "::") else s.triton_http_address
    state = host.get_fact(ServerState, layout.run, http_host, s.triton_http_port)
    if state["pid"] and state["config_hash"] == wanted_hash and state["ready"]:
        host.noop(f"Triton pid {state['pid']} is ready with this configuration")
        return
    yield StringCommand(
        "sh",
        "-c",
        QuoteString(_START),
        "_",
        QuoteString(layout.run),
        QuoteString(layout.launcher),
        QuoteString(wanted_hash),
        *(QuoteString(a) for a in server_args(s, layout)),
    )
    yield python_script(
        python,
        "wait_ready.py",
        s.triton_http_address,
        str(s.triton_http_port),
        f"{layout.run}/tritonserver.pid",
        f"{layout.run}/tritonserver.log",
        str(READY_TIMEOUT_S),
        *models,
    )
