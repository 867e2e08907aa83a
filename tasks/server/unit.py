"""The server's command line and its systemd unit: tritonserver's arguments from the settings, the
configuration hash a restart is decided by, and the unit's text with systemd's own quoting."""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass, replace

from config.layout import Layout
from config.ports import FRONT_PROGRAM
from config.settings import Settings
from tasks.server.front_plan import SLOT_ENV, SLOT_PORT_VARS, SLOT_VAR, FrontPlan, front_plan


def server_args(settings: Settings, layout: Layout) -> list[str]:
    """tritonserver's command line: our own backend, cache and repository paths, addresses and ports."""
    address = settings.triton_http_address
    return [
        "--model-repository",
        layout.models,
        "--backend-directory",
        f"{layout.current}/backends",
        "--cache-directory",
        f"{layout.current}/caches",
        "--http-address",
        address,
        "--http-port",
        str(settings.triton_http_port),
        "--grpc-address",
        address,
        "--grpc-port",
        str(settings.triton_grpc_port),
        "--metrics-address",
        address,
        "--metrics-port",
        str(settings.triton_metrics_port),
        "--exit-timeout-secs",
        "10",
        # A second server (a build upgrade's new one: tasks/server/handover.py) may listen on the same ports
        # beside this one; the kernel hands a new connection to one of them (steered: remote/_reuseport.py).
        "--reuse-http-port",
        "true",
        "--reuse-grpc-port",
        "true",
        # Our config.pbtxt files are complete: without this the python backend starts every model's
        # stub once more just to ask it for a config (a second `import torch`: +3 s per start here).
        "--disable-auto-complete-config",
        # Models are loaded and unloaded through the repository API (every one at a start): a change
        # of models or venv reloads only what changed, the server goes on answering (tasks/models/control.py).
        # Its load and unload ask for a key: the server's launcher adds that restriction (MODEL_CONTROL_HEADER).
        "--model-control-mode",
        "explicit",
        "--load-model",
        "*",
        "--model-load-thread-count",
        str(settings.triton_model_load_threads),
        # Ready means the server answers: a model added by a change that failed to load stays in Triton's
        # list (UNAVAILABLE) even once unloaded, and strict readiness would then report the whole server
        # not ready for good (the next run would restart it). Each model's readiness is asked on its own.
        "--strict-readiness",
        "false",
    ]


# The header a repository API request (load, unload, index) carries the model-control key in.
MODEL_CONTROL_HEADER = "triton-model-control"


def server_launcher(layout: Layout) -> str:
    """The server's launcher: the launcher's environment, then tritonserver with its arguments and the
    repository API restricted (HTTP and gRPC) to requests carrying the key, read from a file only root and
    the server's user can read. The key stays out of every file others can read and every command pyinfra
    runs; Triton takes it only as an argument, so it is in the server's own command line."""
    restricted = f"model-repository:{MODEL_CONTROL_HEADER}=$key"
    # the server's own Python bytecode, kept where its user may write (never in root's environment)
    bytecode = f"export PYTHONPYCACHEPREFIX={shlex.quote(layout.python_bytecode)}\n" if layout.python_bytecode else ""
    policy = layout.settings.triton_omp_wait_policy  # the stubs' OpenMP threads: sleep, not spin, between requests
    threads = f"export OMP_WAIT_POLICY={policy.upper()}\n" if policy else ""
    return (
        "#!/bin/sh\n# triton-provisioner: tritonserver with Triton's environment, its model load and unload\n"
        "# answering only requests that carry the model-control key\n"
        f". {shlex.quote(layout.home + '/env.sh')}\n"
        + bytecode
        + threads
        + f'key=$(cat {shlex.quote(layout.model_control_key)}) && [ -n "$key" ] ||\n'
        "  { echo 'no model-control key: run deploy/serve.py' >&2; exit 1; }\n"
        f'exec tritonserver "$@" "--http-restricted-api={restricted}" "--grpc-restricted-protocol={restricted}"\n'
    )


def server_hash(args: list[str], install: str, python: str, libpython_dir: str) -> str:
    """What the server process itself depends on: its arguments, the Triton install, the venv's Python
    minor version (the stub is built for it) and the libpython directory its environment names. A change
    in any of it restarts the server; the models and the venv are reloaded without a restart."""
    h = hashlib.sha256()
    for part in [*args, install, f"python={python}", f"libpython={libpython_dir}"]:
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:32]


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


# The log watcher beside a detached server: while the server (pid "$0") lives, rotate its log every
# few seconds ("$1" the rotation script, then the log, its cap in bytes, the copies kept, the interval).
# server_start.sh runs it in the background, its own process group, and records its pid: a stop stops it.
LOG_WATCH = 'while kill -0 "$0" 2>/dev/null; do "$1" "$2" "$3" "$4"; sleep "$5"; done >/dev/null 2>&1'


def log_watch_args(settings: Settings, layout: Layout) -> list[str]:
    """The watcher's arguments after the pid: script, log, cap in bytes, copies kept, interval."""
    cap = settings.triton_log_max_mb * 2**20
    return [
        layout.log_rotate,
        layout.server_log,
        str(cap),
        str(settings.triton_log_keep),
        str(settings.triton_log_check_s),
    ]


# How long a start (or a handover's new server) may take to become ready before it counts as failed.
READY_TIMEOUT_S = 180
JOURNAL = "journal:tritonserver.service"  # where a systemd host's server log is (wait_ready, status)


# Under systemd a build upgrade's new server is started by `systemctl reload` (tasks/server/handover.py):
# inside the unit (its user, sandbox, cgroup and journal), beside the running one, on the ports the
# provisioner leaves in this file for the reload's length (the metrics port; behind the front all three, the
# other slot's); a reload nobody asked for starts nothing.
HANDOVER_ENV = "handover.env"
HANDOVER_VARS = {
    "metrics": "TRITON_HANDOVER_METRICS_PORT",
    "http": "TRITON_HANDOVER_HTTP_PORT",
    "grpc": "TRITON_HANDOVER_GRPC_PORT",
}


def _reload_starts(services: tuple[str, ...]) -> str:
    """ExecReload's shell: the new server, its ports for these services from HANDOVER_ENV's variables."""
    first = HANDOVER_VARS[services[0]]
    where = "on the other slot" if "http" in services else "on the same ports"
    ports = " ".join(f'--{service}-port "${HANDOVER_VARS[service]}"' for service in services)
    return (
        f'[ -n "${first}" ] || {{ echo "a reload starts a new server only when the provisioner '
        'asks for one: nothing to do"; exit 0; }; '
        f'setsid "$0" "$@" {ports} < /dev/null & '
        f'echo "--- start (beside Triton pid $MAINPID, {where}): pid $!"'
    )


def _without(args: list[str], flags: tuple[str, ...]) -> list[str]:
    """args less each of these flags and its value."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in flags:
            skip = True
        else:
            out.append(arg)
    return out


def _sandbox(settings: Settings, writable: tuple[str, ...]) -> str:
    """A unit's lines that run it as the server's user, with no new privileges, the file system read-only
    but for these paths ("" where the server runs as root)."""
    if settings.triton_user == "root":
        return ""
    paths = " ".join(systemd_word(f"-{path}") for path in writable)
    return (
        f"User={settings.triton_user}\nGroup={settings.triton_user}\nNoNewPrivileges=yes\nProtectSystem=strict\n"
        f"ReadWritePaths={paths}\nPrivateTmp=yes\nProtectHome=yes\n"
    )


def systemd_unit(settings: Settings, layout: Layout, front: FrontPlan | None = None) -> str:
    """The unit used where systemd is PID 1: the launcher's environment, the same arguments, restarted on
    failure at most 3 times a minute (no restart loop). Its output goes to the journal (`journalctl -u
    tritonserver`), which keeps and rotates it; a "--- start" line there begins each start's lines.
    ExecReload starts a handover's new server (HANDOVER_ENV); only root may then name it the unit's main
    process (NotifyAccess=main: a model's code in the unit cannot). Behind the front the server listens on
    the ports of the slot SLOT_ENV names."""
    args = list(front.args("a")) if front else server_args(settings, layout)
    services = ("http", "grpc", "metrics") if front else ("metrics",)
    words = [systemd_word(a) for a in [layout.server_launcher, *args]]
    if front:  # each slot port's value is the slot file's variable (systemd expands ${NAME} as one word)
        for service, var in SLOT_PORT_VARS.items():
            words[words.index(f"--{service}-port") + 1] = f"${{{var}}}"
    reload_args = ["/bin/sh", "-c", _reload_starts(services), layout.server_launcher]
    reload_args += _without(args, tuple(f"--{service}-port" for service in services))
    reload = " ".join(systemd_word(a) for a in reload_args)
    # the models' code runs in here: it may write the HF cache and bytecode only
    sandbox = _sandbox(settings, (layout.hf_cache, layout.python_bytecode))
    slot = f"EnvironmentFile={systemd_word(f'{layout.run}/{SLOT_ENV}')}\n" if front else ""
    return (
        "# Written by triton-provisioner.\n[Unit]\nDescription=NVIDIA Triton Inference Server\n"
        "After=network-online.target\nStartLimitIntervalSec=60\nStartLimitBurst=3\n\n"
        f"[Service]\nExecStartPre=/bin/echo {systemd_word('--- start')}\n{slot}ExecStart={' '.join(words)}\n{sandbox}"
        f"EnvironmentFile=-{systemd_word(f'{layout.run}/{HANDOVER_ENV}')}\nExecReload={reload}\nNotifyAccess=main\n"
        "Restart=on-failure\nRestartSec=5\n"
        "StandardOutput=journal\nStandardError=journal\nSyslogIdentifier=tritonserver\nStandardInput=null\n\n"
        "[Install]\nWantedBy=multi-user.target\n"
    )


def front_unit(settings: Settings, layout: Layout) -> str:
    """The front's unit (triton_upgrade = "front" under systemd): HAProxy in the foreground, one process, as
    the server's user in a sandbox where only its runtime socket's folder is writable, on the slot SLOT_ENV
    names; restarted on failure; its log the journal's (`journalctl -u triton-front`)."""
    mark = "TRITONSLOTMARK"  # plain characters: systemd_word leaves them, then they become the variable
    config = systemd_word(f"{layout.run}/front-{mark}.cfg").replace(mark, f"${{{SLOT_VAR}}}")
    return (
        "# Written by triton-provisioner.\n[Unit]\nDescription=HAProxy in front of the Triton server\n"
        "After=network-online.target\nStartLimitIntervalSec=60\nStartLimitBurst=3\n\n"
        f"[Service]\nEnvironmentFile={systemd_word(f'{layout.run}/{SLOT_ENV}')}\n"
        f"ExecStart={FRONT_PROGRAM} -db -f {config}\n{_sandbox(settings, (f'{layout.run}/front',))}"
        "Restart=on-failure\nRestartSec=2\n"
        "StandardOutput=journal\nStandardError=journal\nSyslogIdentifier=triton-front\nStandardInput=null\n\n"
        "[Install]\nWantedBy=multi-user.target\n"
    )


@dataclass(frozen=True)
class ServerPlan:
    """Where our server lives and how it is reached and started on one host; built by `server_plan`."""

    run_dir: str  # pid file, config hash, log, proof
    launcher: str  # sets Triton's environment, then runs its arguments
    starter: str  # runs tritonserver with that environment and the model-control key (server_unit.server_launcher)
    key_file: str  # the model-control key the repository API asks for
    models_dir: str  # the model repository
    http_host: str  # where a client on the host connects
    ports: tuple[tuple[str, int], ...]  # (("http", 8000), ("grpc", 8001), ("metrics", 8002))
    args: tuple[str, ...]  # tritonserver's arguments
    unit: str  # the systemd unit's text (used where systemd runs the host)
    user: str = "root"  # who the server runs as
    log_watch: tuple[str, ...] = ()  # the log watcher's arguments (log_watch_args), for a detached start
    verified_answers: str = ""  # where the proof keeps each model's in-process answers ("" = not kept)
    python_bytecode: str = ""  # the server user's compiled Python (config/layout.py), for the in-process proof too
    handover_metrics_port: int = 0  # a handover's new server's metrics port while the old has the other; 0: no handover
    front: FrontPlan | None = None  # triton_upgrade = "front": HAProxy on the ports, the server on a slot's

    def on_slot(self, slot: str) -> ServerPlan:
        """This plan for the server of one slot behind the front: that slot's arguments and ports, on loopback."""
        if self.front is None:
            raise ValueError("no front: the server has no slot")
        return replace(self, http_host="127.0.0.1", ports=self.front.ports(slot), args=self.front.args(slot))

    @property
    def watch_args(self) -> list[str]:
        """A detached start's log-watcher words for server_start.sh / server_handover.sh ("" x 6: none)."""
        return [LOG_WATCH, *self.log_watch] if self.log_watch else ["", "", "", "", "", ""]

    def args_with_metrics(self, port: int) -> tuple[str, ...]:
        """The arguments with the metrics port replaced (a handover's new server: the old one holds the other)."""
        at = self.args.index("--metrics-port")
        return (*self.args[: at + 1], str(port), *self.args[at + 2 :])

    @property
    def http_port(self) -> int:
        return self.ports[0][1]

    @property
    def grpc_port(self) -> int:
        return self.ports[1][1]

    @property
    def base_url(self) -> str:
        return f"http://{self.http_host}:{self.http_port}"


def server_plan(settings: Settings, layout: Layout) -> ServerPlan:
    """The server plan of these settings (behind the front, its arguments are slot a's: the configuration
    hash is the same whichever slot serves)."""
    args = server_args(settings, layout)
    front = front_plan(settings, layout, args)
    front = replace(front, unit=front_unit(settings, layout)) if front else None
    return ServerPlan(
        run_dir=layout.run,
        launcher=layout.launcher,
        starter=layout.server_launcher,
        key_file=layout.model_control_key,
        models_dir=layout.models,
        http_host=settings.http_connect_host,
        ports=settings.triton_ports,
        args=front.args("a") if front else tuple(args),
        unit=systemd_unit(settings, layout, front),
        user=settings.triton_user,
        log_watch=tuple(log_watch_args(settings, layout)),
        verified_answers=layout.verified_answers,
        python_bytecode=layout.python_bytecode,
        handover_metrics_port=(settings.triton_metrics_handover_port or settings.triton_metrics_port + 1)
        if settings.triton_upgrade == "handover"
        else 0,
        front=front,
    )


def why_start(state: dict, systemd: bool, plan: ServerPlan, wanted_hash: str) -> str:
    """Why the server must be (re)started, in words; "" when it serves as wanted (the plan says the same)."""
    if not state["pid"]:
        return "not running"
    if state["config_hash"] != wanted_hash:
        return "what it runs changed"
    if state.get("user") and state["user"] != plan.user:
        return f"it runs as {state['user']}, the settings say {plan.user}"
    if not state["ready"]:
        return "not ready"
    if systemd and state["unit_sha256"] != hashlib.sha256(plan.unit.encode()).hexdigest():
        return "its systemd unit changed"
    return ""
