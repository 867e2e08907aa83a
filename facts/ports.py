"""Facts about listening TCP ports and, where visible, the process on each (from /proc)."""

from __future__ import annotations

import ipaddress
import re
from typing import TypedDict

from pyinfra.api import FactBase, StringCommand

from remote import shell


class Listener(TypedDict):
    address: str
    port: int
    pid: int | None
    process: str | None


class ListeningPorts(FactBase[dict[int, list[Listener]]]):
    """port -> listeners, read from /proc/net/tcp{,6} and /proc/*/fd; needs no ss or netstat."""

    def command(self) -> StringCommand:
        return shell("listening_ports.sh")

    @staticmethod
    def default() -> dict[int, list[Listener]]:
        return {}

    def process(self, output: list[str]) -> dict[int, list[Listener]]:
        owners: dict[str, tuple[int, str]] = {}
        listens: list[tuple[str, int, str]] = []
        for line in output:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "L":
                addr = _decode_address(parts[1])
                if addr:
                    listens.append((addr[0], addr[1], parts[2]))
            elif len(parts) >= 4 and parts[0] == "P" and parts[1].isdigit():
                for inode in parts[3:]:
                    owners.setdefault(inode, (int(parts[1]), parts[2]))
        ports: dict[int, list[Listener]] = {}
        for address, port, inode in listens:
            pid, comm = owners.get(inode, (None, None))
            ports.setdefault(port, []).append(Listener(address=address, port=port, pid=pid, process=comm))
        return ports


def _decode_address(field: str) -> tuple[str, int] | None:
    """/proc/net/tcp's "0100007F:1F40" (little-endian words) -> ("127.0.0.1", 8000)."""
    m = re.fullmatch(r"([0-9A-Fa-f]{8}|[0-9A-Fa-f]{32}):([0-9A-Fa-f]{4})", field)
    if not m:
        return None
    raw = bytes.fromhex(m.group(1))
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(words)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return str(ip), int(m.group(2), 16)
