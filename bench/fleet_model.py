"""A fleet's cold provision by where its downloads come from, modelled: each host on its own, through the
controller (its uplink carries every host's copy), or through a cache host of the fleet (one copy from
outside, the rest over the fleet's LAN). From figures measured here (BENCHMARKS.md section 13: a host's bytes,
its install's CPU and wall time; section 11: the controller's CPU per host) and link speeds given as
arguments. `--check` puts the model beside this machine's measured 1-, 4- and 8-host runs.

    python -m bench.fleet_model [--profile gpu|cpu] [--controller-up MBIT] [--controller-down MBIT]
        [--host-internet MBIT] [--lan MBIT] [--ssh MBIT] [--hosts 1 8 32 128] [--check] [--preset NAME]

What it leaves out: the origins' own limits (PyPI's CDN, NGC, a hub serve every host at its link's speed
here), TCP's ramp-up, and the controller's disk. A transfer and the installs do not overlap in the model
(each host installs once its files are in): a bound a little above what pyinfra's step-by-step run takes.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

MIB = 1 << 20
GIB = 1 << 30


@dataclass(frozen=True)
class Profile:
    """What one host fetches on a cold provision and what installing it costs."""

    name: str
    relayable: int  # bytes a cache or the controller can carry: the artifact, wheels, hub files, .debs, lists
    own_only: int  # bytes each host still fetches itself whatever the route (apt's InRelease, the hub's file list)
    install_s: float  # one host's wall time with its files at hand (its own cores)
    install_cpu_s: float  # the CPU-seconds of that install (what hosts sharing one machine's cores contend for)


# Measured here (BENCHMARKS.md section 13, 2026-12-05, 1 host, idle machine): 236 MiB from the mirror (the
# pytriton wheel, torch's CPU wheel), 153 MiB from PyPI and Debian, 151 kB of it the host's own InRelease;
# 40.7 s of wall, 48.4 CPU-seconds. The CUDA profile: torch 2.8.0's cp312 manylinux_2_28_x86_64 wheel and the
# 15 nvidia-*/triton wheels it requires on Linux x86_64, 3,906,384,986 bytes by PyPI's simple index (PEP 700
# sizes, read 2026-12-08), instead of the CPU wheel; its install is not measured here (no GPU lent): taken
# as the CPU profile's plus unpacking 3.4 GiB more at the rate the venv step unpacked torch here (section 2:
# `venv packages` 15.4 s for the ~200 MiB CPU wheel's install: ~13 MiB/s on a 2-core VM; a fleet host's
# NVMe and cores do better, so this is an upper bound).
CPU_TORCH_WHEEL = 184 * MIB  # torch 2.13.0+cpu, cp311, the wheel the test bed's mirror serves
PROFILES = {
    "cpu": Profile("cpu (measured here)", 236 * MIB + 153 * MIB - 151_000, 151_000, 40.7, 48.4),
    "gpu": Profile(
        "gpu (torch 2.8.0 CUDA wheels from PyPI)",
        236 * MIB - CPU_TORCH_WHEEL + 3_906_384_986 + 153 * MIB - 151_000,
        151_000,
        40.7 + (3_906_384_986 - CPU_TORCH_WHEEL) / (13 * MIB),
        48.4 + (3_906_384_986 - CPU_TORCH_WHEEL) / (13 * MIB),
    ),
}
# The controller's own CPU per additional host (section 11: a repeat audit, 0.033 s; a provision sends more
# operations: taken as the 0.1 s aim), spent one host after another in its one process.
CONTROLLER_S_PER_HOST = 0.1


@dataclass(frozen=True)
class Links:
    """Link speeds in Mbit/s; 0 = none (an air-gapped fleet has no internet)."""

    controller_up: float
    controller_down: float
    host_internet: float
    lan: float
    ssh: float  # what one SSH connection of the controller's carries at most (SSH_MBIT)


# What one SSH connection carries: pyinfra's put_file (paramiko's SFTP), measured 1,056-1,477 Mbit/s, median
# 1,438, to a test host on this 2-core machine (`python -m bench.ssh_push`, 256 MiB, 3 runs, 2026-12-08)
SSH_MBIT = 1_400
PRESETS = {
    # a laptop at home: a cable line's 100 down and 20 up; the hosts in a cloud region
    "home": Links(controller_up=20, controller_down=100, host_internet=2_500, lan=10_000, ssh=SSH_MBIT),
    # a bastion in the hosts' region: 1 Gbit/s both ways
    "bastion": Links(controller_up=1_000, controller_down=1_000, host_internet=2_500, lan=10_000, ssh=SSH_MBIT),
    # air-gapped hosts: no internet; the controller (which has it) at LAN speed
    "airgap": Links(controller_up=1_000, controller_down=1_000, host_internet=0, lan=10_000, ssh=SSH_MBIT),
}


def seconds(size: float, mbit: float) -> float:
    """The time to move size bytes at mbit Mbit/s (infinite where the link is 0: none)."""
    return float("inf") if mbit <= 0 else size * 8 / (mbit * 1e6)


@dataclass(frozen=True)
class Outcome:
    seconds: float
    outside_bytes: float


def own(p: Profile, links: Links, hosts: int) -> Outcome:
    """Each host fetches everything from outside over its own link, in parallel."""
    fetch = seconds(p.relayable + p.own_only, links.host_internet)
    return Outcome(fetch + p.install_s + CONTROLLER_S_PER_HOST * hosts, hosts * (p.relayable + p.own_only))


def controller(p: Profile, links: Links, hosts: int) -> Outcome:
    """The controller fetches each file once, then pushes a copy to every host over SSH: its uplink carries
    them all (each connection at most links.ssh). The hosts' own small fetches still need their internet."""
    push = max(seconds(hosts * p.relayable, links.controller_up), seconds(p.relayable, links.ssh))
    own_part = seconds(p.own_only, links.host_internet) if links.host_internet else 0.0  # air-gapped: none to fetch
    fetch = seconds(p.relayable, links.controller_down) + push + own_part
    return Outcome(fetch + p.install_s + CONTROLLER_S_PER_HOST * hosts, p.relayable + hosts * p.own_only)


def cache_host(p: Profile, links: Links, hosts: int) -> Outcome:
    """A cache host fills once (from outside, or from the controller where the fleet has no internet), then
    every host fetches from it over the LAN, its one link shared by all."""
    fill = (
        seconds(p.relayable, links.host_internet)
        if links.host_internet
        else seconds(p.relayable, links.controller_down) + seconds(p.relayable, min(links.controller_up, links.ssh))
    )
    serve = seconds(hosts * p.relayable, links.lan)
    own_part = seconds(p.own_only, links.host_internet) if links.host_internet else 0.0
    return Outcome(
        fill + serve + own_part + p.install_s + CONTROLLER_S_PER_HOST * hosts, p.relayable + hosts * p.own_only
    )


ROUTES = {"each on its own": own, "through the controller": controller, "through a cache host": cache_host}


def shown_time(s: float) -> str:
    if s == float("inf"):
        return "impossible"
    return f"{s:.0f} s" if s < 120 else (f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h")


def table(p: Profile, links: Links, counts: list[int], title: str) -> str:
    head = f"| {title}: hosts | " + " | ".join(f"{r}: time | from outside" for r in ROUTES) + " |"
    lines = [head, "| ---: |" + " ---: | ---: |" * len(ROUTES)]
    for n in counts:
        cells = []
        for route in ROUTES.values():
            o = route(p, links, n)
            outside = "-" if o.seconds == float("inf") else f"{o.outside_bytes / GIB:.2f} GiB"
            cells += [shown_time(o.seconds), outside]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# This machine's measured cold runs (BENCHMARKS.md section 13; the 8-host ones 2026-12-03 with the code of
# then: apt through each host, PyPI pages read per host): hosts, route, wall seconds.
MEASURED = [(1, "each on its own", 40.7), (4, "through the controller", 108.8), (4, "each on its own", 109.9),
            (8, "through the controller", 231.7), (8, "each on its own", 210.1)]  # fmt: skip


def here(hosts: int, route: str) -> float:
    """The model on this machine: every host's install on its 2 cores (at least the CPU-seconds over 2, at
    least one host's wall), loopback links (no transfer time), the controller's SSH pushes at links.ssh."""
    p = PROFILES["cpu"]
    installs = max(p.install_s, hosts * p.install_cpu_s / 2)
    push = seconds(hosts * p.relayable, SSH_MBIT) if route == "through the controller" and hosts > 1 else 0
    return installs + push + CONTROLLER_S_PER_HOST * hosts


def check() -> str:
    lines = ["| hosts | route | measured | model | model / measured |", "| ---: | --- | ---: | ---: | ---: |"]
    for hosts, route, measured in MEASURED:
        m = here(hosts, route)
        lines.append(f"| {hosts} | {route} | {measured:.1f} s | {m:.1f} s | {m / measured:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="gpu")
    parser.add_argument("--preset", choices=sorted(PRESETS), action="append")
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 8, 32, 128])
    for name in ("controller-up", "controller-down", "host-internet", "lan", "ssh"):
        parser.add_argument(f"--{name}", type=float, help="Mbit/s (over the preset's)")
    parser.add_argument("--check", action="store_true", help="the model beside this machine's measured runs")
    args = parser.parse_args(argv)
    if args.check:
        print(check())
        return 0
    profile = PROFILES[args.profile]
    for preset in args.preset or list(PRESETS):
        given = {k: getattr(args, k) for k in ("controller_up", "controller_down", "host_internet", "lan", "ssh")}
        links = Links(**{**PRESETS[preset].__dict__, **{k: v for k, v in given.items() if v is not None}})
        print(f"\n{profile.name}, {preset}: {links}\n")
        print(table(profile, links, args.hosts, preset))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
