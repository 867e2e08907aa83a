"""The test bed's port plan. Every host of every test bed shares this machine's loopback, so each
parallel test worker (pytest-xdist) gets SSH and Triton port ranges of its own, and so does each test
bed a test makes beside its worker's (tests/e2e/test_testbed.py runs the CLI on a state directory of its
own): two beds that know nothing of each other's hosts must never be able to pick the same port (a
bed's port, free while its host was down, taken by the other one's host: "Address already in use").
No range overlaps another, the kernel's ephemeral ports (outgoing connections) or Triton's defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SSH_FIRST = 2201
SSH_PER_WORKER = 100  # a worker's own bed, then the beds its tests make
SSH_PER_BED = 50
TRITON_FIRST = 18000
TRITON_PER_WORKER = 4000
TRITON_PER_HOST = 100  # a host's http, grpc and metrics ports: base, base + 1, base + 2
HOSTS_PER_BED = 30  # host indexes 0..29: the number a host's name ends with (tb1, audit16)
NAMED_FIRST = 3000  # in a worker's Triton block, after its hosts': ports tests name (named_ports)
NAMED_SLOTS = 10
MAX_WORKERS = 3  # a fourth worker's Triton block would reach the kernel's ephemeral ports (32768)
TRITON_DEFAULTS = (8000, 8002)  # Triton's own http..metrics ports, which @local runs on


@dataclass(frozen=True)
class BedPorts:
    """One test bed's ports: SSH first..last, and the offset added to its hosts' Triton ports."""

    ssh_first: int
    ssh_last: int
    triton_offset: int

    def env(self) -> dict[str, str]:
        """The environment that gives a test bed (this process's or a child's) these ports."""
        return {
            "TRITON_TESTBED_FIRST_SSH_PORT": str(self.ssh_first),
            "TRITON_TESTBED_LAST_SSH_PORT": str(self.ssh_last),
            "TRITON_TESTBED_PORT_OFFSET": str(self.triton_offset),
        }


def bed_ports(worker: int, nested: bool = False) -> BedPorts:
    """The ports of worker's own test bed, or (nested) of the beds its tests make beside it."""
    if not 0 <= worker < MAX_WORKERS:
        raise ValueError(f"test worker {worker}: the port plan has room for {MAX_WORKERS} (testbed/ports.py)")
    first = SSH_FIRST + SSH_PER_WORKER * worker + (SSH_PER_BED if nested else 0)
    return BedPorts(first, first + SSH_PER_BED - 1, TRITON_PER_WORKER * worker)


def worker_number(name: str) -> int:
    """pytest-xdist's worker name ("gw1") -> 1; "" (no xdist) -> 0."""
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


def triton_base(offset: int, index: int) -> int:
    """The first Triton port of the host with this index in the bed with this offset."""
    if not 0 <= index < HOSTS_PER_BED:
        raise ValueError(f"test host index {index}: the port plan has room for {HOSTS_PER_BED} hosts per bed")
    return TRITON_FIRST + offset + TRITON_PER_HOST * index


def named_base(offset: int, slot: int) -> int:
    """The first of ten ports a test names for a host of its own (beside the bed's numbered hosts)."""
    if not 0 <= slot < NAMED_SLOTS:
        raise ValueError(f"named port slot {slot}: the port plan has {NAMED_SLOTS}")
    return TRITON_FIRST + offset + NAMED_FIRST + 10 * slot


def ranges(workers: int) -> list[tuple[str, int, int]]:
    """Every range the plan hands out to this many workers, as (what, first, last)."""
    found = []
    for worker in range(workers):
        for nested in (False, True):
            bed = bed_ports(worker, nested)
            found.append((f"worker {worker}{' nested' if nested else ''} SSH", bed.ssh_first, bed.ssh_last))
        offset = bed_ports(worker).triton_offset
        found.append((f"worker {worker} Triton", triton_base(offset, 0), triton_base(offset, HOSTS_PER_BED - 1) + 2))
        found.append((f"worker {worker} named", named_base(offset, 0), named_base(offset, NAMED_SLOTS - 1) + 9))
    return found


def ephemeral_range(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")) -> tuple[int, int]:
    """The kernel's ports for outgoing connections (Linux's default where it cannot be read)."""
    try:
        low, high = path.read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def this_bed() -> BedPorts:
    """This process's test bed's ports, as its environment sets them (worker 0's by default)."""
    default = bed_ports(0)
    first = int(os.environ.get("TRITON_TESTBED_FIRST_SSH_PORT", default.ssh_first))
    last = int(os.environ.get("TRITON_TESTBED_LAST_SSH_PORT", first + SSH_PER_BED - 1))
    return BedPorts(first, last, int(os.environ.get("TRITON_TESTBED_PORT_OFFSET", default.triton_offset)))
