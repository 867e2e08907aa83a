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


def current(checker: str = "mypy") -> Counter[str]:
    """Every error mypy reports now (pyproject.toml's [tool.mypy]), line numbers left out. A checker that
    did not run (not installed: Python's "No module named mypy" exits 1, as mypy does with errors) raises,
    naming why: it is never taken for a clean run."""
    res = subprocess.run(
        [sys.executable, "-m", checker, "--no-error-summary", "--no-pretty", "--hide-error-context"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    found: Counter[str] = Counter()
    for line in res.stdout.splitlines():
        m = _LINE.match(line)
        if m:
            found[f"{m['path']}: {m['message']}"] += 1
    # mypy exits 0 with no error, 1 with errors it printed; anything else, or 1 with none, is no run
    if res.returncode not in (0, 1) or (res.returncode == 1 and not found):
        raise RuntimeError(
            f"{checker} did not run (exit {res.returncode}): {(res.stderr or res.stdout).strip()[:500]} "
            "(bash scripts/setup.sh --test installs it)"
        )
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
