"""The server's ports taken together: the three must differ, and so must the ports a handover or the front
add (triton_upgrade)."""

from __future__ import annotations

from typing import Any

# triton_upgrade = "front": the two servers behind the front listen on each port + these (tasks/server/front_plan.py)
FRONT_SLOT_OFFSETS = {"a": 10, "b": 20}
FRONT_PACKAGE = "haproxy"  # the front: Debian's and Ubuntu's HAProxy (2.6 on Debian 12, 2.8 on Ubuntu 24.04)
FRONT_PROGRAM = "/usr/sbin/haproxy"  # where that package installs it
FRONT_UNIT_PATH = "/etc/systemd/system/triton-front.service"  # the front's unit, where systemd runs the host
FRONT_SOCKET = "run/front/admin.sock"  # HAProxy's runtime socket, under triton_home
# The longest runtime socket path HAProxy takes: its error "socket path '...' too long (max 97)" (2.6 and 2.8:
# a Unix socket's sun_path, 108 bytes, less what HAProxy adds while it binds)
FRONT_SOCKET_MAX = 97


FRONT_MAY_RUN = ("front", "auto")  # the triton_upgrade values a host may get the front with ("auto": under systemd)


def front_socket(home: str) -> str:
    """HAProxy's runtime socket under this triton_home (in a folder of the server's user, who runs HAProxy)."""
    return f"{home.rstrip('/')}/{FRONT_SOCKET}"


def _where(upgrade: str) -> str:
    """Where the front runs with this triton_upgrade, as a message says it ('auto': only under systemd)."""
    return " (with 'auto': where systemd runs the host)" if upgrade == "auto" else ""


def port_conflicts(v: dict[str, Any]) -> list[str]:
    """One message per port the settings give twice, with its fix."""
    out: list[str] = []
    ports = [v["triton_http_port"], v["triton_grpc_port"], v["triton_metrics_port"]]
    if len(set(ports)) != 3:
        out.append(f"triton_http_port, triton_grpc_port and triton_metrics_port must differ, got {ports}")
    elif (handover := v["triton_metrics_handover_port"] or v["triton_metrics_port"] + 1) in ports:
        out.append(f"triton_metrics_handover_port {handover} is one of the other ports {ports}: set a free one")
    elif v["triton_upgrade"] in FRONT_MAY_RUN and (
        shared := set(ports) & {p + o for p in ports for o in FRONT_SLOT_OFFSETS.values()}
    ):
        out.append(
            f"triton_upgrade = '{v['triton_upgrade']}' puts the servers on each port + 10 and + 20"
            f"{_where(v['triton_upgrade'])}, and {sorted(shared)} is one of the ports {ports} too: choose ports none "
            "of which is another's + 10 or + 20"
        )
    if v["triton_upgrade"] in FRONT_MAY_RUN and len(path := front_socket(v["triton_home"])) > FRONT_SOCKET_MAX:
        out.append(
            f"triton_home {v['triton_home']!r} is too long for the front{_where(v['triton_upgrade'])}: "
            f"HAProxy's runtime socket {path} would be {len(path)} characters, and HAProxy takes at most "
            f"{FRONT_SOCKET_MAX}; choose a shorter triton_home, or triton_upgrade = 'handover'"
        )
    return out
