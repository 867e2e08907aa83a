"""Regenerate the operation fixtures' expected commands (or noop) from the code, showing each change.

    python -m tests.regen_operation_fixtures [PATTERN ...]          # print the diff of each case that differs
    python -m tests.regen_operation_fixtures --write [PATTERN ...]  # and write the new expectations

PATTERN matches a case's "<module>.<operation>/<case>" (fnmatch; default: every case). A fixture's args
and facts are its input and are never touched; its "commands", "noop" or "error" are the claim the test
makes: read each diff before writing it, as a reviewer would.
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import re

from pyinfra.api.exceptions import OperationError
from pyinfra.context import ctx_host

from tests.unit.test_operations import CASES, FixtureHost, _args, _operation, _text


def expected(spec: dict, dirname: str) -> dict:
    """The spec with its expectation as the code now produces it."""
    fake = FixtureHost(spec.get("facts", {}))
    new = {k: v for k, v in spec.items() if k not in ("commands", "noop", "error")}
    with ctx_host.use(fake):
        try:
            commands = [_text(c) for c in _operation(dirname)._inner(**_args(spec["args"], spec.get("facts", {})))]
        except OperationError as exc:
            new["error"] = (
                spec.get("error") if spec.get("error") and re.search(re.escape(spec["error"]), str(exc)) else str(exc)
            )
            return new
    if commands:
        new["commands"] = commands
    if fake.noops:
        new["noop"] = fake.noops[0]
    return new


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("patterns", nargs="*", default=["*"])
    parser.add_argument("--write", action="store_true", help="write the new expectations")
    args = parser.parse_args()
    changed = 0
    for case in CASES:
        name = f"{case.parent.name}/{case.stem}"
        if not any(fnmatch.fnmatch(name, p) for p in args.patterns):
            continue
        old_text = case.read_text()
        new_text = json.dumps(expected(json.loads(old_text), case.parent.name), indent=2) + "\n"
        if json.loads(new_text) == json.loads(old_text):
            continue
        changed += 1
        diff = difflib.unified_diff(old_text.splitlines(), new_text.splitlines(), str(case), str(case), lineterm="")
        print("\n".join(diff))
        if args.write:
            case.write_text(new_text)
    print(f"{changed} case(s) {'rewritten' if args.write else 'differ'}")


if __name__ == "__main__":
    main()
