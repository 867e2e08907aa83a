"""The front (triton_upgrade = "front"): Debian's HAProxy holds the server's HTTP, gRPC and metrics ports and
hands each request to the Triton server that serves now; each server listens on loopback ports of its own
(a slot). A build upgrade starts the new server on the other slot, proves it there, then switches the
front to it through HAProxy's runtime socket: a client's kept connection (HTTP/1.1 keep-alive, a gRPC
channel) stays with the front, and its next request goes to the new server. Chosen by measurement over
steering SO_REUSEPORT groups (bench/front.py, BENCHMARKS.md section 28)."""

from __future__ import annotations

from config.layout import Layout
from config.ports import FRONT_SLOT_OFFSETS as SLOT_OFFSETS
from config.settings import Settings

SERVICES = ("http", "grpc", "metrics")
FRONT_PROGRAM = "/usr/sbin/haproxy"  # Debian's and Ubuntu's package `haproxy` (2.6 on Debian 12, 2.8 on 24.04)
FRONT_PACKAGE = "haproxy"
# How long an idle client connection is kept, and how long one request may take (a long generation).
CLIENT_IDLE_S = 3600
REQUEST_S = 3600


def other_slot(slot: str) -> str:
    return "b" if slot == "a" else "a"


def slot_ports(settings: Settings, slot: str) -> dict[str, int]:
    """A slot's http, grpc and metrics ports (on 127.0.0.1)."""
    public = dict(settings.triton_ports)
    return {service: public[service] + SLOT_OFFSETS[slot] for service in SERVICES}


def admin_socket(layout: Layout) -> str:
    """HAProxy's runtime socket: in a folder of the server's user (HAProxy runs as that user)."""
    return f"{layout.run}/front/admin.sock"


def front_config(settings: Settings, layout: Layout, slot: str) -> str:
    """HAProxy's configuration: HTTP and metrics in HTTP mode, gRPC as HTTP/2 end to end (each stream a
    request), each backend holding both slots' servers, the one not serving disabled. Requests reach a
    server over a connection of their own (`http-server-close`): a server that stops then holds no idle
    connection of the front's, and its graceful stop waits only for what is in flight (bench/front.py)."""
    address = settings.triton_http_address
    public = dict(settings.triton_ports)
    lines = [
        "# Written by triton-provisioner: the front of the Triton server (compat/front.py).",
        "global",
        f"  stats socket {admin_socket(layout)} mode 600 level admin",
        "  maxconn 4096",
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
