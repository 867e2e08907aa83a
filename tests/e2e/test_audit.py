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
    assert items["server user"]["status"] == "missing"  # not made yet: provision makes it
    # its last line counts what it found, and pyinfra adds no error of its own (no operation failed)
    problems = sum(1 for i in items.values() if i["status"] != "ok")
    assert res.stderr.strip().splitlines()[-1].strip() == f"audit: {problems} problems on 1 of 1 host; report: {report}"
    assert "No hosts remaining" not in res.stderr and "Error:" not in res.stdout + res.stderr, res.stderr[-2000:]
    assert before == after, "the audit changed the host"
    assert len(before.splitlines()) > 5000  # the snapshot did see the file system


def test_audit_of_two_hosts_reports_both(two_hosts: list[TestHost], tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    inv = write_inventory(tmp_path / "inv.py", two_hosts, audit_report_path=str(report))
    res = run_pyinfra(inv, "deploy/audit.py", "-y")
    assert res.returncode != 0
    hosts = json.loads(report.read_text())["hosts"]
    assert set(hosts) == {h.name for h in two_hosts}
    problems = sum(1 for h in hosts.values() for i in h["items"] if i["status"] != "ok")
    assert (
        res.stderr.strip().splitlines()[-1].strip() == f"audit: {problems} problems on 2 of 2 hosts; report: {report}"
    )


def test_bad_settings_stop_before_any_fact_is_read(host: TestHost, tmp_path: Path) -> None:
    inv = write_inventory(tmp_path / "inv.py", [host], audit_report_path=str(tmp_path / "r.json"))
    res = run_pyinfra(inv, "deploy/audit.py", "-y", "--data", "triton_http_port=http", "--data", "torch_varaint=cpu")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "triton_http_port = 'http': must be a whole number" in out
    assert "torch_varaint: unknown setting (a typo?); did you mean torch_variant?" in out
    assert "--> pyinfra error" in out and "Traceback" not in out  # one block, as pyinfra shows its own errors
    assert "== audit of" not in out
    assert not (tmp_path / "r.json").exists()


def test_a_notebook_whose_persist_dir_a_reset_wipes_is_told_so_first(
    host: TestHost, served: dict, tmp_path: Path
) -> None:
    """A notebook-like host (Colab's /content, sshd as PID 1) with persist_dir on its root file system (the
    overlay `testbed reset` wipes): the audit's first row and the plan's first line name it and the Drive
    path to use; the run may go on. A misspelt setting in the same shape stops the run unchanged."""
    host.ssh("mkdir -p /content")
    report = tmp_path / "report.json"
    settings = {**served, "persist_dir": "/var/lib/triton-cache"}
    inv = write_inventory(tmp_path / "inv.py", [host], settings, own_ports=True, audit_report_path=str(report))
    res = run_pyinfra(inv, "deploy/audit.py", "-y")
    items = json.loads(report.read_text())["hosts"][host.name]["items"]
    assert items[0]["name"] == "persistent path" and items[0]["status"] == "incompatible", items[0]
    assert "/var/lib/triton-cache is on the disk a notebook reset wipes (file system /)" in items[0]["detail"]
    assert "persist_dir = /content/drive/MyDrive/triton" in items[0]["fix"]
    before = host.ssh(SNAPSHOT).stdout
    res = run_pyinfra(inv, "deploy/provision.py", "-y", "--dry")
    out = res.stdout + res.stderr
    plan = out.split("== plan for", 1)[1].splitlines()
    assert plan[1].startswith("  FIX FIRST  persistent path: /var/lib/triton-cache is on the disk"), plan[:3]
    misspelt = run_pyinfra(inv, "deploy/provision.py", "-y", "--data", "persist_dri=/content/drive/MyDrive/t")
    assert misspelt.returncode != 0
    assert "persist_dri: unknown setting (a typo?); did you mean persist_dir?" in misspelt.stdout + misspelt.stderr
    assert host.ssh(SNAPSHOT).stdout == before
