"""The front (triton_upgrade = "front"): Debian's HAProxy holds the server's HTTP, gRPC and metrics ports and
hands each request to the Triton server that serves now; each server listens on loopback ports of its own
(a slot). A build upgrade starts the new server on the other slot, proves it there, then switches the
front to it through HAProxy's runtime socket: a client's kept connection (HTTP/1.1 keep-alive, a gRPC
channel) stays with the front, and its next request goes to the new server. Chosen by measurement over
steering SO_REUSEPORT groups (bench/front.py, BENCHMARKS.md section 28)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from config.layout import Layout
from config.ports import FRONT_SLOT_OFFSETS as SLOT_OFFSETS
from config.ports import front_socket
from config.settings import Settings

SERVICES = ("http", "grpc", "metrics")
# Under systemd the units of the server and the front start on the slot this file in the run directory names
# (its variables: the slot, each service's port there): systemd restarting either, or a reboot, finds the two
# on the same slot. slot_recorded (tasks/server/front.py) writes it.
SLOT_ENV = "slot.env"
SLOT_VAR = "TRITON_SLOT"
SLOT_PORT_VARS = {service: f"TRITON_{service.upper()}_PORT" for service in SERVICES}
# triton_upgrade = "auto" as each host has it: the front where systemd runs the server (a VM: remote clients
# keep their connections, a scraper reads one metrics port; the hop costs a GPU model's milliseconds
# little), a handover without (a notebook: its clients are its own cells, mostly started after a reset, and
# on its 2 CPUs the hop takes the model's cores: -42% HTTP throughput on a 0.3 ms model, BENCHMARKS.md
# section 28). Keyed by "systemd runs the host" (facts/system.InitSystem).
AUTO_UPGRADE = {True: "front", False: "handover"}
DRAIN_S = 60  # how long a switch waits for the old server's requests in flight before its own stop waits
# How long an idle client connection is kept, and how long one request may take (a long generation).
CLIENT_IDLE_S = 3600
REQUEST_S = 3600


def upgrade_mode(settings: Settings, systemd: bool) -> Settings:
    """The settings with triton_upgrade as it applies on this host ("auto" resolved by AUTO_UPGRADE)."""
    if settings.triton_upgrade != "auto":
        return settings
    return replace(settings, triton_upgrade=AUTO_UPGRADE[systemd])


def other_slot(slot: str) -> str:
    return "b" if slot == "a" else "a"


def slot_ports(settings: Settings, slot: str) -> dict[str, int]:
    """A slot's http, grpc and metrics ports (on 127.0.0.1)."""
    public = dict(settings.triton_ports)
    return {service: public[service] + SLOT_OFFSETS[slot] for service in SERVICES}


def admin_socket(layout: Layout) -> str:
    """HAProxy's runtime socket: in a folder of the server's user (HAProxy runs as that user)."""
    return front_socket(layout.home)  # its length checked with the settings (config/ports.py)


def front_config(settings: Settings, layout: Layout, slot: str) -> str:
    """HAProxy's configuration: HTTP and metrics in HTTP mode, gRPC as HTTP/2 end to end (each stream a
    request), each backend holding both slots' servers, the one not serving disabled. Requests reach a
    server over a connection of their own (`http-server-close`): a server that stops then holds no idle
    connection of the front's, and its graceful stop waits only for what is in flight (bench/front.py)."""
    address = settings.triton_http_address
    public = dict(settings.triton_ports)
    lines = [
        # the file's first line, as fronts started before this module moved have it: a new text would change the
        # configuration's hash and restart every running front (its clients' kept connections closed)
        "# Written by triton-provisioner: the front of the Triton server (compat/front.py).",
        "global",
        f"  stats socket {admin_socket(layout)} mode 600 level admin",
        "defaults",
        "  mode http",
        "  timeout connect 5s",
        f"  timeout client {CLIENT_IDLE_S}s",
        f"  timeout server {REQUEST_S}s",
        f"  timeout http-keep-alive {CLIENT_IDLE_S}s",
        # a request the front could not hand to a server (it was stopping, or not yet listening) is tried
        # again; one it handed over is never sent twice
        "  retries 3",
        "  retry-on conn-failure empty-response",
    ]
    for service in SERVICES:
        h2 = " proto h2" if service == "grpc" else ""
        lines += [f"frontend {service}", f"  bind {address}:{public[service]}{h2}", f"  default_backend {service}"]
        lines.append(f"backend {service}")
        if service != "grpc":
            lines.append("  option http-server-close")
        for name in SLOT_OFFSETS:
            off = "" if name == slot else " disabled"
            lines.append(f"  server {name} 127.0.0.1:{slot_ports(settings, name)[service]}{h2}{off}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class FrontPlan:
    """The front on one host: where its files are, both slots' configurations, ports and server arguments."""

    run_dir: str  # root's: front-a.cfg, front-b.cfg, front.slot, front.pid, front.hash, front.log
    socket: str  # HAProxy's runtime socket, in run_dir/front (the server user's folder)
    configs: tuple[tuple[str, str], ...]  # (slot, HAProxy's configuration with that slot serving)
    slot_ports: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]  # (slot, (("http", 8010), ...))
    slot_args: tuple[tuple[str, tuple[str, ...]], ...]  # (slot, tritonserver's arguments there)
    unit: str = ""  # its systemd unit's text (tasks/server/unit.front_unit), used where systemd runs the host

    def wanted_hash(self, systemd: bool) -> str:
        """The hash the running front must have started from: the configurations, and under systemd its unit."""
        if not systemd:
            return self.config_hash
        return hashlib.sha256((self.config_hash + self.unit).encode()).hexdigest()[:32]

    def slot_env(self, slot: str) -> str:
        """The slot file's text (SLOT_ENV): the slot that serves and its server's ports, which the
        systemd units of the server and the front start with."""
        ports = dict(self.ports(slot))
        lines = [f"{SLOT_VAR}={slot}", *(f"{SLOT_PORT_VARS[name]}={ports[name]}" for name in SERVICES)]
        return "\n".join(lines) + "\n"

    @property
    def config_hash(self) -> str:
        """What the running front must have started from: both slots' configurations (which one serves is
        the front's state, front.slot, not a change)."""
        return hashlib.sha256("".join(text for _, text in self.configs).encode()).hexdigest()[:32]

    def ports(self, slot: str) -> tuple[tuple[str, int], ...]:
        return dict(self.slot_ports)[slot]

    def args(self, slot: str) -> tuple[str, ...]:
        return dict(self.slot_args)[slot]

    def slot_of(self, http_port: int | None) -> str:
        """The slot a server listening on this HTTP port is in ("" where none)."""
        return next((slot for slot, ports in self.slot_ports if dict(ports)["http"] == http_port), "")


def slot_args(args: list[str], ports: dict[str, int]) -> tuple[str, ...]:
    """tritonserver's arguments moved to a slot: its ports, loopback only, no shared ports."""
    moved = list(args)
    for flag, value in (
        *((f"--{service}-port", str(port)) for service, port in ports.items()),
        *((f"--{service}-address", "127.0.0.1") for service in SERVICES),
        ("--reuse-http-port", "false"),
        ("--reuse-grpc-port", "false"),
    ):
        moved[moved.index(flag) + 1] = value
    return tuple(moved)


def front_plan(settings: Settings, layout: Layout, args: list[str]) -> FrontPlan | None:
    """The front of these settings (None where triton_upgrade is not "front"); args: the server's own."""
    if settings.triton_upgrade != "front":
        return None
    ports = {slot: slot_ports(settings, slot) for slot in SLOT_OFFSETS}
    return FrontPlan(
        run_dir=layout.run,
        socket=admin_socket(layout),
        configs=tuple((slot, front_config(settings, layout, slot)) for slot in SLOT_OFFSETS),
        slot_ports=tuple((slot, tuple(ports[slot].items())) for slot in SLOT_OFFSETS),
        slot_args=tuple((slot, slot_args(args, ports[slot])) for slot in SLOT_OFFSETS),
    )
