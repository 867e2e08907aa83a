"""The rollout over a fleet (run/rolling.py): batches like Ansible's serial, a stop once more hosts failed
than allowed (the rest named, not reached), and the plan and summary lines it reads, as runs print them."""

from __future__ import annotations

import pytest

from run import rolling

PLANS = """--> Preparing operation files...
== plan for web1 (nothing is changed before this)
  python   3.11 at /usr/bin/python3.11 (the host's); the python backend stub for 3.11
  triton   2.51.0 sha256 9a3b1c2d4e5f..., cached, sha256 verified
  server   will restart (pid 4242): what it runs changed
== plan for web2 (nothing is changed before this)
  server   keeps running (pid 77); models: clf reloaded
== plan for web3 (nothing is changed before this)
  server   will start
== plan for web4 (nothing is changed before this)
  server   will hand over to a new server beside it (pid 91): what it runs changed; no request fails
"""
SUMMARY = """--> Summary:
    [web1] OK
    [web2] FAILED at 'Triton server running, ready and proven' (its output is above)
    [web3] BLOCKED, nothing changed: glibc 2.31: too old for this build (fix: ...)
"""


@pytest.mark.parametrize(
    ("batch", "cut"),
    [
        ("", [["a", "b", "c", "d", "e"]]),
        ("2", [["a", "b"], ["c", "d"], ["e"]]),
        ("40%", [["a", "b"], ["c", "d"], ["e"]]),
        ("10%", [["a"], ["b"], ["c"], ["d"], ["e"]]),  # a share below one host is one host
        ("9", [["a", "b", "c", "d", "e"]]),
    ],
)
def test_batches_keep_the_inventory_order(batch: str, cut: list[list[str]]) -> None:
    assert rolling.batches(["a", "b", "c", "d", "e"], batch) == cut


def test_the_plan_says_which_hosts_start_or_restart_and_the_summary_each_outcome() -> None:
    assert rolling.restarting(PLANS) == {"web1": "will restart (pid 4242): what it runs changed", "web3": "will start"}
    assert rolling.handing_over(PLANS) == {
        "web4": "will hand over to a new server beside it (pid 91): what it runs changed; no request fails"
    }
    assert rolling.outcomes(SUMMARY) == {
        "web1": "OK",
        "web2": "FAILED at 'Triton server running, ready and proven' (its output is above)",
        "web3": "BLOCKED, nothing changed: glibc 2.31: too old for this build (fix: ...)",
    }


def test_a_batch_with_more_failures_than_allowed_stops_the_rollout_naming_the_hosts_not_reached() -> None:
    ran: list[list[str]] = []

    def run_batch(members: list[str]) -> dict[str, str]:
        ran.append(members)
        return {host: "FAILED at 'proof'" if host == "c" else "OK" for host in members}

    rollout = rolling.roll(["a", "b", "c", "d", "e", "f"], "2", "0", run_batch)
    assert ran == [["a", "b"], ["c", "d"]]
    assert rollout.failed == ["c"] and rollout.not_reached == ["e", "f"]
    assert "stopped after batch 2: 1 failed host(s), more than the 0 allowed" in rollout.stopped
    ran.clear()
    tolerant = rolling.roll(["a", "b", "c", "d", "e", "f"], "2", "1", run_batch)
    assert ran == [["a", "b"], ["c", "d"], ["e", "f"]] and tolerant.not_reached == [] and not tolerant.stopped


def test_a_host_pyinfra_never_reached_counts_as_failed() -> None:
    rollout = rolling.roll(["a", "b"], "", "0", lambda members: {"a": "OK"})
    assert rollout.failed == ["b"] and rollout.batches == [{"a": "OK", "b": "FAILED: no outcome (not reached)"}]
