"""A fleet rolled out in batches (run/rolling.py) on real test hosts: four hosts serving one build, a new
build rolled out two at a time by restarts (triton_upgrade = "restart") while a client polls every host,
one host of the second batch made to fail (its build cannot start): the first batch serves the new build,
the failed host rolled back to the old one, and at no moment were more hosts unavailable than one batch
holds. The fleet's downloads go through the controller (downloads_via_controller = "auto", four SSH
hosts): each build crossed from the mirror once, however many hosts took it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import testbed
from testbed import TestHost, host_index, named_ports, run_pyinfra, triton_ports
from testbed.runner import REPO
from tests.e2e import artifacts
from tests.e2e.test_lifecycle import Poller, links, tarball_args
from tests.e2e.test_provision import assert_serves


def _settings(args: list[str]) -> dict[str, str]:
    """--data k=v pairs (tarball_args) as a settings dict."""
    return dict(value.split("=", 1) for flag, value in zip(args[::2], args[1::2], strict=True) if flag == "--data")


def fetched(mirror, since: int, part: str) -> int:
    """How many times the mirror sent a file whose path holds part (whole GETs) after request number since."""
    return sum(
        1 for method, path, status in mirror.requests()[since:] if method == "GET" and status == 200 and part in path
    )


def unavailable_together(pollers: dict[str, Poller], bucket_s: float = 0.25) -> list[set[str]]:
    """The sets of hosts whose requests failed within the same bucket_s of time, largest first."""
    buckets: dict[int, set[str]] = {}
    for name, poller in pollers.items():
        for at, ok in poller.results:
            if not ok:
                buckets.setdefault(int(at / bucket_s), set()).add(name)
    return sorted(buckets.values(), key=len, reverse=True)


def test_a_new_build_rolls_out_two_hosts_at_a_time_and_a_failed_host_rolls_back(
    two_hosts: list[TestHost], served: dict, mirror, tmp_path: Path
) -> None:
    more = [TestHost(h) for h in testbed.up(2, prefix="roll")]
    try:
        hosts = [*two_hosts, *more]
        # the numbered hosts' own ports; the two more (roll1, roll2: numbered like tb1, tb2) named slots of their own
        ports = {h.name: triton_ports(host_index(h.name)) for h in two_hosts}
        ports.update({h.name: named_ports(4 + i) for i, h in enumerate(more)})
        kept = {"provision_records_dir": str(tmp_path / "records"), "status_report_path": str(tmp_path / "s.json")}
        kept["controller_cache_dir"] = str(tmp_path / "controller-cache")  # empty: what the run fetches is counted
        kept["downloads_via_controller"] = "auto"  # four SSH hosts, no proxy: through the controller
        lock_kept = any(Path(served["venv_lock_dir"]).glob("*.lock"))
        since = len(mirror.requests())

        def inventory(path: Path, per_host: dict[str, dict]) -> Path:
            rows = "".join(
                f"    {(h.name, {**h.data, **served, **kept, **ports[h.name], **per_host[h.name]})!r},\n" for h in hosts
            )
            path.write_text(f"fleet = [\n{rows}]\n")
            return path

        inv = inventory(tmp_path / "inv.py", {h.name: {} for h in hosts})
        res = run_pyinfra(inv, "deploy/provision.py", "-y")
        assert res.returncode == 0, (res.stdout + res.stderr)[-6000:]
        assert "through the controller's cache" in res.stdout
        # the two fresh hosts (at least) took the build, and it crossed once; with a kept lock, torch too
        assert fetched(mirror, since, "/pytriton/") == 1, mirror.requests()[since:]
        if lock_kept:
            assert fetched(mirror, since, "/wheels/torch-") <= 1, mirror.requests()[since:]
        before = {h.name: links(h)["current"] for h in hosts}
        # the new build for every host, but the third (the second batch's first) gets one that cannot start
        good = _settings(
            tarball_args(mirror, artifacts.triton_tarball_variant("repacked", note="the same build, repacked"), "good")
        )
        bad = _settings(
            tarball_args(
                mirror, artifacts.triton_tarball_variant("no-libtritonserver", drop="lib/libtritonserver"), "bad"
            )
        )
        # restarts (triton_upgrade = "restart", as under systemd): a handover drops nothing, batches or not
        restart = {"triton_upgrade": "restart"}
        inv = inventory(
            tmp_path / "rollout.py", {h.name: {**(bad if i == 2 else good), **restart} for i, h in enumerate(hosts)}
        )
        since = len(mirror.requests())
        pollers = {h.name: Poller(ports[h.name]["triton_http_port"]) for h in hosts}
        for poller in pollers.values():
            poller.start()
        while any(len(p.results) < 3 for p in pollers.values()):  # every host answering before the rollout
            time.sleep(0.05)
        rollout = subprocess.run(
            [sys.executable, "-m", "run.rolling", str(inv), "--batch", "2", "--max-failures", "0"],
            cwd=REPO, capture_output=True, text=True, timeout=1500, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + Poller.TIMEOUT_S + 5
        while not all(p.results[-1][1] for p in pollers.values()) and time.monotonic() < deadline:
            time.sleep(0.05)  # each host's next answer after its own restart or rollback
        for poller in pollers.values():
            poller.stop()
        out = rollout.stdout + rollout.stderr
        assert rollout.returncode == 1, out[-6000:]
        # three hosts took the good build in two batches (two runs), one the bad: each crossed once
        assert fetched(mirror, since, "/tarballs/good.tar") == 1, mirror.requests()[since:]
        assert fetched(mirror, since, "/tarballs/bad.tar") == 1, mirror.requests()[since:]
        for h in hosts:  # nothing the controller sent is left beside what it was sent for
            assert h.ssh("find /persist -name '*.from-controller'").stdout == "", h.name
        names = [h.name for h in hosts]
        assert f"== rollout of 4 host(s): batches of 2; restarting: {', '.join(sorted(names))}" in out, out[-6000:]
        summary = out[out.index("== rollout summary") :]
        for i, name in enumerate(names):
            outcome = "FAILED at 'Triton server running, ready and proven'" if i == 2 else "OK"
            assert f"  batch {1 + i // 2}  {name}: {outcome}" in summary, summary
        # batch 1 and the failed host's batch mate run the new build; the failed host the old one, serving
        for i, h in enumerate(hosts):
            now = links(h)["current"]
            assert (now == before[h.name]) == (i == 2), (h.name, before[h.name], now)
            assert_serves(h)
        together = unavailable_together(pollers)
        batch_of = {name: i // 2 for i, name in enumerate(names)}
        assert together, "no host was unavailable: the new build was not started"  # the restarts dropped requests
        assert all(len({batch_of[n] for n in hosts_down}) == 1 for hosts_down in together), together[:5]
        print(f"\nrollout: at most {len(together[0])} host(s) unavailable together: {sorted(together[0])}")
    finally:
        for h in more:
            testbed.remove(h.name)
