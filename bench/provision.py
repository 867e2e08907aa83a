"""Provisioning speed on a test host, ours against the hand recipe, in one run: cold (fresh host,
empty /persist), re-provision after a reset (fresh host, /persist kept), no-op re-run and audit;
the baseline (bench/baseline.sh over the same SSH) cold and after a reset. Prints median tables
and the bytes each fetched from the network; per-step times go to bench/results/provision.json.

    .venv/bin/python -m bench.provision [--runs 3]

Needs root (test hosts). Triton and torch come from the loopback mirror, the rest from PyPI and
Debian. Bytes from the network: what this machine's interfaces received (PyPI, Debian; the test
hosts share its network) plus what the mirror sent, during each case.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import testbed
from bench.common import (
    REPO,
    Fetched,
    cell,
    inventory,
    median_table,
    mib,
    per_step_medians,
    pyinfra,
    ratio,
    save,
    steps,
)
from testbed import TestHost, host_index, triton_ports
from testbed.mirror import Mirror
from tests.e2e.artifacts import mirror_settings


def baseline(host: TestHost, settings: dict) -> tuple[float, dict[str, float]]:
    """Run the hand recipe over SSH; (wall seconds, seconds per step from its own stamps)."""
    ports = triton_ports(host_index(host.name))
    args = [
        settings["triton_pytriton_url"],
        settings["pip_find_links"],
        *(str(ports[k]) for k in ("triton_http_port", "triton_grpc_port", "triton_metrics_port")),
    ]
    argv = host.ssh_argv("bash", "-s", "--", *args)
    t0 = time.monotonic()
    with open(REPO / "bench" / "baseline.sh") as script:
        res = subprocess.run(argv, stdin=script, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    if res.returncode != 0 or "baseline: inference" not in res.stderr:
        raise RuntimeError(f"baseline failed ({res.returncode}):\n{res.stderr[-4000:]}")
    stamps = [
        line.split() for line in res.stderr.splitlines() if line.startswith("baseline: ") and len(line.split()) == 3
    ]
    per_step = {stamps[i][1]: float(stamps[i + 1][2]) - float(stamps[i][2]) for i in range(len(stamps) - 1)}
    return seconds, per_step


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[float]] = {
        k: []
        for k in (
            "cold",
            "reset re-provision",
            "no-op",
            "no-op, one round trip per fact",
            "audit",
            "baseline cold",
            "baseline after reset",
        )
    }
    net: dict[str, list[int]] = {k: [] for k in ("cold", "reset re-provision", "baseline cold", "baseline after reset")}
    step_runs: dict[str, list] = {"cold": [], "reset re-provision": [], "baseline cold": [], "baseline after reset": []}
    with tempfile.TemporaryDirectory() as tmp_dir, Mirror(Path(tmp_dir) / "files") as mirror:
        tmp = Path(tmp_dir)
        settings = mirror_settings(mirror)
        host = TestHost(testbed.up(1, prefix="bench")[0])
        try:
            inv = inventory(tmp / "inv.py", [host], settings, tmp)
            for run in range(1, args.runs + 1):
                # ours, cold: a fresh host with an empty /persist
                host.reset()
                host.ssh("rm -rf /persist/* /persist/.[!.]*")
                with Fetched(mirror) as fetched:
                    seconds, _ = pyinfra(inv, "deploy/provision.py")
                rows["cold"].append(seconds)
                net["cold"].append(fetched.bytes)
                step_runs["cold"].append(steps(tmp / "steps.json", host.name))
                rows["no-op"].append(pyinfra(inv, "deploy/provision.py")[0])
                # the same without the facts list kept by the last run (how every run read a host before)
                for kept in (REPO / "provision-records").glob(f"{host.name}.provision.facts.json"):
                    kept.unlink()
                rows["no-op, one round trip per fact"].append(pyinfra(inv, "deploy/provision.py")[0])
                rows["audit"].append(pyinfra(inv, "deploy/audit.py")[0])
                # ours after a reset: /persist kept
                host.reset()
                with Fetched(mirror) as fetched:
                    seconds, _ = pyinfra(inv, "deploy/provision.py")
                rows["reset re-provision"].append(seconds)
                net["reset re-provision"].append(fetched.bytes)
                step_runs["reset re-provision"].append(steps(tmp / "steps.json", host.name))
                # the hand recipe, cold and after a reset (it keeps nothing on /persist)
                for name in ("baseline cold", "baseline after reset"):
                    host.reset()
                    if name == "baseline cold":
                        host.ssh("rm -rf /persist/* /persist/.[!.]*")
                    with Fetched(mirror) as fetched:
                        seconds, per_step = baseline(host, settings)
                    rows[name].append(seconds)
                    net[name].append(fetched.bytes)
                    step_runs[name].append([{"step": k, "seconds": v} for k, v in per_step.items()])
                print(f"run {run}: " + ", ".join(f"{k} {v[-1]:.1f}s" for k, v in rows.items()), file=sys.stderr)
        finally:
            testbed.down()
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(median_table("provisioning, one host", rows, ref="cold"))
    print("\n| case | bytes from the network (median) |\n| --- | ---: |")
    for name, values in net.items():
        print(f"| {name} | {mib(statistics.median(values))} |")
    print("\n| ratio (within each run, median) | value |\n| --- | ---: |")
    ratios = {
        "ours reset / ours cold": ("reset re-provision", "cold"),
        "ours cold / baseline cold": ("cold", "baseline cold"),
        "ours reset / baseline after reset": ("reset re-provision", "baseline after reset"),
        "ours no-op / baseline after reset": ("no-op", "baseline after reset"),
    }
    for label, (a, b) in ratios.items():
        print(f"| {label} | {ratio(rows[a], rows[b]):.0%} |")
    print("\n| step (median seconds) | cold | reset |\n| --- | ---: | ---: |")
    cold_steps, reset_steps = per_step_medians(step_runs["cold"]), per_step_medians(step_runs["reset re-provision"])
    for step in cold_steps:
        print(f"| {cell(step)} | {cold_steps[step]:.1f} | {reset_steps.get(step, 0):.1f} |")
    path = save("provision", {"rows": rows, "net": net, "steps": step_runs, "medians": med})
    print(f"\nraw figures: {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
