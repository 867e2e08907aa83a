"""The one way tests and benchmarks run pyinfra: its CLI from the repository root, as a user would,
timed; and the closing table of a run, read back."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_pyinfra(
    inventory: Path | str, *args: str, check: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`python -m pyinfra INVENTORY ARGS...` (env: variables added to the controller's environment);
    the result carries `.seconds`, the wall time of the run."""
    argv = [sys.executable, "-m", "pyinfra", str(inventory), *args]
    t0 = time.monotonic()
    res = subprocess.run(
        argv,
        cwd=REPO,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=1800,
        env={**os.environ, **env} if env else None,
    )
    res.seconds = time.monotonic() - t0
    if check and res.returncode != 0:
        raise AssertionError(f"pyinfra failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return res


def run_pyinfra_lines(inventory: Path | str, *args: str) -> tuple[int, list[tuple[float, str]]]:
    """Like run_pyinfra, but each line of the output (stdout and stderr as one) with the second it
    arrived at since the start: to see that a run says something while a step is still going."""
    argv = [sys.executable, "-u", "-m", "pyinfra", str(inventory), *args]
    t0 = time.monotonic()
    lines: list[tuple[float, str]] = []
    with subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.monotonic() - t0, line.rstrip("\n")))
        rc = proc.wait(timeout=1800)
    return rc, lines


def op_results(output: str) -> dict[str, dict[str, int]]:
    """pyinfra's closing table: operation -> {hosts, success, error, no_change}."""
    rows: dict[str, dict[str, int]] = {}
    in_table = False
    for line in output.splitlines():
        if line.strip().startswith("Operation") and "No Change" in line:
            in_table = True
            continue
        if in_table:
            parts = line.split()
            if len(parts) < 5:
                break
            nums = [0 if p == "-" else int(p) for p in parts[-4:]]
            rows[" ".join(parts[:-4])] = dict(zip(("hosts", "success", "error", "no_change"), nums, strict=True))
    return rows
