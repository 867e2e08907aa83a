"""A rollout over a fleet in batches, like Ansible's `serial` and `max_fail_percentage`: where the change
restarts the server on any host (a new build, Python minor or server arguments), the hosts are provisioned
`rolling_batch` at a time, each batch served and proven before the next starts; once more hosts failed than
`rolling_max_failures` allows, the rollout stops (a failed host has rolled back to what served before, as any
provision does) and the hosts not yet reached are named and left as they are. A change that no host
restarts for (models, the venv: loaded into the running server) goes to every host in one run.

    .venv/bin/python -m run.rolling INVENTORY [--batch 2|25%] [--max-failures 0|10%] [pyinfra options...]

pyinfra runs one operation at a time on every host of a run, so each batch is a run of its own (`--limit`).
The plan first (`--dry`: nothing changes) says which hosts restart; at the end `deploy/status.py` says
which build each host runs. Exit status 0 only where every host is OK.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from config.settings import load

REPO = Path(__file__).resolve().parents[1]
_PLAN = re.compile(r"^== plan for (?P<host>\S+) \(nothing is changed before this\)$")
_SERVER = re.compile(r"^  server   (?P<what>.*)$")
_OUTCOME = re.compile(r"^\s*\[(?P<host>[^\]]+)\] (?P<outcome>OK|BLOCKED, nothing changed: .*|FAILED at .*)$")


def count(spec: str, total: int, at_least: int) -> int:
    """A count ("2") or a share of total ("25%", rounded down, at least at_least) as a number of hosts."""
    if spec.endswith("%"):
        return max(at_least, total * int(spec[:-1]) // 100)
    return int(spec)


def batches(hosts: Sequence[str], batch: str) -> list[list[str]]:
    """The hosts in their inventory order, cut in batches of `batch` ("" = one batch of all)."""
    size = len(hosts) if not batch else min(len(hosts), count(batch, len(hosts), 1))
    return [list(hosts[i : i + size]) for i in range(0, len(hosts), max(size, 1))]


def _planned(plan_output: str, *what: str) -> dict[str, str]:
    """From the plans a --dry run prints: each host whose server line starts with one of `what` -> that line."""
    found, host = {}, None
    for line in plan_output.splitlines():
        if m := _PLAN.match(line.strip("\r")):
            host = m["host"]
        elif host and (m := _SERVER.match(line)) and m["what"].startswith(what):
            found[host] = m["what"]
    return found


def restarting(plan_output: str) -> dict[str, str]:
    """Each host whose server starts or restarts -> why."""
    return _planned(plan_output, "will start", "will restart")


def handing_over(plan_output: str) -> dict[str, str]:
    """Each host whose server hands over to a new one beside it (no request fails, no batch needed) -> why."""
    return _planned(plan_output, "will hand over")


def outcomes(run_output: str) -> dict[str, str]:
    """From a run's summary: each host -> OK / BLOCKED ... / FAILED at ... (run/run_summary.py's lines)."""
    return {m["host"]: m["outcome"] for line in run_output.splitlines() if (m := _OUTCOME.match(line))}


@dataclass
class Rollout:
    """What a rollout did: each batch's hosts and outcomes, the hosts it never reached."""

    batches: list[dict[str, str]] = field(default_factory=list)
    not_reached: list[str] = field(default_factory=list)
    stopped: str = ""

    @property
    def failed(self) -> list[str]:
        return [host for batch in self.batches for host, outcome in batch.items() if outcome != "OK"]


def roll(hosts: Sequence[str], batch: str, max_failures: str, run_batch) -> Rollout:
    """Each batch in turn through run_batch(hosts) -> {host: outcome}; stops once more hosts failed than
    allowed, naming the hosts not reached. A host with no outcome (not reached by pyinfra) failed."""
    allowed = count(max_failures, len(hosts), 0)
    rollout = Rollout()
    cut = batches(hosts, batch)
    for number, members in enumerate(cut):
        got = run_batch(members)
        rollout.batches.append({host: got.get(host, "FAILED: no outcome (not reached)") for host in members})
        if len(rollout.failed) > allowed:
            rollout.not_reached = [host for later in cut[number + 1 :] for host in later]
            rollout.stopped = (
                f"stopped after batch {number + 1}: {len(rollout.failed)} failed host(s), more than the "
                f"{allowed} allowed (rolling_max_failures = {max_failures!r})"
            )
            break
    return rollout


def _pyinfra(inventory: str, deploy: str, extra: Sequence[str], limit: Sequence[str] = ()) -> tuple[int, str]:
    """A pyinfra run from this tree, its output shown as it comes and returned."""
    argv = [sys.executable, "-m", "pyinfra", inventory, deploy, "-y", *extra, *(f"--limit={h}" for h in limit)]
    lines = []
    with subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line, end="", flush=True)
            lines.append(line)
    return proc.returncode, "".join(lines)


def _inventory(inventory: str, data: dict) -> list[tuple[str, dict]]:
    """The inventory's hosts in order with their data, loaded as pyinfra loads it."""
    from pyinfra.api import State
    from pyinfra.context import ctx_state
    from pyinfra_cli.inventory import make_inventory

    ctx_state.set(State(check_for_changes=False))  # as pyinfra's CLI sets it before loading an inventory
    return [(host.name, host.data.dict()) for host in make_inventory(inventory, override_data=data, cwd=str(REPO))]


def _data_options(extra: Sequence[str]) -> dict:
    """pyinfra's --data key=value options, as its CLI parses them."""
    from pyinfra_cli.util import parse_cli_arg

    out = {}
    for i, arg in enumerate(extra):
        value = extra[i + 1] if arg == "--data" and i + 1 < len(extra) else arg[7:] if arg.startswith("--data=") else ""
        if "=" in value:
            key, _, text = value.partition("=")
            out[key] = parse_cli_arg(text)
    return out


def _builds(inventory: str, extra: Sequence[str]) -> dict[str, str]:
    """Which build each host runs, from deploy/status.py's report."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "status.json"
        _pyinfra(inventory, "deploy/status.py", [*extra, "--data", f"status_report_path={report}"])
        try:
            hosts = json.loads(report.read_text())["hosts"]
        except (OSError, ValueError, KeyError):
            return {}
    out = {}
    for name, status in hosts.items():
        triton = status.get("triton") or {}
        out[name] = (
            f"{triton.get('version') or '?'} sha256 {(triton.get('sha256') or '?')[:12]}..." if triton else "none"
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("inventory")
    parser.add_argument("--batch", help='hosts per batch: "2", "25%%" ("" = all); default: rolling_batch')
    parser.add_argument("--max-failures", help='failed hosts allowed: "0", "10%%"; default: rolling_max_failures')
    parser.add_argument("--deploy", default="deploy/provision.py", help=argparse.SUPPRESS)
    args, extra = parser.parse_known_args(argv)
    hosts = _inventory(args.inventory, _data_options(extra))
    if not hosts:
        print(f"rollout: {args.inventory} names no host", file=sys.stderr)
        return 2
    first = load(hosts[0][1], hosts[0][0])  # validated as every run validates it
    batch = first.rolling_batch if args.batch is None else args.batch
    max_failures = first.rolling_max_failures if args.max_failures is None else args.max_failures
    load({**hosts[0][1], "rolling_batch": batch, "rolling_max_failures": max_failures})  # checked as settings are
    names = [name for name, _ in hosts]
    _, plan = _pyinfra(args.inventory, args.deploy, [*extra, "--dry"])
    restarts, over = restarting(plan), handing_over(plan)
    if not restarts:
        batch = ""  # loaded into the running servers or handed over: no request is dropped, no batches needed
    print(
        f"== rollout of {len(names)} host(s): "
        + (f"batches of {len(batches(names, batch)[0])}" if batch else "all at once")
        + f"; restarting: {', '.join(sorted(restarts)) or 'none'}; at most {max_failures} failed"
        + (f"; handing over (no request fails): {', '.join(sorted(over))}" if over else ""),
        flush=True,
    )

    def run_batch(members: list[str]) -> dict[str, str]:
        print(f"== batch: {', '.join(members)}", flush=True)
        return outcomes(_pyinfra(args.inventory, args.deploy, extra, members)[1])

    rollout = roll(names, batch, max_failures, run_batch)
    builds = _builds(args.inventory, extra)
    print("== rollout summary")
    for number, done in enumerate(rollout.batches, 1):
        for host, outcome in done.items():
            print(f"  batch {number}  {host}: {outcome}; runs {builds.get(host, '?')}")
    for host in rollout.not_reached:
        print(f"  not reached  {host}: left as it was; runs {builds.get(host, '?')}")
    if rollout.stopped:
        print(f"  {rollout.stopped}")
    return 0 if not rollout.failed and not rollout.not_reached else 1


if __name__ == "__main__":
    raise SystemExit(main())
