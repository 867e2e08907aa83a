"""The testbed itself: hosts reached over real SSH, notebook-style reset, clean teardown."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from testbed import REPO, TestHost, run_pyinfra, write_inventory
from testbed.ports import bed_ports, worker_number


def test_pyinfra_reads_a_real_fact_over_ssh(host: TestHost, tmp_path: Path) -> None:
    inv = write_inventory(tmp_path / "inv.py", [host])
    res = run_pyinfra(inv, "fact", "server.LinuxDistribution", check=True)
    out = res.stderr  # pyinfra prints facts as JSON on stderr, after its progress lines
    facts = json.loads(out[out.index("\n{") : out.rindex("}") + 1])
    assert facts[host.name]["name"] == "Debian"
    assert facts[host.name]["major"] == 12


def test_reset_keeps_persist_and_drops_the_rest(host: TestHost) -> None:
    host.ssh(
        "echo kept > /persist/marker && echo dropped > /root/marker && (setsid sleep 600 </dev/null >/dev/null 2>&1 &)"
    )
    assert "sleep" in host.ssh("ps -eo comm").stdout
    host.reset()
    assert host.ssh("cat /persist/marker").stdout == "kept\n"
    assert host.ssh("test -e /root/marker", check=False).returncode == 1
    assert "sleep" not in host.ssh("ps -eo comm").stdout  # the reset ended the old processes
    host.ssh("rm /persist/marker")  # the host's /persist as the other modules on this worker expect it


def test_a_throttled_persist_moves_at_its_rate_and_keeps_its_files(host: TestHost) -> None:
    """testbed throttle: /persist served through the FUSE limit (15 MB/s here), its files kept; a
    file opened again is read through the limit again (no cache across opens, as after a reset)."""
    from testbed.hosts import throttle

    host.ssh("head -c 30000000 /dev/urandom > /persist/slow && sha256sum /persist/slow > /persist/slow.sum")
    try:
        throttle(host.name, 15)
        assert "testbed-throttle on /persist type fuse" in host.ssh("mount").stdout
        for _ in range(2):
            t0 = time.monotonic()
            host.ssh("sha256sum -c --quiet /persist/slow.sum")  # fails where a byte differs
            assert time.monotonic() - t0 >= 1.8  # 30 MB at 15 MB/s: 2 s
    finally:
        throttle(host.name, 0)
    assert "on /persist type fuse" not in host.ssh("mount").stdout
    host.ssh("sha256sum -c --quiet /persist/slow.sum && rm /persist/slow /persist/slow.sum")


def test_host_sees_only_its_own_processes_and_no_systemd(host: TestHost) -> None:
    comms = host.ssh("ps -eo pid,comm --no-headers").stdout.split("\n")
    assert comms[0].split() == ["1", "sshd"]


def test_changed_host_key_is_refused(host: TestHost, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    wrong = tmp_path / "wrong_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong)], check=True)
    kind, key = (Path(str(wrong) + ".pub")).read_text().split()[:2]
    known.write_text(f"[127.0.0.1]:{host.data['ssh_port']} {kind} {key}\n")
    inv = write_inventory(tmp_path / "inv.py", [host], ssh_known_hosts_file=str(known))
    res = run_pyinfra(inv, "fact", "server.Os")
    assert res.returncode != 0
    assert "Linux" not in res.stdout + res.stderr


def test_mirror_serves_a_host_and_logs_it(host: TestHost, mirror, tmp_path: Path) -> None:
    src = tmp_path / "artifact.bin"
    src.write_bytes(os.urandom(4096))
    url, digest = mirror.place(src, "t/artifact.bin")
    fetch = f"import urllib.request as u, hashlib; print(hashlib.sha256(u.urlopen('{url}').read()).hexdigest())"
    cmd = f'python3 -c "{fetch}"'
    assert host.ssh(cmd).stdout.strip() == digest
    assert ("GET", "/t/artifact.bin", 200) in mirror.requests()


def _testbed_cli(state: Path, *args: str, last_port: int = 0, check: bool = True) -> subprocess.CompletedProcess:
    # a test bed beside this worker's, with ports of its own (testbed/ports.py): sharing the worker's, its
    # host could take the port of one of the worker's hosts while that one is down. last_port: a shorter range
    nested = bed_ports(worker_number(os.environ.get("PYTEST_XDIST_WORKER", "")), nested=True)
    env = {**os.environ, "TRITON_TESTBED_DIR": str(state), **nested.env()}
    if last_port:
        env["TRITON_TESTBED_LAST_SSH_PORT"] = str(last_port)
    return subprocess.run(
        [sys.executable, "-m", "testbed", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=check,
        timeout=600,
    )


def test_an_up_that_runs_out_of_ports_leaves_no_host_behind(tmp_path: Path) -> None:
    """Three hosts asked of a bed with two SSH ports: the up fails naming the range, and the two it booted
    are stopped (they were never recorded: `down` could not have found them, their sshd kept the ports)."""
    state = tmp_path / "tb"
    first = bed_ports(worker_number(os.environ.get("PYTEST_XDIST_WORKER", "")), nested=True).ssh_first
    res = _testbed_cli(state, "up", "--hosts", "3", last_port=first + 1, check=False)
    try:
        assert res.returncode != 0 and f"no free SSH port in this test bed's range {first}..{first + 1}" in res.stderr
        recorded = state / "state.json"  # the failed up recorded no host (nor made the file, for a new bed)
        assert not recorded.exists() or json.loads(recorded.read_text())["hosts"] == {}
        for port in (first, first + 1):  # nothing listens there any more
            with socket.socket() as sock:
                assert sock.connect_ex(("127.0.0.1", port)) != 0, port
    finally:
        _testbed_cli(state, "down")


def test_up_reset_down_leave_nothing_behind(tmp_path: Path) -> None:
    state = tmp_path / "tb"
    inv = Path(_testbed_cli(state, "up", "--hosts", "1").stdout.strip())
    assert inv.exists()
    st = json.loads((state / "state.json").read_text())
    pid = st["hosts"]["tb1"]["pid"]
    assert Path(f"/proc/{pid}").exists()
    # what the hosts write lands on the bed's own disk: an ext4 image on a loop device (testbed/disk.py)
    fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE", str(state / "hosts")], capture_output=True, text=True)
    fstype, device = fs.stdout.split()
    back = subprocess.run(["losetup", "-n", "-O", "BACK-FILE", device], capture_output=True, text=True)
    assert fstype == "ext4" and back.stdout.strip() == str(state / "hosts.img"), (fs.stdout, back.stdout)
    _testbed_cli(state, "reset", "tb1")
    pid2 = json.loads((state / "state.json").read_text())["hosts"]["tb1"]["pid"]
    _testbed_cli(state, "down")
    _testbed_cli(state, "down")  # safe twice
    mounts = Path("/proc/self/mounts").read_text()
    assert str(state) not in mounts
    assert not (state / "hosts").exists() and not (state / "hosts.img").exists()
    for p in (pid, pid2):
        stat = Path(f"/proc/{p}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


def test_up_fresh_takes_down_what_a_killed_run_left(tmp_path: Path) -> None:
    """A run killed before its end leaves its hosts running and recorded; the next session's `up --fresh`
    stops them and starts its own under the names and ports the tests expect (tb1 on the bed's first)."""
    state = tmp_path / "tb"
    _testbed_cli(state, "up", "--hosts", "1", "--prefix", "left")
    left = json.loads((state / "state.json").read_text())["hosts"]["left1"]
    _testbed_cli(state, "up", "--hosts", "1")  # a killed run's own tb1 too
    try:
        _testbed_cli(state, "up", "--hosts", "2", "--fresh")
        hosts = json.loads((state / "state.json").read_text())["hosts"]
        first = bed_ports(worker_number(os.environ.get("PYTEST_XDIST_WORKER", "")), nested=True).ssh_first
        assert {name: h["ssh_port"] for name, h in hosts.items()} == {"tb1": first, "tb2": first + 1}
        stat = Path(f"/proc/{left['pid']}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    finally:
        _testbed_cli(state, "down")


def test_a_systemd_host_boots_reboots_resets_and_goes_away_cleanly(tmp_path: Path) -> None:
    """`up --init systemd --user ops`: systemd is PID 1 and reaches `running`; the user has sudo;
    `restart` keeps the disk and empties /run; `reset` drops the disk but /persist; `down` leaves no
    mount and no cgroup."""
    import testbed

    state = tmp_path / "tb"
    _testbed_cli(state, "up", "--init", "systemd", "--user", "ops", "--prefix", "sd")
    host = testbed.Host(**json.loads((state / "state.json").read_text())["hosts"]["sd1"])
    key, known = state / "id_ed25519", state / "known_hosts"

    def ssh(user: str, command: str) -> str:
        argv = ["ssh", "-i", str(key), "-p", str(host.ssh_port), "-o", f"UserKnownHostsFile={known}"]
        argv += ["-o", "BatchMode=yes", f"{user}@127.0.0.1", command]
        return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout.strip()

    assert ssh("root", "cat /proc/1/comm; systemctl is-system-running --wait") == "systemd\nrunning"
    assert ssh("ops", "id -un; sudo -n id -un") == "ops\nroot"
    ssh("root", "echo disk > /root/marker; echo kept > /persist/marker; touch /run/marker")
    _testbed_cli(state, "restart", "sd1")
    assert ssh("root", "cat /root/marker; test -e /run/marker || echo no-run-marker") == "disk\nno-run-marker"
    _testbed_cli(state, "reset", "sd1")
    assert ssh("root", "cat /persist/marker; test -e /root/marker || echo reset") == "kept\nreset"
    assert ssh("ops", "sudo -n systemctl is-system-running --wait") == "running"
    _testbed_cli(state, "down")
    assert str(state) not in Path("/proc/self/mounts").read_text()
    assert not list(Path("/sys/fs/cgroup").glob("**/testbed/*-sd1"))  # the host's cgroups are gone
