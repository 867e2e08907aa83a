"""The end-of-run summary: every host named once, OK / BLOCKED / FAILED with why, after the last one."""

from __future__ import annotations

from types import SimpleNamespace

from pyinfra import logger

from run.run_summary import RunSummary


class FakeState:
    def __init__(self, names: list[str]):
        self.activated_hosts = list(names)  # only its size is read

    def get_op_meta(self, op_hash: str):
        return SimpleNamespace(names={"Triton server running, ready and proven"})


def test_summary_names_each_host_once_after_the_last_disconnect(monkeypatch) -> None:
    lines: list[str] = []
    monkeypatch.setattr(logger, "info", lines.append)
    state = FakeState(["a", "b", "c"])
    s = RunSummary()
    s.blocked["c"] = "disk /: 1 GiB free, 2.29 GiB needed"
    s.operation_host_error(state, SimpleNamespace(name="b"), "op1")
    s.operation_host_error(state, SimpleNamespace(name="c"), "op2")  # the refusal step of a blocked host
    s.host_disconnect(state, SimpleNamespace(name="a"))
    s.host_disconnect(state, SimpleNamespace(name="c"))
    assert lines == []  # not before every host is done
    s.host_disconnect(state, SimpleNamespace(name="b"))
    assert lines == [
        "--> Summary:",
        "    [a] OK",
        "    [b] FAILED at 'Triton server running, ready and proven' (its output is above)",
        "    [c] BLOCKED, nothing changed: disk /: 1 GiB free, 2.29 GiB needed",
    ]


# --- the audit's last line (run/audit_verdict.py)


def test_the_audit_verdict_counts_problems_hosts_and_the_unreached() -> None:
    from run.audit_verdict import verdict_line

    assert verdict_line({"a": 5}, [], ["r.json"]) == "audit: 5 problems on 1 of 1 host; report: r.json"
    assert (
        verdict_line({"a": 1, "b": 0}, [], ["r.json", "r.json"]) == "audit: 1 problem on 1 of 2 hosts; report: r.json"
    )
    assert verdict_line({"a": 0, "b": 0}, ["c"], ["r.json"]) == (
        "audit: no problems on 2 of 3 hosts; not reached: c; report: r.json"
    )
