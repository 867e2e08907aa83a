"""What one controller process costs per host (issue 58 part 3): an audit of 1, 16 and 48 fresh test hosts in one
pyinfra run (pyinfra runs the hosts as greenlets of one process), its wall time, the controller's CPU seconds
(user + system), its peak memory (max RSS) and its peak number of open TCP connections; a first audit (every
fact read one by one) and a repeat (the facts list kept: one round trip a host).

    python -m bench.controller_cost [--hosts 1 16 48] [--runs 2]

(The test bed holds 50 hosts: its SSH port range, testbed/ports.py.)

The hosts are the test bed's (each an sshd in its own root file system, sharing this machine's cores and
kernel): what the hosts' side costs runs on the same two cores, so the wall time is the machine's, while CPU,
memory and connections are the controller process's own. Needs root (test hosts).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import testbed
from testbed import TestHost, write_inventory
from testbed.runner import REPO


def _connections(pid: int) -> int:
    """The process's established TCP connections (its sockets in /proc/net/tcp, state 01)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return 0
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "01" and fields[9] in inodes:
                count += 1
    return count


def audited(inv: Path) -> dict[str, float]:
    """One audit run under /usr/bin/time: wall s, CPU s (user + system), max RSS MiB, peak TCP connections."""
    argv = ["/usr/bin/time", "-f", "TIME %e %U %S %M", sys.executable, "-m", "pyinfra", str(inv), "deploy/audit.py"]
    proc = subprocess.Popen([*argv, "-y"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = [0]

    def watch() -> None:
        child = None
        while proc.poll() is None:
            if child is None:  # /usr/bin/time's child: the python process
                kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
                found = kids.read_text().split() if kids.exists() else []
                child = int(found[0]) if found else None
            if child:
                peak[0] = max(peak[0], _connections(child))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    _, err = proc.communicate()
    watcher.join()
    line = next(x for x in err.splitlines() if x.startswith("TIME "))
    wall, user, system, rss_kb = (float(v) for v in line.split()[1:])
    return {"wall": wall, "cpu": user + system, "rss_mib": rss_kb / 1024, "connections": peak[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 16, 48])
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    hosts = [TestHost(h) for h in testbed.up(max(args.hosts), prefix="cc")]
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp_dir:
            tmp = Path(tmp_dir)
            for count in args.hosts:
                records = {"provision_records_dir": str(tmp / f"r{count}"), "audit_report_path": str(tmp / "a.json")}
                inv = write_inventory(tmp / f"inv{count}.py", hosts[:count], records)  # one Triton port plan: an audit
                first = audited(inv)  # no facts list yet: every fact asked one by one
                repeats = [audited(inv) for _ in range(args.runs)]
                repeat = {k: statistics.median(r[k] for r in repeats) for k in first}
                rows.append((count, first, repeat))
                print(f"{count} hosts: first {first}, repeat {repeat}", file=sys.stderr)
    finally:
        for host in hosts:
            testbed.remove(host.name)
    print("| hosts | audit | wall s | controller CPU s | max RSS MiB | TCP connections |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for count, first, repeat in rows:
        for name, r in (("first", first), ("repeat", repeat)):
            print(
                f"| {count} | {name} | {r['wall']:.1f} | {r['cpu']:.2f} | {r['rss_mib']:.0f} | {r['connections']:.0f} |"
            )
    (c1, f1, r1), (cn, fn, rn) = rows[0], rows[-1]
    per = cn - c1
    print(
        f"\nper additional host ({c1} -> {cn}): repeat CPU {(rn['cpu'] - r1['cpu']) / per:.3f} s, "
        f"first CPU {(fn['cpu'] - f1['cpu']) / per:.3f} s, memory {(rn['rss_mib'] - r1['rss_mib']) / per:.2f} MiB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
