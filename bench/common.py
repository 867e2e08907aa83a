"""What every benchmark shares: timed pyinfra runs on test hosts, bytes fetched, median tables."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from collections.abc import Iterable
from pathlib import Path

from testbed import TestHost, run_pyinfra, write_inventory
from testbed.mirror import Mirror

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"


def pyinfra(inv: Path, deploy: str, *args: str) -> tuple[float, subprocess.CompletedProcess]:
    """Run the pyinfra CLI as a user would (testbed's one runner); (wall seconds, the finished process)."""
    res = run_pyinfra(inv, deploy, "-y", *args)
    if res.returncode != 0 and deploy != "deploy/audit.py":
        raise RuntimeError(f"{deploy} failed ({res.returncode}):\n{(res.stdout + res.stderr)[-4000:]}")
    return res.seconds, res


def inventory(path: Path, hosts: list[TestHost], settings: dict, tmp: Path) -> Path:
    """Mirror settings, own ports per host, reports and step timings under tmp."""
    return write_inventory(
        path,
        hosts,
        settings,
        own_ports=True,
        audit_report_path=str(tmp / "audit.json"),
        step_timings_path=str(tmp / "steps.json"),
    )


def mirror_bytes(mirror: Mirror, since: int) -> int:
    """Bytes the loopback mirror (standing in for GitHub/NGC and the PyTorch index) sent after
    request number `since`."""
    lines = mirror.log_path.read_text().splitlines()[since:] if mirror.log_path.exists() else []
    return sum(int(line.rsplit(" ", 1)[1]) for line in lines)


def cpu_busy_seconds(stat: Path = Path("/proc/stat")) -> float:
    """CPU seconds this machine has spent busy so far, every core and process (the test hosts' too: they
    share its kernel): user, nice, system, irq, softirq and steal of /proc/stat's first line."""
    fields = [int(v) for v in stat.read_text().splitlines()[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def network_bytes(dev: Path = Path("/proc/net/dev")) -> int:
    """Bytes received so far on every interface but loopback: what PyPI and Debian sent. The test
    hosts share this machine's network namespace, so their downloads are counted here."""
    total = 0
    for line in dev.read_text().splitlines()[2:]:
        name, _, fields = line.partition(":")
        if name.strip() != "lo" and not name.strip().startswith("ifb"):  # ifb: a copy of ingress, for shaping
            total += int(fields.split()[0])
    return total


class Fetched:
    """Bytes from the network during a block: the interfaces' received bytes plus the mirror's."""

    def __init__(self, mirror: Mirror):
        self.mirror = mirror

    def __enter__(self) -> Fetched:
        self.since, self.rx = len(self.mirror.requests()), network_bytes()
        return self

    def __exit__(self, *exc) -> None:
        self.bytes = network_bytes() - self.rx + mirror_bytes(self.mirror, self.since)


def steps(path: Path, host_name: str) -> list[dict]:
    """The step timings of one host from the last run (run/timings.py)."""
    return json.loads(path.read_text())[host_name] if path.exists() else []


def median_table(title: str, rows: dict[str, list[float]], unit: str = "s", ref: str | None = None) -> str:
    """A Markdown table of median, min and max per row and, with ref, the median of the ratios
    to ref taken within each run (run i over ref's run i: these machines are noisy)."""
    runs = max((len(v) for v in rows.values()), default=0)
    head = f"| {title} (median of {runs}) | {unit} | min | max |" + (f" vs {ref} |" if ref else "")
    out = [head, "|" + " --- |" + " ---: |" * (4 if ref else 3)]
    for name, values in rows.items():
        if not values:
            continue
        line = f"| {name} | {statistics.median(values):.1f} | {min(values):.1f} | {max(values):.1f} |"
        if ref:
            line += f" {ratio(values, rows[ref]):.0%} |"
        out.append(line)
    return "\n".join(out)


def ratio(values: list[float], ref: list[float]) -> float:
    """The median of values[i] / ref[i]: each ratio within one run."""
    return statistics.median(a / b for a, b in zip(values, ref, strict=True))


def cell(text: str) -> str:
    """Text for a Markdown table cell: a deploy's steps are named "deploy | step"."""
    return text.replace("|", "\\|")


def mib(n: float) -> str:
    return f"{n / 2**20:.0f} MiB"


def save(name: str, data: dict) -> Path:
    """Raw figures of a benchmark, for the plot and for checking a table (bench/results/, not committed)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def per_step_medians(runs: Iterable[list[dict]]) -> dict[str, float]:
    """Median seconds of each step over runs, in the order of the first run."""
    by_step: dict[str, list[float]] = {}
    for run in runs:
        for s in run:
            by_step.setdefault(s["step"], []).append(s["seconds"])
    return {k: statistics.median(v) for k, v in by_step.items()}
