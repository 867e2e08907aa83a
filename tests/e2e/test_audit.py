"""The audit on real hosts: what a fresh host lacks, that it changes nothing, bad settings."""

from __future__ import annotations

import json
from pathlib import Path

from testbed import TestHost, run_pyinfra, write_inventory

# Everything on the host's disk that an audit could touch, with sizes and times; and its packages.
SNAPSHOT = (
    "find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /run \\) -prune -o "
    "-printf '%p %s %T@ %m\\n' | sort; dpkg-query -W -f '${Package} ${Version} ${Status}\\n'"
)


def test_audit_of_a_fresh_host_names_libpython_and_changes_nothing(host: TestHost, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    inv = write_inventory(tmp_path / "inv.py", [host], audit_report_path=str(report))
    before = host.ssh(SNAPSHOT).stdout
    res = run_pyinfra(inv, "deploy/audit.py", "-y")
    after = host.ssh(SNAPSHOT).stdout
    assert res.returncode != 0, res.stdout + res.stderr
    assert "MISSING      libpython3.11.so.1.0" in res.stdout
    assert "fix: apt-get install libpython3.11" in res.stdout
    assert "no Triton server at /opt/triton/current" in res.stdout
    data = json.loads(report.read_text())
    assert data["ok"] is False
    items = {i["name"]: i for i in data["hosts"][host.name]["items"]}
    assert items["libpython3.11.so.1.0"]["status"] == "missing"
    assert items["triton server"]["status"] == "missing"
    assert data["hosts"][host.name]["decisions"]["apt_packages"] == ["libpython3.11"]
    assert before == after, "the audit changed the host"
    assert len(before.splitlines()) > 5000  # the snapshot did see the file system


def test_audit_of_two_hosts_reports_both(two_hosts: list[TestHost], tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    inv = write_inventory(tmp_path / "inv.py", two_hosts, audit_report_path=str(report))
    res = run_pyinfra(inv, "deploy/audit.py", "-y")
    assert res.returncode != 0
    assert set(json.loads(report.read_text())["hosts"]) == {h.name for h in two_hosts}


def test_bad_settings_stop_before_any_fact_is_read(host: TestHost, tmp_path: Path) -> None:
    inv = write_inventory(tmp_path / "inv.py", [host], audit_report_path=str(tmp_path / "r.json"))
    res = run_pyinfra(inv, "deploy/audit.py", "-y", "--data", "triton_http_port=http", "--data", "torch_varaint=cpu")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "triton_http_port = 'http': must be a whole number" in out
    assert "torch_varaint: unknown setting (a typo?); did you mean torch_variant?" in out
    assert "== audit of" not in out
    assert not (tmp_path / "r.json").exists()
