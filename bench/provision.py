"""Provisioning speed on test hosts, measured: cold (fresh host, empty /persist), re-provision
after a reset (fresh host, filled /persist), no-op re-run, and the audit. Prints medians.

    .venv/bin/python -m bench.provision [--runs 3]

Needs root (test hosts). Bytes from the network: what the mirror served (Triton, torch) plus
what apt and pip kept on /persist after a cold run (everything they fetched).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests import testbed
from tests.e2e.artifacts import mirror_settings
from tests.e2e.conftest import TestHost, provision_inventory
from tests.mirror import Mirror

REPO = Path(__file__).resolve().parents[1]


def pyinfra(inv: Path, deploy: str) -> tuple[float, int]:
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "pyinfra", str(inv), deploy, "-y"], cwd=REPO, capture_output=True, text=True
    )
    return time.monotonic() - t0, res.returncode


def du(host: TestHost, *paths: str) -> int:
    out = host.ssh("du -sb " + " ".join(paths) + " 2>/dev/null | awk '{s+=$1} END {print s+0}'").stdout
    return int(out.strip() or 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[float]] = {"cold": [], "no-op": [], "audit": [], "reset re-provision": []}
    net: dict[str, list[int]] = {"cold": [], "reset re-provision": []}
    with tempfile.TemporaryDirectory() as tmp, Mirror(Path(tmp) / "files") as mirror:
        settings = mirror_settings(mirror)
        host = TestHost(testbed.up(1, prefix="bench")[0])
        try:
            inv = provision_inventory(
                Path(tmp) / "inv.py",
                [host],
                settings,
                audit_report_path=f"{tmp}/a.json",
                triton_http_port=18900,
                triton_grpc_port=18901,
                triton_metrics_port=18902,
            )
            for run in range(1, args.runs + 1):
                host.reset()
                host.ssh("rm -rf /persist/* /persist/.[!.]*")
                served = mirror.bytes_served()
                seconds, rc = pyinfra(inv, "deploy/provision.py")
                assert rc == 0, "cold provision failed"
                rows["cold"].append(seconds)
                fetched = du(host, "/persist/wheels", "/persist/apt/archives", "/persist/apt/lists")
                net["cold"].append(mirror.bytes_served() - served + fetched)
                rows["no-op"].append(pyinfra(inv, "deploy/provision.py")[0])
                rows["audit"].append(pyinfra(inv, "deploy/audit.py")[0])
                host.reset()
                served = mirror.bytes_served()
                before = du(host, "/persist")
                seconds, rc = pyinfra(inv, "deploy/provision.py")
                assert rc == 0, "re-provision after reset failed"
                rows["reset re-provision"].append(seconds)
                net["reset re-provision"].append(mirror.bytes_served() - served + max(0, du(host, "/persist") - before))
                print(f"run {run}: " + ", ".join(f"{k} {v[-1]:.1f}s" for k, v in rows.items()), file=sys.stderr)
        finally:
            testbed.down()
    cold = statistics.median(rows["cold"])
    print(f"\n| step (median of {args.runs}) | seconds | min | max | vs cold | bytes from the network |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, values in rows.items():
        fetched = f"{statistics.median(net[name]) / 2**20:.0f} MiB" if name in net else "0"
        print(
            f"| {name} | {statistics.median(values):.1f} | {min(values):.1f} | {max(values):.1f} | "
            f"{statistics.median(values) / cold:.0%} | {fetched} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
