"""Record a fact's real command output on a host as a unit-test fixture (output in, fact out).

    python -m tests.capture_fixture facts.system.OsRelease debian12 [--ssh tb1] [--arg X ...]

Without --ssh it runs the command on this machine. The expected fact is the current
process() result: read it before committing, it is the test's claim.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
from pathlib import Path

from pyinfra.api import StringCommand

import testbed
from testbed import TestHost

FIXTURES = Path(__file__).parent / "fixtures" / "facts"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("fact")
    parser.add_argument("case")
    parser.add_argument("--ssh", help="test host name")
    parser.add_argument("--arg", action="append", default=[], help="JSON-encoded argument")
    args = parser.parse_args()
    module, cls = args.fact.rsplit(".", 1)
    fact = getattr(importlib.import_module(module), cls)()
    fact_args = [json.loads(a) for a in args.arg]
    command = fact.command(*fact_args)
    if isinstance(command, StringCommand):
        command = command.get_raw_value()
    if args.ssh:
        host = TestHost(next(h for h in testbed.load_hosts() if h.name == args.ssh))
        out = host.ssh(command).stdout.splitlines()
    else:
        out = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True).stdout.splitlines()
    lines = [line.rstrip() for line in out]
    result = fact.process(lines) if lines else fact.default()
    dest = FIXTURES / args.fact.replace("facts.", "") / f"{args.case}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps({"args": fact_args, "output": lines, "fact": result}, indent=2) + "\n")
    print(dest)


if __name__ == "__main__":
    main()
