"""uv against pip as the venv's installer (venv_installer), side by side on the same test host in
the same runs: a cold provision (fresh host, empty /persist: the wheelhouse filled by pip either
way, then installed) and a reset re-provision with no venv snapshot (venv_snapshot = False: the
venv installed from the wheelhouse, no index). Prints median tables of the whole run and of the
steps that differ; raw figures go to bench/results/installer.json.

    .venv/bin/python -m bench.installer [--runs 3]

Needs root (test hosts).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import testbed
from bench.common import REPO, inventory, median_table, pyinfra, ratio, save, steps
from testbed import TestHost
from testbed.mirror import Mirror
from tests.e2e.artifacts import mirror_settings

INSTALLERS = ("pip", "uv")
STEPS = ("Wheels in the persistent wheelhouse", "venv packages")


def step_seconds(path: Path, host: TestHost, name: str) -> float:
    return sum(s["seconds"] for s in steps(path, host.name) if s["step"] == name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[float]] = {}
    step_rows: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp_dir, Mirror(Path(tmp_dir) / "files") as mirror:
        tmp = Path(tmp_dir)
        base = mirror_settings(mirror)
        host = TestHost(testbed.up(1, prefix="inst")[0])
        try:
            for run in range(1, args.runs + 1):
                for installer in INSTALLERS:
                    settings = {**base, "venv_installer": installer, "venv_snapshot": False}
                    inv = inventory(tmp / f"inv-{installer}.py", [host], settings, tmp)
                    for case in ("cold", "reset, no snapshot"):
                        host.reset()
                        if case == "cold":
                            host.ssh("rm -rf /persist/* /persist/.[!.]*")
                        seconds, _ = pyinfra(inv, "deploy/provision.py")
                        rows.setdefault(f"{installer}: {case}", []).append(seconds)
                        for step in STEPS:
                            key = f"{installer}: {case}: {step}"
                            step_rows.setdefault(key, []).append(step_seconds(tmp / "steps.json", host, step))
                print(f"run {run}: " + ", ".join(f"{k} {v[-1]:.1f}s" for k, v in rows.items()), file=sys.stderr)
        finally:
            testbed.down()
    print(median_table("provisioning with pip or uv as the venv's installer", rows))
    print()
    print(median_table("the steps (seconds)", {k: v for k, v in step_rows.items() if max(v) > 0.05}))
    print("\n| ratio, uv / pip (within each run, median) | value |\n| --- | ---: |")
    for case in ("cold", "reset, no snapshot"):
        print(f"| {case}, whole run | {ratio(rows[f'uv: {case}'], rows[f'pip: {case}']):.0%} |")
        a, b = step_rows[f"uv: {case}: venv packages"], step_rows[f"pip: {case}: venv packages"]
        print(f"| {case}, venv packages | {ratio(a, b):.0%} |")
    path = save("installer", {"rows": rows, "steps": step_rows})
    print(f"\nraw figures: {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
