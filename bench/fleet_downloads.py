"""One download for many hosts: N fresh hosts provisioned in one run, a lock kept on the controller, their
downloads through the controller (downloads_via_controller = "yes") or each on its own ("no"), against
one host: wall time, bytes the loopback mirror sent (the Triton artifact and torch, standing in for
GitHub/NGC and the PyTorch index), bytes the hub stand-in sent (a hub model's files), bytes from outside
(PyPI and Debian, /proc/net/dev: the test hosts share this machine's network), and each case's bytes against
one host's. Raw figures: bench/results/.

    .venv/bin/python -m bench.fleet_downloads [--hosts 4] [--runs 1]

Needs root (test hosts). Every case starts from fresh hosts (root reset, /persist emptied) and an empty
controller cache.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import testbed
from bench.common import cpu_busy_seconds, inventory, median_table, mib, mirror_bytes, network_bytes, pyinfra, save
from testbed import TestHost
from testbed.hub import Hub
from testbed.mirror import Mirror
from tests import tiny_models
from tests.e2e.artifacts import mirror_settings


def fresh(hosts: list[TestHost], cache: Path) -> None:
    """Hosts as new (root reset, /persist emptied) and the controller's cache empty."""
    for h in hosts:
        h.reset()
        h.ssh("rm -rf /persist/* /persist/.[!.]*")
    shutil.rmtree(cache, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_dir, Mirror(Path(tmp_dir) / "files") as mirror, Hub() as hub:
        tmp = Path(tmp_dir)
        cache = tmp / "controller-cache"
        settings = {**mirror_settings(mirror), "venv_lock_dir": str(tmp / "locks"), "controller_cache_dir": str(cache)}
        tiny_models.make("classifier", tmp / "clf", seed=1)
        hub.add("bench/clf", tmp / "clf")
        settings["hf_endpoint"] = hub.url
        settings["models"] = [{"name": "clf", "source": "hub:bench/clf@main", "task": "text-classification"}]
        hosts = [TestHost(h) for h in testbed.up(args.hosts, prefix="dl")]
        cases = {
            "1 host": (hosts[:1], "no"),
            f"{args.hosts} hosts, through the controller": (hosts, "yes"),
            f"{args.hosts} hosts, each on its own": (hosts, "no"),
        }
        wall: dict[str, list[float]] = {case: [] for case in cases}
        mirrored: dict[str, list[float]] = {case: [] for case in cases}
        outside: dict[str, list[float]] = {case: [] for case in cases}
        from_hub: dict[str, list[float]] = {case: [] for case in cases}
        cpu: dict[str, list[float]] = {case: [] for case in cases}
        try:
            fresh(hosts[:1], cache)  # the lock first, as a fleet has it once its first host ran
            pyinfra(inventory(tmp / "lock.py", hosts[:1], settings, tmp), "deploy/provision.py")
            for run in range(1, args.runs + 1):
                for case, (group, relay) in cases.items():
                    fresh(group, cache)
                    inv = inventory(tmp / "inv.py", group, {**settings, "downloads_via_controller": relay}, tmp)
                    since, net, hub_since = len(mirror.requests()), network_bytes(), len(hub.log)
                    busy = cpu_busy_seconds()
                    wall[case].append(pyinfra(inv, "deploy/provision.py")[0])
                    cpu[case].append(cpu_busy_seconds() - busy)
                    mirrored[case].append(mirror_bytes(mirror, since))
                    outside[case].append(network_bytes() - net)
                    from_hub[case].append(sum(r.sent for r in hub.log[hub_since:] if r.file))
                    print(
                        f"run {run}, {case}: {wall[case][-1]:.1f} s, mirror {mib(mirrored[case][-1])}, "
                        f"hub {from_hub[case][-1]} bytes, outside {mib(outside[case][-1])}, CPU {cpu[case][-1]:.0f} s",
                        file=sys.stderr,
                    )
        finally:
            for h in hosts:
                testbed.remove(h.name)
    print(median_table("provision of fresh hosts, one run", wall, ref="1 host"))
    print(median_table("CPU seconds the machine spent (every process, the hosts' too)", cpu, ref="1 host"))
    cores = os.cpu_count() or 1
    floor = {case: [c / cores for c in values] for case, values in cpu.items()}  # all cores busy the whole time
    print(median_table(f"the shortest wall those CPU seconds allow on {cores} cores", floor, ref="1 host"))
    in_mib = {name: {case: [b / 2**20 for b in values] for case, values in rows.items()} for name, rows in (
        ("mirror", mirrored), ("outside", outside))}  # fmt: skip
    print(median_table("what the mirror sent (Triton artifact, torch)", in_mib["mirror"], unit="MiB", ref="1 host"))
    print(median_table("what came from outside (PyPI, Debian)", in_mib["outside"], unit="MiB", ref="1 host"))
    print(median_table("what the hub stand-in sent (a hub model's files)", from_hub, unit="bytes", ref="1 host"))
    save(
        "fleet_downloads",
        {"wall_s": wall, "mirror_bytes": mirrored, "outside_bytes": outside, "hub_bytes": from_hub, "cpu_s": cpu},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
