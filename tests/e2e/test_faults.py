"""Faults on real hosts: a removed library, a full disk, a download cut short, an interrupted run
(controller or host side), a stale pid file, and a secret token. Nothing that worked before may be lost."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tasks.venv.plan import venv_name
from testbed import REPO, TestHost, op_results, run_pyinfra, triton_ports, write_inventory
from tests.e2e import artifacts
from tests.e2e.test_audit import SNAPSHOT
from tests.e2e.test_provision import assert_serves

TOKEN = "hf_TESTSECRETtoken0123456789abcdef"


@pytest.fixture(scope="module")
def provisioned(testbed_hosts: list[TestHost], served: dict, tmp_path_factory) -> dict:
    host = testbed_hosts[0]
    host.reset()
    path = tmp_path_factory.mktemp("faults")
    inv = write_inventory(
        path / "inv.py",
        [host],
        {**served, "hf_token": TOKEN},
        own_ports=True,
        audit_report_path=str(path / "audit.json"),
    )
    res = run_pyinfra(inv, "deploy/provision.py", "-y", "-vvv")
    assert res.returncode == 0, (res.stdout + res.stderr)[-6000:]
    return {"host": host, "inv": inv, "dir": path, "output": res.stdout + res.stderr}


def test_removed_libpython_is_named_by_audit_and_restored_by_provision(provisioned: dict) -> None:
    host, inv = provisioned["host"], provisioned["inv"]
    host.ssh("dpkg -r --force-depends libpython3.11 >/dev/null 2>&1")
    res = run_pyinfra(inv, "deploy/audit.py", "-y")
    assert res.returncode != 0
    assert "MISSING      libpython3.11.so.1.0" in res.stdout
    assert "fix: apt-get install libpython3.11" in res.stdout
    assert "triton_python_backend_stub cannot load it" in res.stdout  # ldd of the installed stub
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    assert res.returncode == 0, res.stderr[-3000:]
    assert op_results(res.stderr)["apt runtime libraries"]["success"] == 1
    assert run_pyinfra(inv, "deploy/audit.py", "-y").returncode == 0
    assert_serves(host)


def test_stale_pid_file_pointing_at_another_process_kills_nothing(provisioned: dict) -> None:
    host, inv = provisioned["host"], provisioned["inv"]
    host.ssh("kill -9 $(cat /opt/triton/run/tritonserver.pid)")
    # another process, detached, writes its own pid where the server's was (renamed into place: whole)
    pid_file = "/opt/triton/run/tritonserver.pid"
    host.ssh(
        f"rm -f {pid_file}; (setsid sh -c 'echo $$ > {pid_file}.new && mv {pid_file}.new {pid_file} && exec sleep 600'"
        f" </dev/null >/dev/null 2>&1 &); timeout 10 sh -c 'until [ -s {pid_file} ]; do sleep 0.05; done'"
    )
    sleeper = host.ssh("cat /opt/triton/run/tritonserver.pid").stdout.strip()
    res = run_pyinfra(inv, "deploy/serve.py", "-y")
    assert res.returncode == 0, res.stderr[-3000:]
    assert host.ssh(f"test -d /proc/{sleeper}", check=False).returncode == 0  # the other process lives
    assert host.ssh("cat /opt/triton/run/tritonserver.pid").stdout.strip() != sleeper
    assert_serves(host)
    host.ssh(f"kill {sleeper}")


def test_download_cut_mid_transfer_is_an_error_and_the_old_install_still_serves(provisioned: dict, mirror) -> None:
    """The connection closes half-way through the Triton tarball; the next run, with the network back, installs it."""
    host, inv = provisioned["host"], provisioned["inv"]
    link = host.ssh("readlink /opt/triton/current").stdout
    url, sha = mirror.place(artifacts.triton_tarball(), "tarballs/tritonserver.tar")
    size = artifacts.triton_tarball().stat().st_size
    cut = mirror.cut_url("tarballs/tritonserver.tar", size // 2)
    tarball = ["--data", "triton_source=tarball", "--data", f"triton_tarball_sha256={sha}"]
    tarball += ["--data", "triton_tarball_strip_components=1"]
    res = run_pyinfra(inv, "deploy/provision.py", "-y", *tarball, "--data", f"triton_tarball_url={cut}")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert f"download of {cut} failed after {size // 2} of {size} bytes" in out, out[-3000:]
    assert "the partial file was removed and nothing was installed" in out
    left = host.ssh("ls -a /persist/downloads").stdout.split()
    assert [f for f in left if f.startswith("triton-")] == [], left  # no .part, nothing half-written
    assert host.ssh("readlink /opt/triton/current").stdout == link
    assert_serves(host)
    res = run_pyinfra(inv, "deploy/provision.py", "-y", *tarball, "--data", f"triton_tarball_url={url}")
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert host.ssh("readlink /opt/triton/current").stdout != link
    assert_serves(host)


def test_full_disk_at_the_install_path_is_refused_before_any_change(provisioned: dict, tmp_path: Path) -> None:
    host = provisioned["host"]
    inv = write_inventory(
        tmp_path / "inv.py",
        [host],
        _settings(provisioned),
        own_ports=True,
        triton_home="/opt/small",
        venv_dir="/opt/small/venv",
    )
    host.ssh("mkdir -p /opt/small && mount -t tmpfs -o size=64m tmpfs /opt/small")
    try:
        before = host.ssh(SNAPSHOT).stdout
        res = run_pyinfra(inv, "deploy/provision.py", "-y")
        out = res.stdout + res.stderr
        assert res.returncode != 0
        assert "refusing to provision tb1, nothing was changed" in out
        assert "disk /opt/small: 64 MiB free, 2.29 GiB needed for Triton, venv (cpu torch)" in out
        assert host.ssh(SNAPSHOT).stdout == before
    finally:
        host.ssh("umount /opt/small; rmdir /opt/small")


def _provision_until_pip_installs(host: TestHost, inv: Path) -> subprocess.Popen:
    """A fresh host, no venv snapshot kept (the install is the long step then), a provision run
    started and followed until pip is seen writing torch into the venv (else the test fails)."""
    host.reset()
    host.ssh("rm -rf /persist/venv-snapshots")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyinfra", str(inv), "deploy/provision.py", "-y"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    for line in proc.stdout:
        if "Starting operation: venv packages" in line:
            break
    else:
        pytest.fail(f"the provision ended ({proc.wait()}) before it installed the venv's packages")
    # the installer is mid-way when its process runs, the venv's marker stands, and torch is being written:
    # into the venv (pip), or unpacked into uv's cache beside it, which uv links into the venv only at its
    # end (a second or so: waiting for torch in the venv itself let uv finish before the kill, now and then)
    versions = "/opt/triton/venv.versions"  # the new venv, made beside
    writing = f"ls -d {versions}/*/lib/python3.11/site-packages/torch {versions}/*.uv.tmp"
    installing = (
        f"pgrep -f '[p]ip install' >/dev/null && ls {versions}/*/.pip-install-incomplete >/dev/null 2>&1"
        f' && [ -n "$({writing} 2>/dev/null)" ]'
    )
    deadline = time.monotonic() + 300
    while host.ssh(installing, check=False).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("pip was never seen installing torch into the venv")
        time.sleep(0.2)
    return proc


def test_run_killed_mid_install_completes_next_time_then_changes_nothing(provisioned: dict) -> None:
    """The controller dies while the installer (uv or pip) fills the venv (the SSH session goes with it)."""
    host, inv = provisioned["host"], provisioned["inv"]
    proc = _provision_until_pip_installs(host, inv)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    host.ssh("pkill -f '[p]ip install' || true")  # what the dropped session left, as sshd would
    cut = "ls /opt/triton/venv.versions/*/.pip-install-incomplete"
    assert host.ssh(cut, check=False).returncode == 0  # cut mid-way
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert_serves(host)
    again = op_results(run_pyinfra(inv, "deploy/provision.py", "-y").stderr)
    assert all(r["success"] == 0 for n, r in again.items() if n != "Grand total"), again


def test_host_sshd_session_killed_mid_install_completes_next_time_then_changes_nothing(provisioned: dict) -> None:
    """The host's end drops: its sshd session serving the run is killed while the installer writes torch.
    The pip it ran lives on as an orphan; the next run waits for it (venv lock) rather than racing it."""
    host, inv = provisioned["host"], provisioned["inv"]
    proc = _provision_until_pip_installs(host, inv)
    # Walk up from the pip process to the sshd that serves its session, and kill that sshd.
    killed = host.ssh(
        'p=$(pgrep -f \'[p]ip install\' | head -n1); while [ -n "$p" ] && [ "$p" -gt 1 ]; do'
        ' if [ "$(cat /proc/$p/comm)" = sshd ]; then kill -9 "$p"; echo "$p"; break; fi;'
        " p=$(awk '{print $4}' /proc/$p/stat); done"
    ).stdout.strip()
    assert killed, "no install was running under an sshd session"
    rest, _ = proc.communicate(timeout=300)
    assert proc.returncode != 0, rest[-2000:]
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert_serves(host)
    again = op_results(run_pyinfra(inv, "deploy/provision.py", "-y").stderr)
    assert all(r["success"] == 0 for n, r in again.items() if n != "Grand total"), again
    assert host.ssh("pgrep -f '[p]ip install' || true").stdout.strip() == ""


def test_altered_venv_snapshot_is_removed_and_the_next_run_installs_with_pip(provisioned: dict) -> None:
    """A snapshot changed on the persistent path (a shared drive, a copy gone wrong): one byte in the
    middle, same size, and a digest for it written beside it. Root must not install it: its sha256 is
    checked, before it is unpacked, against the one the controller kept when it was written."""
    host, inv = provisioned["host"], provisioned["inv"]
    snapshot = "ls /persist/venv-snapshots/*.tar.zst"  # zstd: the notebook host has it
    if host.ssh(snapshot, check=False).returncode != 0:
        run_pyinfra(inv, "deploy/provision.py", "-y", check=True)  # run alone: the snapshot is written
    host.ssh(f'f=$({snapshot}); printf X | dd of="$f" bs=1 seek=$(( $(stat -c %s "$f") / 2 )) conv=notrunc status=none')
    # whoever writes the drive rewrites a digest beside it too: root trusts only the controller's
    host.ssh(f'f=$({snapshot}); sha256sum < "$f" | cut -d" " -f1 > "$f.sha256"')
    host.reset()
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "does not match the sha256 the controller recorded when it was written (damaged or altered)" in out
    assert host.ssh("ls /persist/venv-snapshots/").stdout.split() == []
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    results = op_results(res.stderr)
    assert results["venv packages"]["success"] == 1  # installed from the wheelhouse
    assert results["venv snapshot on the persistent path"]["success"] == 1  # a good one written again
    assert_serves(host)


def test_token_never_appears_in_output_logs_or_world_readable_files(provisioned: dict) -> None:
    host = provisioned["host"]
    assert TOKEN not in provisioned["output"]  # -vvv: every command and its output
    mode = host.ssh("stat -c '%a %U' /persist/huggingface/token").stdout.split()
    assert mode == ["600", "root"]
    found = host.ssh(
        f"grep -rl {shlex.quote(TOKEN)} / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev 2>/dev/null || true"
    ).stdout.split()
    assert found == ["/persist/huggingface/token"]


def test_written_files_have_sensible_modes(provisioned: dict) -> None:
    host = provisioned["host"]
    out = host.ssh(
        "stat -c '%n %a %U' /opt/triton/env.sh /etc/profile.d/triton.sh /opt/triton/bin/triton-env "
        "/opt/triton/models/smoke/config.pbtxt /opt/triton/run/tritonserver.log"
    ).stdout
    modes = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    assert modes["/opt/triton/env.sh"] == ["644", "root"]
    assert modes["/etc/profile.d/triton.sh"] == ["644", "root"]
    assert modes["/opt/triton/bin/triton-env"] == ["755", "root"]
    assert modes["/opt/triton/models/smoke/config.pbtxt"] == ["644", "root"]
    assert int(modes["/opt/triton/run/tritonserver.log"][0], 8) & 0o002 == 0  # not world-writable


def test_the_models_imports_are_compiled_once_into_the_server_users_bytecode_folder(provisioned: dict) -> None:
    """The venv is root's, so a stub could write no bytecode and compiled torch at every load: the server's
    user keeps it in a folder of its own on the persistent path (only it may write there), beside nothing
    root runs; the venv itself gets no __pycache__ written by that user."""
    host = provisioned["host"]
    folder = "/persist/python-bytecode"
    assert host.ssh(f"stat -c '%a %U' {folder}").stdout.split() == ["700", "triton-server"]
    compiled = host.ssh(f"find {folder} -path '*/site-packages/torch/__init__.cpython-*.pyc'").stdout
    assert compiled.strip(), f"no compiled torch in {folder}"
    venv = host.ssh("readlink -f /opt/triton/venv").stdout.strip()
    assert host.ssh(f"find {venv}/ -name '*.pyc' -user triton-server | head -1").stdout == ""


def test_server_listens_on_loopback_only_by_default(provisioned: dict) -> None:
    host = provisioned["host"]
    port = triton_ports(1)["triton_http_port"]
    listen = host.ssh(f"awk '$4 == \"0A\"' /proc/net/tcp | grep -i ':{port:04X} '").stdout.split()
    assert listen[1] == f"0100007F:{port:04X}"  # 127.0.0.1, not 0.0.0.0


def _settings(ctx: dict) -> dict:
    ns: dict = {}
    exec(ctx["inv"].read_text(), ns)
    data = ns["testbed"][0][1]
    return {
        k: v
        for k, v in data.items()
        if k in ("triton_pytriton_url", "pip_find_links", "torch_index_url", "torch_version", "lock_trust_on_first_use")
    }


def test_the_venv_is_exactly_the_controllers_lock_and_an_altered_wheel_is_refused(
    provisioned: dict, served: dict
) -> None:
    """The lock the first provision kept on the controller: every package, transitive ones too, with
    its sha256. The venv holds exactly it; a wheel changed in the wheelhouse is named, removed and
    fetched again by the next run."""
    host, inv = provisioned["host"], provisioned["inv"]
    # The lock this venv was made from, among those the worker's other modules keep in the same folder: the
    # venv's folder is named by its lock's key and the Python that made it (tasks/venv/plan.py venv_name).
    venv = host.ssh("readlink -f /opt/triton/venv").stdout.strip()
    python = host.ssh(f"sed -n 's/^command = //p' {venv}/pyvenv.cfg").stdout.split()[0]
    keys = {
        lock.name.removeprefix("venv-py3.11-cpu-").removesuffix(".lock"): lock
        for lock in Path(served["venv_lock_dir"]).glob("venv-py3.11-cpu-*.lock")
    }
    made = [key for key in keys if venv_name(key, python, "3.11") == venv.rsplit("/", 1)[1]]
    assert len(made) == 1, (venv, python, sorted(keys))
    key = made[0]
    lock = keys[key]
    pinned = {line.split(" ")[0] for line in lock.read_text().splitlines()}
    assert {"torch==2.13.0+cpu", "numpy==1.26.4"} <= pinned and len(pinned) > 20  # transitive ones too
    assert all(" --hash=sha256:" in line for line in lock.read_text().splitlines())
    freeze = host.ssh("/opt/triton/venv/bin/pip freeze --all --exclude pip").stdout

    def normal(requirement: str) -> str:  # PEP 503 names: zope.event and zope-event are one
        name, _, version = requirement.partition("==")
        return re.sub(r"[-_.]+", "-", name).lower() + "==" + version

    assert {normal(r) for r in freeze.split()} == {normal(r) for r in pinned}
    wheel = host.ssh(f"ls /persist/wheels/{key}/transformers-*.whl").stdout.strip()
    host.ssh(
        f"printf X | dd of={wheel} bs=1 seek=$(( $(stat -c %s {wheel}) / 2 )) conv=notrunc status=none"
        " && rm -rf /opt/triton/venv.versions /persist/venv-snapshots"
    )
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert f"wheelhouse: {wheel.rsplit('/', 1)[1]} is missing or does not match its recorded sha256" in out
    res = run_pyinfra(inv, "deploy/provision.py", "-y")  # fetched again, exactly the locked file
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert host.ssh(f"sha256sum {wheel}").stdout.split()[0] in lock.read_text()
    assert_serves(host)


def test_an_altered_apt_cache_is_named_removed_and_fetched_again(provisioned: dict) -> None:
    """The .debs and lists apt keeps on the persistent path, changed there (a shared drive): after a
    reset root does not install from them as they are."""
    host, inv = provisioned["host"], provisioned["inv"]
    deb = host.ssh("ls /persist/apt/archives/libpython3.11_*.deb").stdout.strip()
    host.ssh(f"printf X | dd of={deb} bs=1 seek=100 conv=notrunc status=none")
    host.ssh("echo 'Package: evil' > /persist/apt/lists/evil.example_dists_x_Packages")
    host.reset()
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert f"apt cache: archives/{deb.rsplit('/', 1)[1]} does not match its recorded sha256" in out
    assert "apt cache: lists/evil.example_dists_x_Packages is not recorded" in out
    assert host.ssh("test -e /persist/apt/lists/evil.example_dists_x_Packages", check=False).returncode == 1
    assert host.ssh(f"dpkg-deb --info {deb} >/dev/null").returncode == 0  # fetched again, whole
    assert_serves(host)


def test_an_install_with_a_world_writable_file_is_repaired(provisioned: dict) -> None:
    """Installs unpacked before modes were masked kept the wheel's 0666 files, which the server loads."""
    host, inv = provisioned["host"], provisioned["inv"]
    lib = "/opt/triton/current/backends/python/libtriton_python.so"
    host.ssh(f"chmod 666 {lib}")
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert op_results(res.stdout + res.stderr)["Triton server installed"]["success"] == 1
    assert host.ssh(f"stat -c %a {lib}").stdout.strip() == "644"
    assert host.ssh("find /opt/triton/current/ ! -type l -perm /022").stdout == ""


def test_the_token_comes_from_the_controllers_HF_TOKEN_and_goes_when_cleared(provisioned: dict) -> None:
    host, inv = provisioned["host"], provisioned["inv"]
    other = "hf_FROMTHEENVIRONMENT0123456789abcd"
    res = run_pyinfra(inv, "deploy/provision.py", "-y", "--data", "hf_token=", env={"HF_TOKEN": other})
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert other not in res.stdout + res.stderr
    assert host.ssh("cat /persist/huggingface/token; echo; stat -c %a /persist/huggingface/token").stdout.split() == [
        other,
        "600",
    ]
    res = run_pyinfra(inv, "deploy/provision.py", "-y", "--data", "hf_token=", env={"HF_TOKEN": ""})
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert host.ssh("test -e /persist/huggingface/token", check=False).returncode == 1  # cleared: removed
    assert run_pyinfra(inv, "deploy/provision.py", "-y").returncode == 0  # the module's token back


def test_an_account_the_provisioner_did_not_make_is_refused_and_never_changed(
    host: TestHost, served: dict, tmp_path: Path
) -> None:
    """triton_user set to a login account: refused before any change (the account would lose its home
    and login, and uninstall would remove it); uninstall with it leaves the account as it was."""
    host.ssh("useradd -m -s /bin/bash alice")
    before = host.ssh("getent passwd alice").stdout
    inv = write_inventory(tmp_path / "inv.py", [host], {**served, "triton_user": "alice"}, own_ports=True)
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "refusing to provision tb1, nothing was changed" in out
    assert "triton_user alice is an account the provisioner did not make (uid 1000, home /home/alice" in out
    res = run_pyinfra(inv, "deploy/uninstall.py", "-y", "-v")  # -v: the noop's reason is shown
    assert "alice was not made by the provisioner: left as it is" in res.stdout + res.stderr
    assert host.ssh("getent passwd alice").stdout == before
