"""Record a fact's real command output on a host as a unit-test fixture (output in, fact out).

    python -m tests.capture_fixture facts.system.OsRelease debian12 --source "Debian 12 test host" \
        [--ssh tb1] [--arg X ...]

Without --ssh it runs the command on this machine. Writes the fact's arguments, the command as the
unit tests pin it (each script of remote/ shown as <script NAME>), where the output came from (--source,
with the date) and the output; the expected fact is the current process() result: read it before
committing, it is the test's claim.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import subprocess
from pathlib import Path

from pyinfra.api import StringCommand

import testbed
from testbed import TestHost
from tests.unit.test_facts import command_text

FIXTURES = Path(__file__).parent / "fixtures" / "facts"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("fact")
    parser.add_argument("case")
    parser.add_argument("--ssh", help="test host name")
    parser.add_argument("--arg", action="append", default=[], help="JSON-encoded argument")
    parser.add_argument("--source", required=True, help="the host the output is from: kind, release")
    args = parser.parse_args()
    module, cls = args.fact.rsplit(".", 1)
    fact = getattr(importlib.import_module(module), cls)()
    fact_args = [json.loads(a) for a in args.arg]
    pinned = command_text(fact.command(*fact_args))
    command = fact.command(*fact_args)
    if isinstance(command, StringCommand):
        command = command.get_raw_value()
    if args.ssh:
        host = TestHost(next(h for h in testbed.load_hosts() if h.name == args.ssh))
        out = host.ssh(command).stdout.splitlines()
    else:
        out = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True).stdout.splitlines()
    lines = [line.rstrip("\n") for line in out]
    result = fact.process(lines) if lines else fact.default()
    dest = FIXTURES / args.fact.replace("facts.", "") / f"{args.case}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    source = f"{args.source}, captured {datetime.date.today().isoformat()}"
    spec = {"args": fact_args, "source": source, "output": lines, "fact": result, "command": pinned}
    dest.write_text(json.dumps(spec, indent=2) + "\n")
    print(dest)


if __name__ == "__main__":
    main()
