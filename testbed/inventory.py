"""The one inventory writer: pyinfra host data that reaches test hosts over SSH (host keys checked),
the known_hosts file, and inventories with settings and each host's own ports."""

from __future__ import annotations

from pathlib import Path

from testbed.config import PERSIST_PATH, PORT_OFFSET, STATE_DIR, Host
from testbed.identity import client_key
from testbed.ports import named_base, triton_base


def known_hosts() -> Path:
    return STATE_DIR / "known_hosts"


def inventory_path() -> Path:
    return STATE_DIR / "inventory.py"


def host_data(host: Host) -> dict:
    """pyinfra host data that reaches this host over SSH with its host key checked."""
    return {
        "ssh_hostname": "127.0.0.1",
        "ssh_port": host.ssh_port,
        "ssh_user": host.user,
        "ssh_key": str(client_key()),
        "ssh_known_hosts_file": str(known_hosts()),
        "ssh_strict_host_key_checking": "yes",
        "persist_dir": PERSIST_PATH,
        **({"_sudo": True} if host.user != "root" else {}),
    }


def host_index(name: str) -> int:
    """tb1 -> 1, bench2 -> 2: the number a test host's name ends with."""
    return int("".join(ch for ch in name if ch.isdigit()) or 0)


def _from(base: int) -> dict:
    """A host's Triton ports from its first: http, grpc, metrics."""
    return {"triton_http_port": base, "triton_grpc_port": base + 1, "triton_metrics_port": base + 2}


def triton_ports(index: int) -> dict:
    """Each test host gets its own ports: the hosts share this machine's loopback."""
    base = triton_base(PORT_OFFSET, index)
    return _from(base)


def named_ports(slot: int) -> dict:
    """Triton ports a test names for a host of its own (a VM, a fleet's extra host), apart from every
    numbered host's of any test bed (testbed/ports.py); slot 0..9, one per such host."""
    base = named_base(PORT_OFFSET, slot)
    return _from(base)


def write_inventory(path: Path, hosts: list, settings: dict | None = None, own_ports: bool = False, **extra) -> Path:
    """A pyinfra inventory file for these hosts (Host or TestHost): how to reach each, then settings,
    with own_ports each host's own Triton ports (triton_ports), then extra, for all of them."""
    rows = []
    # what the controller keeps per host (its records and facts list, the reports) goes to this test bed's
    # own directory unless a test says where: parallel test beds name their hosts alike (tb1 in each)
    kept = {
        "provision_records_dir": str(STATE_DIR / "provision-records"),
        "status_report_path": str(STATE_DIR / "status-report.json"),
        "audit_report_path": str(STATE_DIR / "audit-report.json"),
    }
    for each in hosts:
        host = getattr(each, "host", each)
        ports = triton_ports(host_index(host.name)) if own_ports else {}
        data = f"{{**{kept!r}, **{host_data(host)!r}, **{(settings or {})!r}, **{ports!r}, **{extra!r}}}"
        rows.append(f"    ({host.name!r}, {data})")
    path.write_text(
        '"""pyinfra inventory of test hosts; written by the test bed."""\n\ntestbed = [\n' + ",\n".join(rows) + ",\n]\n"
    )
    return path


def write_access(hosts: list[Host]) -> None:
    """The known_hosts file of every host, and the test bed's own inventory of them."""
    lines = []
    for host in sorted(hosts, key=lambda h: h.name):
        for pub in sorted((host.dir / "ssh").glob("*.pub")):
            kind, key = pub.read_text().split()[:2]
            lines.append(f"[127.0.0.1]:{host.ssh_port} {kind} {key}\n")
    known_hosts().write_text("".join(lines))
    write_inventory(inventory_path(), sorted(hosts, key=lambda h: h.name))
