"""A no-op provision of N provisioned hosts in one run against one host's (issue 31: aim 1.5x), with the CPU
seconds the machine spent on each (every process: the test hosts share its kernel and its cores).

    .venv/bin/python -m bench.noop_fleet [--hosts 16] [--runs 3]

The first host is provisioned cold (its lock kept on the controller); the others start from a copy of its
persistent path and the controller's record of its snapshot (a fleet of identical hosts: each restores the
venv from the snapshot instead of installing it), and are provisioned together once. Then no-op runs of
the first host alone and of all N, alternating. Needs root (test hosts).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import testbed
from bench.common import cpu_busy_seconds, inventory, median_table, pyinfra, save
from testbed import TestHost
from testbed.mirror import Mirror
from tests.e2e.artifacts import mirror_settings


def provisioned(inv: Path) -> float:
    """Wall seconds of a provision that must succeed."""
    seconds, res = pyinfra(inv, "deploy/provision.py")
    if res.returncode != 0:
        raise RuntimeError((res.stdout + res.stderr)[-4000:])
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_dir, Mirror(Path(tmp_dir) / "files") as mirror:
        tmp = Path(tmp_dir)
        locks = tmp / "locks"
        settings = {**mirror_settings(mirror), "venv_lock_dir": str(locks), "controller_cache_dir": str(tmp / "cache")}
        hosts = [TestHost(h) for h in testbed.up(args.hosts, prefix="nf")]
        try:
            first = hosts[0]
            provisioned(inventory(tmp / "one.py", hosts[:1], settings, tmp))
            for other in hosts[1:]:  # a copy of the first host's persistent path, and its snapshot's record
                subprocess.run(["cp", "-a", f"{first.host.dir}/persist/.", f"{other.host.dir}/persist/"], check=True)
                record = locks / "snapshots" / first.name
                if record.is_dir():
                    shutil.copytree(record, locks / "snapshots" / other.name, dirs_exist_ok=True)
            fleet = inventory(tmp / "fleet.py", hosts, settings, tmp)
            print(f"{args.hosts} hosts provisioned from the copies in {provisioned(fleet):.1f} s", file=sys.stderr)
            one = inventory(tmp / "one.py", hosts[:1], settings, tmp)
            cases = {"1 host": one, f"{args.hosts} hosts": fleet}
            wall: dict[str, list[float]] = {case: [] for case in cases}
            cpu: dict[str, list[float]] = {case: [] for case in cases}
            for run in range(1, args.runs + 1):
                for case, inv in cases.items():
                    busy = cpu_busy_seconds()
                    seconds, res = pyinfra(inv, "deploy/provision.py")
                    cpu[case].append(cpu_busy_seconds() - busy)
                    wall[case].append(seconds)
                    if res.returncode != 0 or "Success" in res.stdout:  # a no-op changes nothing
                        raise RuntimeError(f"{case}: not a no-op\n{(res.stdout + res.stderr)[-4000:]}")
                    print(f"run {run}, {case}: {seconds:.2f} s, CPU {cpu[case][-1]:.1f} s", file=sys.stderr)
        finally:
            for h in hosts:
                testbed.remove(h.name)
    print(median_table("no-op provision, the whole command", wall, ref="1 host"))
    print(median_table("CPU seconds the machine spent (every process, the hosts' too)", cpu, ref="1 host"))
    save("noop_fleet", {"wall_s": wall, "cpu_s": cpu})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
