"""deploy/status.py's pure part: facts in (real outputs, from the fact fixtures), status out."""

from __future__ import annotations

import json
from pathlib import Path

from config.layout import Layout
from config.settings import load
from facts.server import ServerState
from reports import status
from reports import status_table as status_report

FACTS = Path(__file__).parents[1] / "fixtures" / "facts"
SERVING = json.loads((FACTS / "server.ServerStatus" / "serving-three-models.json").read_text())["fact"]
MODELS = [
    {"name": "clf", "source": f"path:{Path(__file__).parent}", "task": "text-classification"},  # any directory
    {"name": "clf_hub", "source": "hub:tiny/clf@main", "task": "text-classification"},
]


def facts(server: dict, systemd: bool, extra: dict | None) -> dict:
    return {
        "triton": {
            "real_home": "/opt/triton/versions/2.51.0-21f063ff93bb-py3.11",
            "version": "2.51.0",
            "manifest": {"source": "pytriton", "sha256": "21f063ff93bb" + "0" * 52},
        },
        "links": {"/opt/triton/venv": {"kind": "link", "target": "/opt/triton/venv.versions/03f6e453555b-py3.11"}},
        "server": {**ServerState.default(), **server},
        "status": extra,
        "venv": {"python": "3.11.2", "packages": {"torch": "2.13.0+cpu"}},
        "nvidia": None,
        "ports": {18100: [{"pid": 810, "process": "tritonserver", "address": "127.0.0.1"}]},
        "systemd": systemd,
    }


def test_a_serving_host() -> None:
    s = load({"models": MODELS, "triton_http_port": 18100})
    st = status.assemble(
        s, Layout(s), facts({"pid": 810, "ready": True, "config_hash": "ab"}, False, SERVING), {"clf_hub": "0123"}, None
    )
    assert (
        st["ok"]
        and st["server"]["started_by"] == "detached (pid file)"
        and st["server"]["uptime_s"] == SERVING["uptime_s"] > 0
    )
    assert [(m["name"], m["state"], m["resolved"]) for m in st["models"]] == [
        ("clf", "READY", ""),
        ("clf_hub", "READY", "0123"),
        ("smoke", "READY", ""),
    ]
    assert st["venv"]["torch"] == {"version": "2.13.0", "variant": "cpu"}
    assert st["listen"]["bound"]["http"] == ["127.0.0.1"] and st["log_tail"] == []
    text = status_report.table("tb1", st)
    assert text.splitlines()[0] == "== status of tb1: OK"
    assert "  model clf_hub  READY; hub:tiny/clf@main -> 0123" in text


def test_a_model_in_an_environment_of_its_own_is_shown_with_it() -> None:
    s = load({"models": MODELS, "triton_http_port": 18100})
    serving = facts({"pid": 810, "ready": True, "config_hash": "ab"}, False, SERVING)
    own = "/opt/triton/venv.model-envs/clf-1a2b3c4d5e6f-py3.11"
    st = status.assemble(s, Layout(s), serving, {}, None, {"clf": own, "clf_hub": ""})
    assert [m["environment"] for m in st["models"]] == [own, "", ""]
    rows = [line for line in status_report.table("tb1", st).splitlines() if line.startswith("  model ")]
    assert rows[0].endswith(f"; in its own environment {own}") and "environment" not in rows[1] + rows[2]


def test_after_a_handover_the_metrics_port_shown_is_the_one_the_server_holds() -> None:
    s = load({"models": MODELS, "triton_http_port": 18100, "triton_metrics_port": 18102})
    found = facts({"pid": 810, "ready": True, "config_hash": "ab", "metrics_port": 18103}, False, SERVING)
    found["ports"][18103] = [{"pid": 810, "process": "tritonserver", "address": "127.0.0.1"}]
    st = status.assemble(s, Layout(s), found, {}, None)
    assert st["listen"]["ports"]["metrics"] == 18103 and st["listen"]["bound"]["metrics"] == ["127.0.0.1"]
    assert "metrics 18103 (bound 127.0.0.1)" in status_report.table("tb1", st)


def test_a_systemd_host_whose_enabled_unit_is_down_fails_with_the_log() -> None:
    s = load({})
    down = {"pid": None, "unit_enabled": True, "config_hash": None}
    journal = {**SERVING, "uptime_s": None, "log": "journalctl -u tritonserver.service"}
    st = status.assemble(s, Layout(s), facts(down, True, journal), {}, None)
    assert not st["ok"] and st["problem"].startswith("the server should run and does not")
    assert st["problem"].endswith("; its log: journalctl -u tritonserver.service")  # where systemd keeps it
    assert st["log_tail"] == SERVING["log_tail"] and st["server"]["started_by"] is None
    assert "NOT RUNNING (it should)" in status_report.table("vm1", st)


def test_a_server_stopped_on_purpose_is_not_a_problem() -> None:
    s = load({})
    stopped = {"pid": None, "unit_enabled": False, "config_hash": None}  # deploy/stop.py disabled it
    for systemd in (True, False):
        st = status.assemble(s, Layout(s), facts(stopped, systemd, None), {}, None)
        assert st["ok"] and st["log_tail"] == []
        assert "  server       stopped" in status_report.table("h", st)


def test_the_log_lines_shown_have_their_escape_sequences_escaped() -> None:
    """The server's log is written by the server's user: a line that would clear the operator's screen is
    shown with its control characters as \\xNN."""
    s = load({})
    down = {"pid": None, "unit_enabled": True, "config_hash": None}
    hostile = {**SERVING, "uptime_s": None, "log_tail": ["E1202 failed\x1b[2J\x1b[Hall is well"]}
    st = status.assemble(s, Layout(s), facts(down, True, hostile), {}, None)
    assert st["log_tail"] == ["E1202 failed\\x1b[2J\\x1b[Hall is well"]
    assert "\x1b" not in status_report.table("vm1", st)


def test_behind_the_front_haproxy_holds_the_ports_and_the_server_its_slots() -> None:
    """The front's ports are HAProxy's (its pid from the FrontState fixture), the server listens on the slot
    the front hands requests to: both are shown. A front that died is not shown."""
    s = load({"models": MODELS, "triton_http_port": 18100, "triton_upgrade": "front"})
    front = json.loads((FACTS / "front.FrontState" / "running.json").read_text())["fact"]
    found = facts({"pid": 810, "ready": True, "config_hash": "ab"}, True, SERVING)
    found["front"] = {**front, "slot": "b"}
    haproxy = {"pid": front["pid"], "process": "haproxy", "address": "127.0.0.1"}
    found["ports"] = {18100: [haproxy], 18120: [{"pid": 810, "process": "tritonserver", "address": "127.0.0.1"}]}
    st = status.assemble(s, Layout(s), found, {}, None)
    assert st["ok"] and st["listen"]["bound"]["http"] == ["127.0.0.1"]
    assert st["front"]["slot"] == "b" and st["front"]["bound"] == {"http": ["127.0.0.1"], "grpc": [], "metrics": []}
    text = status_report.table("vm1", st)
    row = f"HAProxy pid {front['pid']} on those ports, to the server on slot b: http 18120 (bound 127.0.0.1), grpc"
    assert [line.split(None, 1) for line in text.splitlines() if line.startswith("  front ")] == [
        ["front", row + " 8021, metrics 8022"]
    ]
    dead = json.loads((FACTS / "front.FrontState" / "dead-pid-slot-b.json").read_text())["fact"]
    st = status.assemble(s, Layout(s), {**found, "front": dead}, {}, None)
    assert st["front"] is None and st["listen"]["bound"]["http"] == []  # HAProxy's pid is no longer known
    assert not [line for line in status_report.table("vm1", st).splitlines() if line.startswith("  front ")]
