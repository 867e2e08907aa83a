"""The Triton server process: a model repository, started detached, restarted only on change."""

from __future__ import annotations

import hashlib
import re

from pyinfra import host
from pyinfra.api import FunctionCommand, OperationError, QuoteString, StringCommand, operation
from pyinfra.facts.files import FileContents

from config.layout import Layout
from config.settings import Settings
from facts.ports import ListeningPorts
from facts.server import UNIT_PATH, ServerState
from facts.system import InitSystem
from tasks._script import python_script

READY_TIMEOUT_S = 180


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
        # Our config.pbtxt files are complete: without this the python backend starts every model's
        # stub once more just to ask it for a config (a second `import torch`: +3 s per start here).
        "--disable-auto-complete-config",
    ]


def config_hash(args: list[str], models: dict[str, bytes], install: str, venv_pins: dict[str, str]) -> str:
    """What the server depends on: a change in any of it restarts the server, nothing else does."""
    h = hashlib.sha256()
    for part in [*args, install, *(f"{k}=={v}" for k, v in sorted(venv_pins.items()))]:
        h.update(part.encode() + b"\0")
    for path, content in sorted(models.items()):
        h.update(path.encode() + b"\0" + hashlib.sha256(content).digest())
    return h.hexdigest()[:32]


# Stop one pid, only while it is a tritonserver: TERM, then KILL after 30 s (Triton's exit timeout).
_STOP_PID = (
    "stop_pid() {\n"
    '  tr "\\0" " " < "/proc/$1/cmdline" 2>/dev/null | grep -q tritonserver || return 0\n'
    '  echo "stopping Triton pid $1" >&2; kill -TERM "$1" 2>/dev/null || true; i=0\n'
    '  while [ -d "/proc/$1" ] && ! grep -q "^State:.*Z" "/proc/$1/status" 2>/dev/null && [ $i -lt 150 ];'
    " do sleep 0.2; i=$((i+1)); done\n"
    '  kill -KILL "$1" 2>/dev/null || true\n'
    "}\n"
)
# $1 run dir, $2 launcher, $3 config hash, $4 stale pids; the rest: tritonserver's arguments.
_START = _STOP_PID + (
    'set -e; run="$1"; launcher="$2"; hash="$3"; stale="$4"; shift 4\n'
    'mkdir -p "$run"\n'
    'for p in $(cat "$run/tritonserver.pid" 2>/dev/null) $stale; do stop_pid "$p"; done\n'
    'rm -f "$run/tritonserver.pid" "$run/config.hash" "$run/proof.txt"\n'
    'echo "--- start $(date -u +%FT%TZ)" >> "$run/tritonserver.log"\n'
    'setsid "$launcher" tritonserver "$@" >> "$run/tritonserver.log" 2>&1 < /dev/null &\n'
    'echo $! > "$run/tritonserver.pid"; echo "$hash" > "$run/config.hash"\n'
    'echo "started Triton pid $(cat "$run/tritonserver.pid")" >&2\n'
)
# $1 run dir, $2 stale pids
_STOP = _STOP_PID + (
    'run="$1"; for p in $(cat "$run/tritonserver.pid" 2>/dev/null) $2; do stop_pid "$p"; done\n'
    'rm -f "$run/tritonserver.pid" "$run/config.hash"\n'
)


UNIT = UNIT_PATH
_SYSTEMD_PLAIN = re.compile(r"[A-Za-z0-9_./:=,+@%-]+")  # after % was doubled


def systemd_word(value: str) -> str:
    """One argument of an Exec= line, as systemd reads it back: `%` and `$` doubled (systemd expands
    specifiers and variables there), quoted C-style when it holds anything but plain characters.
    shlex.quote is not this: systemd knows no '\\'' trick and would expand a `%h` inside '...'."""
    if any(ord(ch) < 32 for ch in value):
        raise ValueError(f"a control character cannot stand in a systemd unit: {value!r}")
    doubled = value.replace("%", "%%").replace("$", "$$")
    if _SYSTEMD_PLAIN.fullmatch(doubled):
        return doubled
    return '"' + doubled.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_path(value: str) -> str:
    """A path that ends a unit setting (StandardOutput=append:PATH): specifiers doubled, nothing quoted."""
    if any(ord(ch) < 32 for ch in value):
        raise ValueError(f"a control character cannot stand in a systemd unit: {value!r}")
    return value.replace("%", "%%")


def systemd_unit(s: Settings, layout: Layout) -> str:
    """The unit used where systemd is PID 1: the launcher's environment, the same arguments and log,
    restarted on failure at most 3 times a minute (no restart loop)."""
    command = " ".join(systemd_word(a) for a in [layout.launcher, "tritonserver", *server_args(s, layout)])
    log = systemd_path(f"{layout.run}/tritonserver.log")
    return (
        "# Written by triton-provisioner.\n[Unit]\nDescription=NVIDIA Triton Inference Server\n"
        "After=network-online.target\nStartLimitIntervalSec=60\nStartLimitBurst=3\n\n"
        f"[Service]\nExecStart={command}\nRestart=on-failure\nRestartSec=5\n"
        f"StandardOutput=append:{log}\nStandardError=append:{log}\nStandardInput=null\n\n"
        "[Install]\nWantedBy=multi-user.target\n"
    )


# $1 unit path, $2 unit text, $3 run dir, $4 config hash, $5 stale pids: stop our detached servers,
# install the unit, enable it (started at boot), (re)start it, record the pid and hash.
_START_SYSTEMD = _STOP_PID + (
    'set -e; mkdir -p "$3"; for p in $5; do stop_pid "$p"; done\n'
    'printf "%s" "$2" > "$1.new"; mv "$1.new" "$1"; rm -f "$3/proof.txt" "$3/config.hash"\n'
    'echo "--- start $(date -u +%FT%TZ)" >> "$3/tritonserver.log"\n'
    "systemctl daemon-reload; systemctl enable --quiet tritonserver.service\n"
    "systemctl restart tritonserver.service\n"
    'systemctl show -p MainPID --value tritonserver.service > "$3/tritonserver.pid"; echo "$4" > "$3/config.hash"\n'
    'echo "started Triton (tritonserver.service) pid $(cat "$3/tritonserver.pid")" >&2\n'
)


def _port_holders(s: Settings, ours: set[int]) -> list[str]:
    """Each of our ports held by a process that is not our server: 'port P: NAME (pid N)'."""
    listening = host.get_fact(ListeningPorts)
    held = []
    for label, port in (("http", s.triton_http_port), ("grpc", s.triton_grpc_port), ("metrics", s.triton_metrics_port)):
        for h in listening.get(port, []):
            if h["pid"] in ours:
                continue
            who = f"{h['process']} (pid {h['pid']})" if h["pid"] else "a process not visible to this user"
            held.append(f"triton_{label}_port {port} is held by {who} on {h['address']}")
    return held


@operation()
def running(
    s: Settings,
    layout: Layout,
    wanted_hash: str,
    models: list[str],
    verify: str = "",
    in_process: bool = True,
    python: str = "python3",
):
    """Our server runs with wanted_hash and is ready; else (re)start it, wait for readiness, prove it.

    A port held by another process stops here with its name and pid; our own stale server
    (recorded pid, or serving our repository) is stopped cleanly first. verify is the JSON
    of tasks.models.verify_spec: after a start each model is called over HTTP and gRPC.
    """
    http_host = s.http_connect_host
    state = host.get_fact(ServerState, layout.run, http_host, s.triton_http_port, layout.models)
    systemd = host.get_fact(InitSystem)["systemd"]
    unit = systemd_unit(s, layout) if systemd else ""
    unit_current = not systemd or state["unit_sha256"] == hashlib.sha256(unit.encode()).hexdigest()
    if state["pid"] and state["config_hash"] == wanted_hash and state["ready"] and unit_current:
        if systemd and not state["unit_enabled"]:
            yield "systemctl enable --quiet tritonserver.service"  # serving as wanted: no restart
            return
        host.noop(f"Triton pid {state['pid']} is ready with this configuration")
        return
    held = _port_holders(s, {p for p in [state["pid"], *state["stale"]] if p})
    if held:
        raise OperationError("; ".join(held) + ". Stop that process, or choose other ports in the settings.")
    stale = " ".join(str(p) for p in state["stale"])
    if systemd:
        yield StringCommand(
            "sh",
            "-c",
            QuoteString(_START_SYSTEMD),
            "_",
            QuoteString(UNIT),
            QuoteString(unit),
            QuoteString(layout.run),
            QuoteString(wanted_hash),
            QuoteString(stale),
        )
    else:
        yield StringCommand(
            "sh",
            "-c",
            QuoteString(_START),
            "_",
            QuoteString(layout.run),
            QuoteString(layout.launcher),
            QuoteString(wanted_hash),
            QuoteString(stale),
            *(QuoteString(a) for a in server_args(s, layout)),
        )
    proof_file = f"{layout.run}/proof.txt"
    env = {"TRITON_PROOF_FILE": proof_file}
    ready_args = [f"{layout.run}/tritonserver.pid", f"{layout.run}/tritonserver.log", str(READY_TIMEOUT_S)]
    yield python_script(python, "wait_ready.py", http_host, str(s.triton_http_port), *ready_args, *models, env=env)
    if verify and verify != "[]":
        yield python_script(
            "python3",
            "verify_models.py",
            f"{http_host}:{s.triton_http_port}",
            f"{http_host}:{s.triton_grpc_port}",
            layout.models,
            "1" if in_process else "0",
            verify,
            via=layout.launcher,
            env=env,
        )
    yield FunctionCommand(_show_proof, (proof_file,), {})


def _show_proof(state, host, path: str) -> bool:
    """Log, on the controller, what the start proved: readiness and each model's inference."""
    for line in host.get_fact(FileContents, path=path) or []:
        host.log(line)
    return True


@operation()
def stopped(s: Settings, layout: Layout):
    """No server of ours runs, and none comes back at boot: the unit stopped **and disabled** where
    systemd runs the host; TERM (KILL after 30 s) to the recorded pid and to any serving our repository."""
    http_host = s.http_connect_host
    state = host.get_fact(ServerState, layout.run, http_host, s.triton_http_port, layout.models)
    unit_on = state["unit_enabled"] or state["unit_active"]
    if not state["pid"] and not state["stale"] and not unit_on:
        host.noop("no Triton server of ours is running")
        return
    if unit_on:
        yield "systemctl disable --now --quiet tritonserver.service"
    yield StringCommand(
        "sh",
        "-c",
        QuoteString(_STOP),
        "_",
        QuoteString(layout.run),
        QuoteString(" ".join(str(p) for p in state["stale"])),
    )
