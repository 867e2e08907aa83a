"""The figures the project keeps, this tree against another commit, side by side in one run on the same
fresh test hosts: a cold provision with the controller's lock, the no-op re-run after it, a repeat
audit of 1 and 16 hosts (with the ratio of 16 to 1), and a re-provision after a reset. Prints median
tables and each ratio to the other commit; raw figures go to bench/results/regress.json. Not a test: run
it before you stop whenever a change touches the run's path, and put its tables in the note.

    .venv/bin/python -m bench.regress --against COMMIT [--runs 3] [--hosts 16]

The other commit is checked out in a git worktree and run with this tree's controller venv. Each tree
gets only the settings its own group_data/all.py names (a setting added since would stop the older one).
Needs root (test hosts).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import testbed
from bench.common import REPO, median_table, save
from testbed import TestHost, write_inventory
from testbed.mirror import Mirror
from tests.e2e.artifacts import mirror_settings

THIS, OTHER = "this tree", "--against"


def known_settings(tree: Path) -> set[str]:
    """The setting names a tree's group_data/all.py gives a default."""
    text = (tree / "group_data" / "all.py").read_text()
    return set(re.findall(r"^([a-z][a-z0-9_]*) = ", text, re.MULTILINE)) | {"models"}


def timed(tree: Path, inv: Path, deploy: str) -> float:
    """Wall seconds of one pyinfra run from tree (the whole command, as a user waits for it)."""
    argv = [sys.executable, "-m", "pyinfra", str(inv), deploy, "-y"]
    started = time.monotonic()
    res = subprocess.run(argv, cwd=tree, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=1800)
    seconds = time.monotonic() - started
    if res.returncode != 0 and deploy != "deploy/audit.py":
        raise RuntimeError(f"{deploy} from {tree} failed:\n{(res.stdout + res.stderr)[-4000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="the commit to compare with")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=16, help="the fleet the audit is measured on")
    args = parser.parse_args()
    names = (
        "cold provision",
        "no-op",
        "audit repeat, 1 host",
        f"audit repeat, {args.hosts} hosts",
        "reset re-provision",
    )
    rows: dict[str, dict[str, list[float]]] = {n: {THIS: [], OTHER: []} for n in names}
    ratios: dict[str, list[float]] = {THIS: [], OTHER: []}
    with tempfile.TemporaryDirectory() as tmp_dir, Mirror(Path(tmp_dir) / "files") as mirror:
        tmp = Path(tmp_dir)
        other = tmp / "other"
        subprocess.run(["git", "worktree", "add", "--detach", str(other), args.against], cwd=REPO, check=True)
        trees = {THIS: REPO, OTHER: other}
        served = mirror_settings(mirror)
        try:
            host = TestHost(testbed.up(1, prefix="bench")[0])
            fleet = [TestHost(h) for h in testbed.up(args.hosts, prefix="audit")]
            invs, audits = {}, {}
            for name, tree in trees.items():
                keep = known_settings(tree)
                settings = {k: v for k, v in served.items() if k in keep}
                reports = {"audit_report_path": str(tmp / f"audit-{len(invs)}.json")}
                records = {"provision_records_dir": str(tmp / f"records-{len(invs)}")}
                invs[name] = write_inventory(
                    tmp / f"inv-{len(invs)}.py", [host], {**settings, **reports, **records}, own_ports=True
                )
                audits[name] = {
                    n: write_inventory(
                        tmp / f"audit-{len(audits)}-{n}.py",
                        fleet[:n],
                        {**reports, "provision_records_dir": str(tmp / f"audit-records-{len(audits)}-{n}")},
                        own_ports=True,
                    )
                    for n in (1, args.hosts)
                }
            host.ssh("rm -rf /persist/* /persist/.[!.]*")
            timed(REPO, invs[THIS], "deploy/provision.py")  # makes the controller's lock: not counted
            for run in range(1, args.runs + 1):
                # each tree first in every other run: what runs first on a fresh fleet was measured slower
                # (the 16-host audit 3.3 s vs 2.9 s; 3.23 vs 3.25 s alternating, BENCHMARKS.md section 24)
                order = list(trees.items()) if run % 2 else list(reversed(trees.items()))
                for name, tree in order:
                    host.reset()
                    host.ssh("rm -rf /persist/* /persist/.[!.]*")
                    rows["cold provision"][name].append(timed(tree, invs[name], "deploy/provision.py"))
                    rows["no-op"][name].append(timed(tree, invs[name], "deploy/provision.py"))
                    for n, label in ((1, names[2]), (args.hosts, names[3])):
                        timed(tree, audits[name][n], "deploy/audit.py")  # the first: its facts lists are made
                        rows[label][name].append(timed(tree, audits[name][n], "deploy/audit.py"))
                    ratios[name].append(rows[names[3]][name][-1] / rows[names[2]][name][-1])
                    host.reset()  # a notebook's reset: /persist kept, the rest from its caches
                    rows["reset re-provision"][name].append(timed(tree, invs[name], "deploy/provision.py"))
                print(
                    f"run {run}: "
                    + "; ".join(f"{k}: {v[THIS][-1]:.1f}s vs {v[OTHER][-1]:.1f}s" for k, v in rows.items()),
                    file=sys.stderr,
                )
        finally:
            testbed.down()
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=REPO, check=False)
            shutil.rmtree(tmp / "other", ignore_errors=True)
    for title, table in rows.items():
        print(median_table(f"{title} ({THIS} vs {OTHER} {args.against[:12]})", table, ref=OTHER))
        print()
    print(median_table(f"audit repeat, {args.hosts} hosts / 1 host", ratios, unit="x", ref=OTHER))
    path = save("regress", {"rows": rows, "ratios": ratios, "against": args.against})
    print(f"raw figures: {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
