"""Cold provisioning with the controller's lock, side by side in one run: this tree (the lock's wheels
downloaded at once: torch, the rest in parts, uv) against another commit of the provisioner (--before,
checked out in a git worktree: one download after the other), and the hand recipe. Prints median
tables of the whole run and of the wheel step; raw figures go to bench/results/wheels.json.

    .venv/bin/python -m bench.wheels --before COMMIT [--runs 3]

Each run: a fresh host with an empty /persist for each of the three (the lock made by a first run that
is not counted). Needs root (test hosts).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import testbed
from bench.common import REPO, inventory, median_table, save, steps
from bench.provision import baseline
from testbed import TestHost
from testbed.mirror import Mirror
from tests.e2e.artifacts import mirror_settings

WHEELS = "Wheels in the persistent wheelhouse"


def provision(tree: Path, inv: Path, timings: Path, host: TestHost) -> tuple[float, float]:
    """A cold provision run from tree: (wall seconds, seconds of the wheel step)."""
    argv = [sys.executable, "-m", "pyinfra", str(inv), "deploy/provision.py", "-y"]
    started = time.monotonic()
    res = subprocess.run(argv, cwd=tree, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=1800)
    seconds = time.monotonic() - started
    if res.returncode != 0:
        raise RuntimeError(f"provision from {tree} failed:\n{(res.stdout + res.stderr)[-4000:]}")
    step = {s["step"]: s["seconds"] for s in steps(timings, host.name)}
    return seconds, step.get(WHEELS, 0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="the commit to compare with (one download at a time)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[float]] = {"at once (this tree)": [], "one after the other (--before)": [], "hand recipe": []}
    wheel_rows: dict[str, list[float]] = {"at once (this tree)": [], "one after the other (--before)": []}
    with tempfile.TemporaryDirectory() as tmp_dir, Mirror(Path(tmp_dir) / "files") as mirror:
        tmp = Path(tmp_dir)
        before = tmp / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(before), args.before], cwd=REPO, check=True)
        settings = mirror_settings(mirror)
        host = TestHost(testbed.up(1, prefix="bench")[0])
        try:
            inv = inventory(tmp / "inv.py", [host], settings, tmp)
            trees = {"at once (this tree)": REPO, "one after the other (--before)": before}
            host.ssh("rm -rf /persist/* /persist/.[!.]*")
            provision(REPO, inv, tmp / "steps.json", host)  # makes the controller's lock: not counted
            for run in range(1, args.runs + 1):
                for name, tree in trees.items():
                    host.reset()
                    host.ssh("rm -rf /persist/* /persist/.[!.]*")
                    seconds, wheels = provision(tree, inv, tmp / "steps.json", host)
                    rows[name].append(seconds)
                    wheel_rows[name].append(wheels)
                host.reset()
                host.ssh("rm -rf /persist/* /persist/.[!.]*")
                rows["hand recipe"].append(baseline(host, settings)[0])
                print(f"run {run}: " + ", ".join(f"{k} {v[-1]:.1f}s" for k, v in rows.items()), file=sys.stderr)
        finally:
            testbed.down()
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=REPO, check=False)
    print(median_table("cold provision with the controller's lock, one host", rows, ref="hand recipe"))
    print()
    print(median_table("the wheel step of those runs", wheel_rows, ref="one after the other (--before)"))
    ratios = [ours / hand for ours, hand in zip(rows["at once (this tree)"], rows["hand recipe"], strict=True)]
    print(f"\nours / hand recipe within each run: {', '.join(f'{r:.0%}' for r in ratios)}")
    path = save("wheels", {"rows": rows, "wheels": wheel_rows, "before": args.before})
    print(f"raw figures: {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
