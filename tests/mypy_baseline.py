"""The type checker's known errors (tests/mypy-baseline.txt), which may only shrink.

    python -m tests.mypy_baseline          # what differs from the baseline: new errors, fixed ones
    python -m tests.mypy_baseline --write  # after fixing errors: the baseline without them

Errors are kept without line numbers (a line moved is the same error); new code adds none: the unit
test fails on any error not in the baseline, and on a baseline entry no longer found (remove it).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).parents[1]
BASELINE = REPO / "tests" / "mypy-baseline.txt"
_LINE = re.compile(r"^(?P<path>[^:]+):\d+: error: (?P<message>.*)$")


def current() -> Counter[str]:
    """Every error mypy reports now (pyproject.toml's [tool.mypy]), line numbers left out."""
    res = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty", "--hide-error-context"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if res.returncode not in (0, 1):
        raise RuntimeError(f"mypy did not run: {res.stderr or res.stdout}")
    found: Counter[str] = Counter()
    for line in res.stdout.splitlines():
        m = _LINE.match(line)
        if m:
            found[f"{m['path']}: {m['message']}"] += 1
    return found


def baseline() -> Counter[str]:
    return Counter(line for line in BASELINE.read_text().splitlines() if line and not line.startswith("#"))


def main() -> None:
    found, known = current(), baseline()
    for line in sorted((found - known).elements()):
        print(f"new:   {line}")
    for line in sorted((known - found).elements()):
        print(f"fixed: {line}")
    if "--write" in sys.argv:
        if found - known:
            sys.exit("new errors: fix them; the baseline only shrinks")
        header = "# mypy errors known when the type checker came in; only ever remove lines (tests/mypy_baseline.py)\n"
        BASELINE.write_text(header + "".join(f"{line}\n" for line in sorted(found.elements())))
        print(f"{BASELINE}: {sum(found.values())} errors")


if __name__ == "__main__":
    main()
