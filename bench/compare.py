"""Ours against Ansible (ansible-core from PyPI) doing the same job on the same test host, in the
same runs: cold (fresh host, empty /persist), a no-op re-run, and after a reset (fresh host,
/persist kept). The playbook is bench/ansible/triton.yml. Prints median tables and the ratios
within each run; raw figures go to bench/results/compare.json.

    .venv/bin/pip install -r requirements-bench.txt
    .venv/bin/python -m bench.compare [--runs 3]

Needs root (test hosts). Triton and torch come from the loopback mirror, the rest from PyPI and
Debian, for both tools alike.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import testbed
from bench.common import REPO, inventory, median_table, pyinfra, ratio, save
from testbed import TestHost, client_key, host_index, known_hosts, triton_ports
from testbed.mirror import Mirror
from tests.e2e.artifacts import PYTRITON, mirror_settings

PLAYBOOK = REPO / "bench" / "ansible" / "triton.yml"


def ansible(host: TestHost, settings: dict, tmp: Path) -> tuple[float, dict]:
    """Run the playbook against the host over SSH; (wall seconds, its recap: ok, changed ...)."""
    ports = triton_ports(host_index(host.name))
    extra = {
        "pytriton_url": settings["triton_pytriton_url"],
        "pytriton_sha256": PYTRITON.sha256,
        "find_links": settings["pip_find_links"],
        "http_port": ports["triton_http_port"],
        "grpc_port": ports["triton_grpc_port"],
        "metrics_port": ports["triton_metrics_port"],
    }
    (tmp / "vars.json").write_text(json.dumps(extra))
    inv = tmp / "ansible-inventory.ini"
    ssh_args = f"-o UserKnownHostsFile={known_hosts()} -o StrictHostKeyChecking=yes"
    inv.write_text(
        f"{host.name} ansible_host=127.0.0.1 ansible_port={host.host.ssh_port} ansible_user=root "
        f"ansible_ssh_private_key_file={client_key()} ansible_ssh_common_args='{ssh_args}' "
        "ansible_python_interpreter=/usr/bin/python3\n"
    )
    argv = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(inv), "-e", f"@{tmp / 'vars.json'}"]
    t0 = time.monotonic()
    res = subprocess.run([*argv, str(PLAYBOOK)], capture_output=True, text=True, cwd=REPO)
    seconds = time.monotonic() - t0
    if res.returncode != 0:
        raise RuntimeError(f"ansible-playbook failed ({res.returncode}):\n{res.stdout[-4000:]}\n{res.stderr[-2000:]}")
    recap = res.stdout.rsplit("PLAY RECAP", 1)[-1]
    counts = {k: int(v) for k, v in (part.split("=") for part in recap.split() if "=" in part)}
    return seconds, counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    cases = ("cold", "no-op", "after a reset")
    rows: dict[str, list[float]] = {f"{tool} {case}": [] for tool in ("ours", "Ansible") for case in cases}
    changed: list[int] = []
    with tempfile.TemporaryDirectory() as tmp_dir, Mirror(Path(tmp_dir) / "files") as mirror:
        tmp = Path(tmp_dir)
        settings = mirror_settings(mirror)
        host = TestHost(testbed.up(1, prefix="cmp")[0])
        try:
            inv = inventory(tmp / "inv.py", [host], settings, tmp)
            for run in range(1, args.runs + 1):
                for tool in ("ours", "Ansible"):
                    host.reset()
                    host.ssh("rm -rf /persist/* /persist/.[!.]*")
                    for case in cases:
                        if case == "after a reset":
                            host.reset()
                        if tool == "ours":
                            seconds, _ = pyinfra(inv, "deploy/provision.py")
                        else:
                            seconds, recap = ansible(host, settings, tmp)
                            if case == "no-op":
                                changed.append(recap.get("changed", -1))
                        rows[f"{tool} {case}"].append(seconds)
                print(f"run {run}: " + ", ".join(f"{k} {v[-1]:.1f}s" for k, v in rows.items()), file=sys.stderr)
        finally:
            testbed.down()
    print(median_table("ours vs Ansible, one host", rows))
    print("\n| ratio, ours / Ansible (within each run, median) | value |\n| --- | ---: |")
    for case in cases:
        print(f"| {case} | {ratio(rows[f'ours {case}'], rows[f'Ansible {case}']):.0%} |")
    print(f"\nAnsible's no-op runs reported changed={changed} (0: idempotent)")
    path = save("compare", {"rows": rows, "ansible_noop_changed": changed})
    print(f"\nraw figures: {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
