"""Scale: 1, 2 and 4 test hosts provisioned in one pyinfra run (pyinfra runs each step on all
hosts at once): wall time cold, after a reset and as a no-op, and its ratio to one host.

    .venv/bin/python -m bench.scale [--runs 3] [--hosts 1 2 4]

Needs root. Every host is on this one machine (its CPUs, disk and network are shared by all of
them), so the ratio shows what the tool adds per host plus the machine's contention.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import testbed
from bench.common import REPO, cell, inventory, median_table, per_step_medians, pyinfra, save, steps
from testbed import TestHost
from testbed.mirror import Mirror
from tests.e2e.artifacts import mirror_settings

CASES = ("cold", "reset re-provision", "no-op")


def slowest_host(path: Path, group: list[TestHost]) -> list[dict]:
    """The run's steps, each with the seconds of its slowest host (pyinfra waits for all hosts)."""
    by_host = [steps(path, h.name) for h in group]
    return [
        {"step": first["step"], "seconds": max(run[i]["seconds"] for run in by_host if i < len(run))}
        for i, first in enumerate(by_host[0])
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    rows: dict[str, dict[int, list[float]]] = {case: {n: [] for n in args.hosts} for case in CASES}
    # per case and host count: each run's steps, each step's slowest host (what the run waits for)
    step_runs: dict[str, dict[int, list[list[dict]]]] = {case: {n: [] for n in args.hosts} for case in CASES[:2]}
    with tempfile.TemporaryDirectory() as tmp_dir, Mirror(Path(tmp_dir) / "files") as mirror:
        tmp = Path(tmp_dir)
        settings = mirror_settings(mirror)
        hosts = [TestHost(h) for h in testbed.up(max(args.hosts), prefix="scale")]
        try:
            for run in range(1, args.runs + 1):
                for n in args.hosts:
                    group = hosts[:n]
                    inv = inventory(tmp / f"inv{n}.py", group, settings, tmp)
                    for h in group:
                        h.reset()
                        h.ssh("rm -rf /persist/* /persist/.[!.]*")
                    rows["cold"][n].append(pyinfra(inv, "deploy/provision.py")[0])
                    step_runs["cold"][n].append(slowest_host(tmp / "steps.json", group))
                    for h in group:
                        h.reset()
                    rows["reset re-provision"][n].append(pyinfra(inv, "deploy/provision.py")[0])
                    step_runs["reset re-provision"][n].append(slowest_host(tmp / "steps.json", group))
                    rows["no-op"][n].append(pyinfra(inv, "deploy/provision.py")[0])
                    print(
                        f"run {run}, {n} host(s): " + ", ".join(f"{c} {rows[c][n][-1]:.1f}s" for c in CASES),
                        file=sys.stderr,
                    )
                    for h in group:  # stop the servers: the next case starts from fresh hosts
                        h.reset()
        finally:
            testbed.down()
    for case in CASES:
        print(
            median_table(
                f"{case}, hosts in one run", {f"{n} host(s)": rows[case][n] for n in args.hosts}, ref="1 host(s)"
            )
        )
        print()
    most = max(args.hosts)
    for case, by_n in step_runs.items():
        one, many = per_step_medians(by_n[min(args.hosts)]), per_step_medians(by_n[most])
        print(f"| {case}: step (median s, slowest host) | {min(args.hosts)} host(s) | {most} host(s) |")
        print("| --- | ---: | ---: |")
        for step, seconds in one.items():
            if seconds >= 0.5 or many.get(step, 0) >= 0.5:
                print(f"| {cell(step)} | {seconds:.1f} | {many.get(step, 0):.1f} |")
        print()
    path = save(
        "scale",
        {
            "rows": {c: {str(n): v for n, v in r.items()} for c, r in rows.items()},
            "steps": {c: {str(n): v for n, v in r.items()} for c, r in step_runs.items()},
        },
    )
    print(f"raw figures: {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
