"""A VM as users have one: systemd as PID 1, reached as a user with passwordless sudo, downloads
only through an HTTP proxy. The server's life under systemd: enabled, restarted by systemd after a
crash, stopped and disabled, back after a reboot; the HuggingFace token never readable by others."""

from __future__ import annotations

import re
import secrets
import shlex
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import testbed
from tasks.server import unit as server_unit
from testbed import TestHost, named_ports, op_results, run_pyinfra, watch_files, write_inventory
from testbed.mirror import Mirror
from testbed.proxy import SOURCE_FOR_LOOPBACK, Proxy
from tests import clients, tiny_models
from tests.e2e import artifacts
from tests.e2e.test_lifecycle import more_served, provision_polled, tarball_args
from tests.e2e.test_provision import assert_serves, changed

# The VM runs beside tb1/tb2 and the trixie host on this machine's loopback: ports of its own.
PORTS = named_ports(1)
# An install root with a `%` (a systemd specifier) that the unit must carry through.
HOME = "/opt/tri%ton"
TOKEN = "hf_e2e" + secrets.token_hex(12)
CANARY = "canary" + secrets.token_hex(12)
URL_PASSWORD = "pw" + secrets.token_hex(8)
PROXY_PASSWORD = "proxypw" + secrets.token_hex(8)  # in the proxy URLs: Squid refuses a request without it
HUB_PASSWORD = "hubpw" + secrets.token_hex(8)  # in hf_endpoint (no hub model here: it is only carried)

# Run as `nobody` while the provision runs: every process's command line, read every 10 ms, for the
# passwords (a command that could carry one, a shell running pip or curl, lives far longer; reading without
# a pause took a core from the run); it also counts the processes it saw read the network settings
# (proving it saw the downloads).
PS_WATCHER = r"""
import os, sys, time
needles, stop = [bytes.fromhex(n) for n in sys.argv[1].split(",")], sys.argv[2]  # hex: not itself a hit
scans, hits, shell = 0, set(), set()
while not os.path.exists(stop):
    scans += 1
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b". /etc/triton-provisioner/network.env" in cmd:
            shell.add(pid)
        for needle in needles:
            if needle in cmd:
                hits.add(cmd.replace(b"\0", b" ").decode(errors="replace"))
    time.sleep(0.01)
for hit in sorted(hits):
    print("HIT", hit, flush=True)
print("PS_SCANS", scans, "NETWORK_SHELL", len(shell), flush=True)
"""

# Run as `nobody` while the provision runs: reads every file it can under the places an upload or a
# copy passes through, at the start and again whenever one is written (inotify), and names any that holds
# the token (or the canary that the test plants world-readable in /tmp, proving the watcher sees such
# files). Stops when its third argument exists.
WATCHER = Path(watch_files.__file__).read_text()


def ssh_ok(vm: TestHost, command: str) -> str:
    res = vm.ssh(command, check=False)
    assert res.returncode == 0, f"{command}: {res.stdout}{res.stderr}"
    return res.stdout.strip()


def wait_for(what: str, check, timeout: float = 120) -> None:
    """Poll check() until it is true; fail naming what did not happen in time."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:.0f}s")
        time.sleep(0.2)


def ready(vm: TestHost, model: str = "") -> bool:
    """The server (or that model) answers ready."""
    port = PORTS["triton_http_port"]
    path = f"/v2/models/{model}/ready" if model else "/v2/health/ready"
    probe = f"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}{path}', timeout=2)"
    return vm.ssh(f'python3 -c "{probe}"', check=False).returncode == 0


def probe_through(vm: TestHost, proxy: str, url: str) -> str:
    """What a GET of url through the proxy (a URL, credentials in it or not) answers on the VM: status or error."""
    probe = (
        "import urllib.request as u, sys\n"
        "o = u.build_opener(u.ProxyHandler({'http': sys.argv[1]}))\n"
        "try: print(o.open(sys.argv[2], timeout=10).status)\n"
        "except Exception as e: print(e)\n"
    )
    return vm.ssh(f"python3 -c {shlex.quote(probe)} {shlex.quote(proxy)} {shlex.quote(url)}", check=False).stdout


def slot_env(vm: TestHost) -> dict[str, str]:
    """The slot file both units start with (RUN/slot.env)."""
    text = ssh_ok(vm, f"cat {shlex.quote(HOME)}/run/slot.env")
    return dict(line.split("=", 1) for line in text.splitlines())


def unit_state(vm: TestHost, unit: str = "tritonserver.service") -> tuple[str, str, str]:
    """(is-active, is-enabled, MainPID) of the unit."""
    out = vm.ssh(
        f"systemctl is-active {unit}; systemctl is-enabled {unit}; systemctl show -p MainPID --value {unit}",
        check=False,
    ).stdout.split()
    return out[0], out[1], out[2]


def front_unit(vm: TestHost) -> tuple[str, str, str]:
    """(is-active, is-enabled, MainPID) of the front's unit."""
    return unit_state(vm, "triton-front.service")


@pytest.fixture(scope="module")
def vm() -> Iterator[TestHost]:
    """A systemd host reached as `ops` with passwordless sudo; removed at the module's end."""
    made = testbed.up(1, prefix="vm", init="systemd", user="ops")
    try:
        yield TestHost(made[0])
    finally:
        testbed.remove(made[0].name)


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Mirror, Proxy]]:
    """A mirror that admits only the proxy's loopback source address, and the proxy (Squid, asking for the
    user `ops` and PROXY_PASSWORD)."""
    root = tmp_path_factory.mktemp("proxied-mirror") / "files"
    with Mirror(root, allow=(SOURCE_FOR_LOOPBACK,)) as mirror, Proxy("ops", PROXY_PASSWORD) as proxy:
        yield mirror, proxy


@pytest.fixture(scope="module")
def vm_settings(net: tuple[Mirror, Proxy]) -> dict:
    """The VM's settings: everything through the proxy, passwords in the URLs, a home with a % in it."""
    mirror, proxy = net
    served = artifacts.mirror_settings(mirror)
    settings = {
        **served,
        # the artifact behind a user and password (the mirror ignores them; they must never show)
        "triton_pytriton_url": served["triton_pytriton_url"].replace("http://", f"http://ops:{URL_PASSWORD}@"),
        "pip_find_links": served["pip_find_links"].replace("http://", f"http://ops:{URL_PASSWORD}@"),
        "http_proxy": proxy.url_with_password,
        "https_proxy": proxy.url_with_password,
        "no_proxy": "metadata.internal",
        "hf_endpoint": f"https://ops:{HUB_PASSWORD}@hub.internal",
        "triton_home": HOME,
        "venv_dir": f"{HOME}/venv",
        "hf_token": TOKEN,
    }
    return settings


@pytest.fixture(scope="module")
def vm_inv(vm: TestHost, vm_settings: dict, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("vm")
    return write_inventory(
        tmp / "inv.py", [vm], vm_settings, own_ports=True, audit_report_path=str(tmp / "audit.json"), **PORTS
    )


@pytest.fixture(scope="module")
def first_run(vm: TestHost, vm_inv: Path, net: tuple[Mirror, Proxy]) -> dict:
    """The first provision (-vvv), with the token watcher running as `nobody` throughout."""
    ssh_ok(vm, f"printf %s {CANARY} > /tmp/canary.txt; chmod 644 /tmp/canary.txt; rm -f /run/watch-stop")
    watcher = WATCHER.replace("'", "'\\''")
    ssh_ok(
        vm,
        f"nohup runuser -u nobody -- python3 -c '{watcher}' {TOKEN} {CANARY} /run/watch-stop"
        " > /root/watch.out 2>&1 < /dev/null &",
    )
    wait_for("the watcher watches", lambda: "WATCHING" in vm.ssh("cat /root/watch.out").stdout, 30)
    ps_watcher = PS_WATCHER.replace("'", "'\\''")
    needles = ",".join(p.encode().hex() for p in (PROXY_PASSWORD, HUB_PASSWORD))
    ssh_ok(
        vm,
        f"nohup runuser -u nobody -- python3 -c '{ps_watcher}' {needles} /run/watch-stop"
        " > /root/ps.out 2>&1 < /dev/null &",
    )
    res = run_pyinfra(vm_inv, "deploy/provision.py", "-y", "-vvv")
    ssh_ok(vm, "touch /run/watch-stop")
    wait_for("the watcher finished", lambda: "READS" in vm.ssh("cat /root/watch.out").stdout, 60)
    wait_for("the ps watcher finished", lambda: "PS_SCANS" in vm.ssh("cat /root/ps.out").stdout, 60)
    return {
        "res": res,
        "out": res.stdout + res.stderr,
        "watch": vm.ssh("cat /root/watch.out").stdout,
        "ps": vm.ssh("cat /root/ps.out").stdout,
    }


def test_systemd_reads_back_each_word_as_the_unit_writer_meant(vm: TestHost) -> None:
    """systemd_word against systemd itself: words with spaces, %, $, quotes and a backslash reach the
    program unchanged (read back from the unit's journal, where the server's unit writes too)."""
    words = ["a b", "50%", "%h", "$HOME", "${USER}", 'say "hi"', "back\\slash", "plain"]
    argv = ["/bin/sh", "-c", 'for a; do printf "[%s]\\n" "$a"; done', "_", *words]
    unit = (
        "[Service]\nType=oneshot\n"
        f"ExecStart={' '.join(server_unit.systemd_word(a) for a in argv)}\n"
        "StandardOutput=journal\n"
    )
    (vm.host.root / "etc/systemd/system/words.service").write_text(unit)
    ssh_ok(vm, "systemctl daemon-reload && systemctl start words.service")
    read = "journalctl _SYSTEMD_UNIT=words.service -o cat --no-pager"  # its output, not systemd's lines about it
    wait_for("the unit's lines in the journal", lambda: len(vm.ssh(read).stdout.splitlines()) >= len(words), 30)
    got = vm.ssh(read).stdout.splitlines()
    assert got == [f"[{w}]" for w in words], unit


def test_provisioned_through_the_proxy_as_a_sudo_user_with_a_systemd_unit(
    vm: TestHost, first_run: dict, net: tuple[Mirror, Proxy]
) -> None:
    out = first_run["out"]
    assert first_run["res"].returncode == 0, out[-8000:]
    assert "[vm1] OK" in out
    assert unit_state(vm)[:2] == ("active", "enabled")
    unit = vm.ssh("cat /etc/systemd/system/tritonserver.service").stdout
    assert "--model-repository /opt/tri%%ton/models" in unit
    # the default under systemd (triton_upgrade = "auto"): the front, a unit of its own as the server's user,
    # the server on slot a's ports behind it
    active, enabled, haproxy = front_unit(vm)
    assert (active, enabled) == ("active", "enabled") and ssh_ok(vm, f"ps -o user= -p {haproxy}") == "triton-server"
    assert slot_env(vm)["TRITON_SLOT"] == "a" and slot_env(vm)["TRITON_HTTP_PORT"] == str(
        PORTS["triton_http_port"] + 10
    )
    # The server runs from the path with the %, as root's unit runs it (not as the login user).
    pid = unit_state(vm)[2]
    assert vm.ssh(f"tr '\\0' ' ' < /proc/{pid}/cmdline").stdout.startswith(
        "tritonserver --model-repository /opt/tri%ton/models"
    )
    assert_serves(vm, PORTS)
    # The server and its stubs run as triton-server, in the unit's sandbox: no new privileges, and
    # the file system read-only but for the HF cache (the run directory is root's: it writes the log there).
    stubs = ssh_ok(vm, "pgrep -f '[t]riton_python_backend_stub '").split()
    assert stubs and {ssh_ok(vm, f"ps -o user= -p {p}") for p in [pid, *stubs]} == {"triton-server"}
    assert "NoNewPrivs:\t1" in ssh_ok(vm, f"cat /proc/{pid}/status")
    as_server = f"nsenter -t {pid} -m -S $(stat -c %u /proc/{pid}) -G $(stat -c %g /proc/{pid})"
    denied = vm.ssh(f"{as_server} sh -c 'echo x > /etc/triton-was-here'", check=False)
    assert denied.returncode != 0 and "Read-only file system" in denied.stderr, denied
    hub_cache = "/persist/huggingface/hub"
    assert vm.ssh(f"{as_server} sh -c 'echo x > {hub_cache}/probe && rm {hub_cache}/probe'").returncode == 0
    run = vm.ssh(f"{as_server} sh -c 'echo x > /opt/tri%ton/run/probe'", check=False)  # root's: its log, pid
    assert run.returncode != 0 and "Read-only file system" in run.stderr, run
    # Every download went through the proxy, with its password: the artifact and torch from the mirror, apt,
    # PyPI. Squid refuses a request that comes without it (407), so each tool sent it.
    mirror, proxy = net
    targets = [t for _, t, status in proxy.log if status == 200]
    unauthenticated = probe_through(vm, proxy.url, f"{mirror.url}/pytriton/")
    assert "407" in unauthenticated, unauthenticated
    assert any(t.startswith(mirror.url + "/pytriton/") for t in targets), proxy.log
    assert any(t.startswith(mirror.url + "/wheels/") for t in targets), proxy.log
    assert any(re.match(r"http://deb\.debian\.org/.*\.deb$", t) for t in targets), proxy.log
    assert any(t in ("pypi.org:443", "files.pythonhosted.org:443") for t in targets), proxy.log
    # ... and nothing reached the mirror directly (it refuses any other peer).
    assert all(status != 403 for *_, status in mirror.requests()), mirror.requests()
    probe = f"import urllib.request as u; u.urlopen('{mirror.url}/pytriton/', timeout=5)"
    direct = vm.ssh(f'python3 -c "{probe}"', check=False)
    assert direct.returncode != 0 and "403" in direct.stderr


def test_the_token_was_never_readable_by_another_user(vm: TestHost, first_run: dict) -> None:
    watch = first_run["watch"]
    reads, events = map(int, re.search(r"READS (\d+) EVENTS (\d+)", watch).groups())
    assert "CANARY /tmp/canary.txt" in watch, watch  # it sees readable files
    assert events >= 100 and reads >= 50, watch  # and read what the run wrote, as it wrote it
    assert "TOKEN" not in watch, watch
    assert ssh_ok(vm, "stat -c '%a %U %G' /persist/huggingface/token") == "600 root root"
    assert ssh_ok(vm, "cat /persist/huggingface/token") == TOKEN
    assert TOKEN not in first_run["out"]  # -vvv: every command and its output
    leftovers = vm.ssh(f"grep -rl {TOKEN} /tmp /var/tmp /home /root 2>/dev/null", check=False).stdout
    assert leftovers == ""


def test_proxy_and_hub_passwords_never_reach_a_command_line(vm: TestHost, first_run: dict) -> None:
    """Every download ran in a shell that read the root-only network.env, not with the settings exported on
    the command line sudo runs: no local user saw a password in `ps` at any moment of the run."""
    ps = first_run["ps"]
    scans, through_shell = map(int, re.search(r"PS_SCANS (\d+) NETWORK_SHELL (\d+)", ps).groups())
    assert scans >= 100 and through_shell >= 3, ps  # it looked all along, and saw the downloads run
    assert "HIT" not in ps, ps
    assert ssh_ok(vm, "stat -c '%a %U' /etc/triton-provisioner/network.env") == "600 root"
    for password in (PROXY_PASSWORD, HUB_PASSWORD):
        assert password not in first_run["out"]  # -vvv: every command and its output


def test_a_url_password_is_never_shown_nor_left_on_the_host(vm: TestHost, first_run: dict) -> None:
    assert URL_PASSWORD not in first_run["out"]
    places = "/tmp /var/tmp /home /root /persist /opt /etc/systemd"
    for password in (URL_PASSWORD, PROXY_PASSWORD, HUB_PASSWORD):
        assert vm.ssh(f"grep -rl {password} {places} 2>/dev/null", check=False).stdout == ""
    assert vm.ssh("ls /persist/downloads/*.url 2>/dev/null", check=False).stdout == ""  # read, then removed


def test_second_run_changes_nothing(vm_inv: Path, first_run: dict) -> None:
    res = run_pyinfra(vm_inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    assert changed(op_results(out)) == {}


def test_a_killed_server_is_started_again_by_systemd_and_provision_changes_nothing(
    vm: TestHost, vm_inv: Path, first_run: dict
) -> None:
    before = unit_state(vm)[2]
    ssh_ok(vm, f"kill -KILL {before}")
    wait_for("systemd started the server again", lambda: unit_state(vm)[2] not in ("0", before), 60)
    wait_for("the restarted server is ready", lambda: ready(vm), 120)
    assert ssh_ok(vm, "systemctl show -p NRestarts --value tritonserver.service") == "1"
    res = run_pyinfra(vm_inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode == 0 and changed(op_results(out)) == {}, out[-6000:]


def test_stop_leaves_the_unit_inactive_and_disabled_and_provision_brings_it_back(
    vm: TestHost, vm_inv: Path, first_run: dict
) -> None:
    res = run_pyinfra(vm_inv, "deploy/stop.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    active, enabled, _ = unit_state(vm)
    assert (active, enabled) == ("inactive", "disabled") and front_unit(vm)[:2] == ("inactive", "disabled")
    assert vm.ssh("pgrep -x tritonserver", check=False).returncode == 1
    res = run_pyinfra(vm_inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    assert set(changed(op_results(out))) == {
        "the front (HAProxy) on the server's ports",
        "Triton server running, ready and proven",
    }
    assert unit_state(vm)[:2] == ("active", "enabled") and front_unit(vm)[:2] == ("active", "enabled")


def test_after_a_reboot_the_server_comes_back_by_itself(vm: TestHost, vm_inv: Path, first_run: dict) -> None:
    ssh_ok(vm, "touch /run/before-reboot")  # /run is systemd's tmpfs: a reboot empties it
    vm.host = testbed.restart(vm.name)
    assert vm.ssh("test -e /run/before-reboot", check=False).returncode == 1
    wait_for("the server is ready after the reboot", lambda: ready(vm), 120)
    assert unit_state(vm)[:2] == ("active", "enabled")
    assert_serves(vm, PORTS)
    res = run_pyinfra(vm_inv, "deploy/audit.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-6000:]


def test_the_servers_log_is_the_journal_and_status_reads_it(vm: TestHost, vm_inv: Path, first_run: dict) -> None:
    """Under systemd the server writes to the journal (journald keeps and rotates it): `journalctl -u
    tritonserver` holds this start's lines after its "--- start" line, and no log file is written. With the
    server stopped, status says so and shows the journal's last lines: the server's own shutdown."""
    port = slot_env(vm)["TRITON_HTTP_PORT"]  # behind the front: its slot's
    journal = ssh_ok(vm, "journalctl -u tritonserver.service -o cat --no-pager")
    assert "--- start" in journal
    assert f'"Started HTTPService at 127.0.0.1:{port}"' in journal.split("--- start")[-1], journal[-3000:]
    assert vm.ssh(f"ls {shlex.quote(HOME)}/run/tritonserver.log", check=False).returncode != 0
    ssh_ok(vm, "systemctl stop tritonserver.service")
    try:
        res = run_pyinfra(vm_inv, "deploy/status.py", "-y")
        out = res.stdout + res.stderr
        assert res.returncode != 0, out[-3000:]  # it should run, and does not
        assert "its log: journalctl -u tritonserver.service" in out, out[-3000:]
        assert re.search(r"\| .*(successfully unloaded|Waiting for in-flight requests)", out), out[-3000:]
    finally:
        ssh_ok(vm, "systemctl start tritonserver.service")
        wait_for("the server is ready again", lambda: ready(vm), 120)


def test_status_names_the_systemd_unit(vm: TestHost, vm_inv: Path, first_run: dict) -> None:
    res = run_pyinfra(vm_inv, "deploy/status.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    pid = unit_state(vm)[2]
    assert re.search(
        rf"\n  server +running, pid {pid}, up .*, systemd \(tritonserver\.service\), ready, as triton-server", out
    )
    http, slot = PORTS["triton_http_port"], slot_env(vm)
    assert re.search(rf"\n  listen +127\.0\.0\.1 http {http} \(bound 127\.0\.0\.1\), ", out), out  # HAProxy's
    assert re.search(
        rf"\n  front +HAProxy pid {front_unit(vm)[2]} on those ports, to the server on slot {slot['TRITON_SLOT']}: "
        rf"http {slot['TRITON_HTTP_PORT']} \(bound 127\.0\.0\.1\), ",
        out,
    ), out


def test_a_model_added_and_removed_under_systemd_changes_the_running_unit_only_through_its_api(
    vm: TestHost, vm_inv: Path, vm_settings: dict, first_run: dict, tmp_path: Path
) -> None:
    """The unit's server (as the server's user, in its sandbox) loads an added model and unloads it again
    through the repository API: its main pid never changes, its journal says so."""
    tiny_models.make("classifier", tmp_path / "clf", seed=1)
    model = {"name": "clf", "source": f"path:{tmp_path / 'clf'}", "task": "text-classification"}
    inv = write_inventory(tmp_path / "inv.py", [vm], {**vm_settings, "models": [model]}, own_ports=True, **PORTS)
    pid = unit_state(vm)[2]
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert "models: load clf; the server keeps running" in out and "verified clf:" in out, out[-4000:]
    assert unit_state(vm)[2] == pid
    journal = ssh_ok(vm, "journalctl -u tritonserver.service -o cat --no-pager").split("--- start")[-1]
    assert "successfully loaded 'clf'" in journal, journal[-3000:]
    res = run_pyinfra(vm_inv, "deploy/provision.py", "-y")  # without it again
    out = res.stdout + res.stderr
    assert res.returncode == 0 and "models: unload clf; the server keeps running" in out, out[-4000:]
    assert unit_state(vm)[2] == pid and not ready(vm, "clf")


def test_behind_the_front_under_systemd_a_build_upgrade_fails_no_request_of_clients_that_keep_connections(
    vm: TestHost, vm_inv: Path, first_run: dict, net: tuple[Mirror, Proxy], tmp_path: Path
) -> None:
    """The front, the default under systemd (triton_upgrade = "auto"): HAProxy is a unit of its own
    (triton-front.service, as the server's user), the server's unit listens on the slot its slot file names.
    A build upgrade starts the new
    server inside tritonserver.service on the other slot, proves it, switches the front, makes it the unit's
    main process; a build that cannot start is stopped and the old server serves on. Through both, perf_analyzer
    (HTTP and gRPC), a reused gRPC and HTTP client and a poller lose no request, and neither unit restarts.
    A second run changes nothing; killed, either is started again by systemd on the slot that serves, and
    requests reach the server through the front; after a reboot too, and a provision then changes nothing."""
    mirror, _ = net
    http, grpc, metrics = (PORTS[f"triton_{name}_port"] for name in ("http", "grpc", "metrics"))
    active, enabled, haproxy = front_unit(vm)
    assert (active, enabled) == ("active", "enabled") and slot_env(vm)["TRITON_SLOT"] == "a"
    pid, restarts = unit_state(vm)[2], ssh_ok(vm, "systemctl show -p NRestarts --value tritonserver.service")
    with clients.five_at_work(http, grpc, "smoke", tmp_path / "stop") as at_work:
        more_served(metrics, 40)  # every client at work on the old server
        bad = artifacts.triton_tarball_variant("no-libtritonserver", drop="lib/libtritonserver")
        failed = run_pyinfra(vm_inv, "deploy/provision.py", "-y", *tarball_args(mirror, bad, "bad"))
        more_served(metrics, 40)  # still the old server, through the same connections
        newer = artifacts.triton_tarball_variant("repacked-again", note="the same build, repacked again")
        res = run_pyinfra(vm_inv, "deploy/provision.py", "-y", *tarball_args(mirror, newer, "newer"))
        more_served(metrics, 40)  # and on the new one, through the same connections
    failed_out = failed.stdout + failed.stderr
    assert failed.returncode != 0 and "the old one never stopped serving" in failed_out, failed_out[-5000:]
    assert "cause: a shared library is missing" in failed_out, failed_out[-5000:]  # from the journal
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-5000:]
    assert f"the new one starts on slot b beside Triton pid {pid} (slot a) in tritonserver.service" in out, out[-5000:]
    print(f"\nbuild upgrade behind the front under systemd: {at_work['counts']}")
    clients.none_failed(at_work)
    new = unit_state(vm)[2]
    assert new not in (pid, "0") and vm.ssh(f"test -d /proc/{pid}", check=False).returncode != 0
    assert ssh_ok(vm, "systemctl show -p NRestarts --value tritonserver.service") == restarts  # never restarted
    assert ssh_ok(vm, "systemctl show -p MainPID --value triton-front.service") == haproxy  # nor the front
    assert slot_env(vm)["TRITON_SLOT"] == "b"
    again = run_pyinfra(vm_inv, "deploy/provision.py", "-y", *tarball_args(mirror, newer, "newer"))
    assert again.returncode == 0 and changed(op_results(again.stdout + again.stderr)) == {}, again.stdout[-4000:]
    audit = run_pyinfra(vm_inv, "deploy/audit.py", "-y")  # the front's ports are ours
    assert audit.returncode == 0 and f"http: served by the front (HAProxy pid {haproxy})" in audit.stdout, audit.stdout

    # systemd brings either back on the slot that serves (b): the front, then the server
    ssh_ok(vm, f"kill -KILL {haproxy}")
    wait_for("systemd started the front again", lambda: vm.ssh(
        "systemctl show -p MainPID --value triton-front.service").stdout.strip() not in ("0", haproxy), 60)  # fmt: skip
    wait_for("the server answers through the restarted front", lambda: ready(vm), 60)
    ssh_ok(vm, f"kill -KILL {new}")
    wait_for("systemd started the server again", lambda: unit_state(vm)[2] not in ("0", new), 60)
    wait_for("the restarted server answers through the front", lambda: ready(vm, "smoke"), 120)
    slot_b = ssh_ok(vm, f"tr '\\0' ' ' < /proc/{unit_state(vm)[2]}/cmdline")
    assert f"--http-port {http + 20} " in slot_b, slot_b
    vm.host = testbed.restart(vm.name)  # a reboot: both units start at boot, on slot b
    wait_for("the server answers through the front after a reboot", lambda: ready(vm, "smoke"), 120)
    after = run_pyinfra(vm_inv, "deploy/provision.py", "-y", *tarball_args(mirror, newer, "newer"))
    assert after.returncode == 0 and changed(op_results(after.stdout + after.stderr)) == {}, after.stdout[-4000:]


def test_a_build_upgrade_under_systemd_is_handed_over_inside_the_unit_without_a_failed_request(
    vm: TestHost, vm_inv: Path, first_run: dict, net: tuple[Mirror, Proxy]
) -> None:
    """With triton_upgrade = "handover" (the server first moved off the front: one restart), under systemd
    too a build upgrade is a handover (tasks/server/handover.py): the new server starts
    inside tritonserver.service (`systemctl reload`: its user, sandbox and journal), is proven on its own,
    becomes the unit's main process, and only then the old one stops; the unit never restarts and no request
    fails. A build that cannot start is stopped, and the old server, the unit's main process throughout,
    serves on. systemd then follows the new server: killed, it is started again."""
    mirror, _ = net
    handover = ("--data", "triton_upgrade=handover")
    current = artifacts.triton_tarball_variant("repacked-again", note="the same build, repacked again")
    res = run_pyinfra(vm_inv, "deploy/provision.py", "-y", *tarball_args(mirror, current, "newer"), *handover)
    out = res.stdout + res.stderr  # the server takes its ports back from the front: one restart, said
    assert res.returncode == 0, out[-5000:]
    assert "behind the front (triton_upgrade was 'front'): restarted once, on the ports" in out, out[-5000:]
    assert front_unit(vm)[:2] == ("inactive", "disabled")
    assert f"--http-port {PORTS['triton_http_port']} " in ssh_ok(
        vm, f"tr '\\0' ' ' < /proc/{unit_state(vm)[2]}/cmdline"
    )
    polled = {"host": vm, "inv": vm_inv, "port": PORTS["triton_http_port"]}
    unit_path = "/etc/systemd/system/tritonserver.service"
    unit_text, pid = ssh_ok(vm, f"cat {unit_path}"), unit_state(vm)[2]
    restarts = ssh_ok(vm, "systemctl show -p NRestarts --value tritonserver.service")
    bad = artifacts.triton_tarball_variant("no-libtritonserver", drop="lib/libtritonserver")
    rc, out, took, outage = provision_polled(polled, *tarball_args(mirror, bad, "bad"), *handover)
    assert rc != 0 and "the old one never stopped serving" in out, out[-5000:]
    assert "libtritonserver" in out and "cause: a shared library is missing" in out, out[-5000:]  # the journal's
    assert unit_state(vm) == ("active", "enabled", pid)
    assert ssh_ok(vm, f"cat {unit_path}") == unit_text and vm.ssh(f"ls {unit_path}.before", check=False).returncode
    print(f"\nfailed Triton upgrade under systemd: run {took:.1f} s, requests failed for {outage:.2f} s")
    assert outage == 0.0

    good = artifacts.triton_tarball_variant("repacked", note="the same build, repacked")
    rc, out, took, outage = provision_polled(polled, *tarball_args(mirror, good, "good"), *handover)
    assert rc == 0, out[-5000:]
    assert f"the new one starts beside Triton pid {pid} in tritonserver.service" in out, out[-5000:]
    active, enabled, new = unit_state(vm)
    assert (active, enabled) == ("active", "enabled") and new not in (pid, "0")
    assert ssh_ok(vm, "systemctl show -p NRestarts --value tritonserver.service") == restarts  # never restarted
    assert vm.ssh(f"test -d /proc/{pid}", check=False).returncode != 0  # the old server is gone
    assert ssh_ok(vm, f"cat {shlex.quote(HOME)}/run/tritonserver.pid") == new
    assert ssh_ok(vm, f"cat {shlex.quote(HOME)}/current/NOTES") == "the same build, repacked"
    journal = ssh_ok(vm, "journalctl -u tritonserver.service -o cat --no-pager")
    assert f"--- start (beside Triton pid {pid}, on the same ports): pid {new}" in journal, journal[-3000:]
    assert_serves(vm, PORTS)
    print(f"\ngood Triton upgrade under systemd: run {took:.1f} s, requests failed for {outage:.2f} s")
    assert outage == 0.0
    res = run_pyinfra(vm_inv, "deploy/provision.py", "-y", *tarball_args(mirror, good, "good"), *handover)
    assert res.returncode == 0 and changed(op_results(res.stdout + res.stderr)) == {}, res.stdout[-4000:]

    ssh_ok(vm, f"kill -KILL {new}")  # the unit follows its new main process
    wait_for("systemd started the server again", lambda: unit_state(vm)[2] not in ("0", new), 60)
    wait_for("the restarted server is ready", lambda: ready(vm), 120)


def test_uninstall_removes_the_unit_and_systemd_forgets_it(vm: TestHost, vm_inv: Path, first_run: dict) -> None:
    res = run_pyinfra(vm_inv, "deploy/uninstall.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    for unit in ("tritonserver.service", "triton-front.service"):
        assert vm.ssh(f"test -e /etc/systemd/system/{unit}", check=False).returncode == 1
        load = vm.ssh(f"systemctl show -p LoadState --value {unit}").stdout.strip()
        assert load == "not-found", unit  # daemon-reloaded: no unit of that name left
    # no HAProxy of ours left (Debian's package runs its own haproxy.service, on its own empty configuration)
    assert vm.ssh("pgrep -f '[h]aproxy .*/run/front-'", check=False).returncode == 1
    assert vm.ssh(f"test -e {shlex.quote(HOME)}", check=False).returncode == 1
    assert vm.ssh("pgrep -f 'while kill -[0]'", check=False).returncode == 1  # no log watcher left
