"""The audit on 1, 4 and 16 test hosts in one pyinfra run: a first run (no facts list kept yet: every
fact one round trip) and a repeat (the facts the first asked, read in one round trip per host),
with each count's ratio to one host. The hosts are fresh (they run only sshd): the figures are
the tool's own cost per host.

    .venv/bin/python -m bench.audit [--runs 3] [--hosts 1 4 16]

Needs root (test hosts).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import testbed
from bench.common import REPO, median_table, pyinfra, save
from testbed import TestHost, write_inventory


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()
    cases = ("first run", "repeat")
    rows: dict[str, dict[int, list[float]]] = {case: {n: [] for n in args.hosts} for case in cases}
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        hosts = [TestHost(h) for h in testbed.up(max(args.hosts), prefix="audit")]
        try:
            for run in range(1, args.runs + 1):
                for n in args.hosts:
                    records = tmp / f"records-{n}"
                    shutil.rmtree(records, ignore_errors=True)
                    settings = {"provision_records_dir": str(records), "audit_report_path": str(tmp / "audit.json")}
                    inv = write_inventory(tmp / f"inv{n}.py", hosts[:n], settings, own_ports=True)
                    for case in cases:
                        rows[case][n].append(pyinfra(inv, "deploy/audit.py")[0])
                    print(
                        f"run {run}, {n} host(s): " + ", ".join(f"{c} {rows[c][n][-1]:.1f}s" for c in cases),
                        file=sys.stderr,
                    )
        finally:
            testbed.down()
    for case in cases:
        table = {f"{n} host(s)": rows[case][n] for n in args.hosts}
        print(median_table(f"audit, {case}, hosts in one run", table, ref=f"{min(args.hosts)} host(s)"))
        print()
    path = save("audit", {"rows": {c: {str(n): v for n, v in r.items()} for c, r in rows.items()}})
    print(f"raw figures: {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
