"""Re-provisioning after a reset when /persist is a slow network drive: the test host's /persist
served at --mbps MB/s each way with --latency-ms per open (testbed/throttle.py), against the same
host's local disk, for each venv snapshot compression; with --against, this tree and another commit
side by side on the same host. Prints median tables; raw figures and per-step times go to
bench/results/persist.json.

    .venv/bin/python -m bench.persist [--runs 3] [--mbps 60] [--compressions none,gzip,zstd] [--against COMMIT]

Per tree and compression: a cold provision (unthrottled) fills /persist and writes the snapshot; then
--runs resets re-provisioned on the local disk and --runs with /persist throttled. "current"
runs the code as it is without the setting (to measure a version that lacks it). The other commit is
checked out in a git worktree and run with this tree's controller venv and test bed.
Needs root (test hosts).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import testbed
from bench.common import REPO, inventory, median_table, per_step_medians, save, steps
from bench.regress import known_settings, timed
from testbed import TestHost
from testbed.hosts import throttle
from testbed.mirror import Mirror
from tests.e2e.artifacts import mirror_settings


def snapshot_bytes(host: TestHost) -> int:
    """Bytes of the venv snapshots on /persist."""
    out = host.ssh("du -sb /persist/venv-snapshots 2>/dev/null | cut -f1 || echo 0").stdout.strip()
    return int(out or 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mbps", type=float, default=60.0)
    parser.add_argument("--latency-ms", type=float, default=2.0)
    parser.add_argument("--compressions", default="none,gzip,zstd")
    parser.add_argument("--against", default="", help="a commit to measure side by side with this tree")
    args = parser.parse_args()
    rows: dict[str, list[float]] = {}
    sizes: dict[str, int] = {}
    step_runs: dict[str, list] = {}
    with tempfile.TemporaryDirectory() as tmp_dir, Mirror(Path(tmp_dir) / "files") as mirror:
        tmp = Path(tmp_dir)
        trees = {"this tree": REPO}
        if args.against:
            other = tmp / "other"
            subprocess.run(["git", "worktree", "add", "--detach", str(other), args.against], cwd=REPO, check=True)
            trees[args.against[:12]] = other
        base = mirror_settings(mirror)
        host = TestHost(testbed.up(1, prefix="bench")[0])
        try:
            for label, tree in trees.items():
                keep = known_settings(tree)
                for codec in args.compressions.split(","):
                    settings = base if codec == "current" else {**base, "venv_snapshot_compression": codec}
                    settings = {k: v for k, v in settings.items() if k in keep}
                    inv = inventory(tmp / f"inv-{len(rows)}.py", [host], settings, tmp)
                    host.reset()
                    host.ssh("rm -rf /persist/* /persist/.[!.]*")
                    timed(tree, inv, "deploy/provision.py")  # cold: fills /persist, writes the snapshot
                    sizes[f"{label}, {codec}"] = snapshot_bytes(host)
                    for where in ("local disk", f"{args.mbps:g} MB/s"):
                        if where != "local disk":
                            host.host = throttle(host.name, args.mbps, args.latency_ms)
                        name = f"{label}, {codec}, {where}"
                        rows[name], step_runs[name] = [], []
                        for _ in range(args.runs):
                            host.reset()
                            rows[name].append(timed(tree, inv, "deploy/provision.py"))
                            step_runs[name].append(steps(tmp / "steps.json", host.name))
                        print(f"{name}: {', '.join(f'{s:.1f}s' for s in rows[name])}", file=sys.stderr)
                    host.host = throttle(host.name, 0)
        finally:
            testbed.down()
            if args.against:
                subprocess.run(["git", "worktree", "remove", "--force", str(tmp / "other")], cwd=REPO, check=False)
    print(median_table(f"reset re-provision, /persist local vs {args.mbps:g} MB/s", rows))
    print("\n| venv snapshot | bytes on /persist |\n| --- | ---: |")
    for key, size in sizes.items():
        print(f"| {key} | {size / 2**20:.0f} MiB |")
    for name, runs in step_runs.items():
        med = per_step_medians(runs)
        top = sorted(med.items(), key=lambda kv: kv[1], reverse=True)[:4]
        print(f"\n{name}: " + "; ".join(f"{k} {v:.1f} s" for k, v in top))
    path = save("persist", {"rows": rows, "sizes": sizes, "steps": step_runs, "mbps": args.mbps})
    print(f"\nraw figures: {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
