"""Changes on a serving host without losing service: a Triton build that cannot start and a pin that
breaks the model's imports are rolled back to what served before; a good build is switched to, the
old one kept. A client polls the server throughout and the test prints how long requests failed."""

from __future__ import annotations

import json
import re
import shlex
import socket
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from testbed import TestHost, host_index, op_results, run_pyinfra, triton_ports, write_inventory
from tests import clients, tiny_models
from tests.e2e import artifacts
from tests.e2e.test_provision import assert_serves

BROKEN_TRANSFORMERS = "9.9.9"


class Poller(threading.Thread):
    """Sends one inference to a model over HTTP every 50 ms from this machine and records each outcome,
    so that the seconds during which requests failed can be read afterwards. smoke's answer is checked
    (UPPER), another model's must hold its outputs. A request fails when it gets an error or no answer
    within TIMEOUT_S; how long the slowest answer took is kept too (`slowest`)."""

    TIMEOUT_S = 30

    def __init__(self, port: int, model: str = "smoke"):
        super().__init__(daemon=True)
        self.model = model
        self.url = f"http://127.0.0.1:{port}/v2/models/{model}/infer"
        self.body = json.dumps(
            {"inputs": [{"name": "TEXT", "shape": [1, 1], "datatype": "BYTES", "data": ["poll"]}]}
        ).encode()
        self.results: list[tuple[float, bool]] = []
        self.errors: list[str] = []  # what each failed request got
        self.slowest = 0.0  # seconds, of the answered requests
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            sent = time.monotonic()
            try:
                req = urllib.request.Request(self.url, self.body, {"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=self.TIMEOUT_S) as resp:
                    out = {o["name"]: o["data"] for o in json.load(resp)["outputs"]}
                self.slowest = max(self.slowest, time.monotonic() - sent)
                ok = out.get("UPPER") == ["POLL"] if self.model == "smoke" else bool(out)
                if not ok:
                    self.errors.append(f"answered {out}")
            except (OSError, ValueError, KeyError) as exc:
                ok = False
                body = exc.read().decode(errors="replace")[:300] if isinstance(exc, urllib.error.HTTPError) else ""
                self.errors.append(f"at {time.monotonic():.1f}: {type(exc).__name__}: {exc} {body}".strip())
            self.results.append((time.monotonic(), ok))
            self.done.wait(0.05)

    @property
    def failed(self) -> int:
        return sum(1 for _, ok in self.results if not ok)

    def stop(self) -> None:
        self.done.set()
        self.join()

    def outage(self) -> float:
        """Seconds from the last answer before the first failure to the first answer after the last
        one (0.0 when no request failed); a failure still ongoing at the end fails the test."""
        fails = [i for i, (_, ok) in enumerate(self.results) if not ok]
        if not fails:
            return 0.0
        first, last = fails[0], fails[-1]
        assert last + 1 < len(self.results), (
            f"the server did not answer again before polling stopped: {self.errors[-3:]}"
        )
        start = self.results[first - 1][0] if first else self.results[first][0]
        return self.results[last + 1][0] - start


def broken_wheel(dest: Path, name: str, version: str) -> Path:
    """A wheel of `name` whose import fails (ImportError), as a bad release of a dependency would."""
    wheel = dest / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"raise ImportError('{name} {version} is broken on purpose (test)')\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr(f"{info}/RECORD", "".join(f"{p},,\n" for p in [*files, f"{info}/RECORD"]))
    return wheel


@pytest.fixture(scope="module")
def serving(testbed_hosts: list[TestHost], served: dict, mirror, hub, tmp_path_factory) -> dict:
    """tb1 reset and serving the pytriton build with a classifier (it imports transformers), uploaded
    and from the hub (its cache filled as a download leaves it)."""
    host = testbed_hosts[0]
    host.reset()
    path = tmp_path_factory.mktemp("lifecycle")
    tiny_models.make("classifier", path / "clf", seed=1)
    commit = hub.add("tiny/clf", path / "clf")
    models = [
        {"name": "clf", "source": f"path:{path / 'clf'}", "task": "text-classification"},
        {"name": "clf_hub", "source": "hub:tiny/clf@main", "task": "text-classification"},
    ]
    settings = {**served, "models": models, "status_report_path": str(path / "status.json"), "hf_endpoint": hub.url}
    settings["provision_records_dir"] = str(path / "records")
    inv = write_inventory(path / "inv.py", [host], settings, own_ports=True)
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-6000:]
    broken_wheel(mirror.root / "wheels", "transformers", BROKEN_TRANSFORMERS)
    return {"host": host, "inv": inv, "dir": path, "commit": commit}


def test_status_says_what_runs_and_fails_with_the_log_when_the_server_is_down(serving: dict) -> None:
    host, inv = serving["host"], serving["inv"]
    res = run_pyinfra(inv, "deploy/status.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    report = json.loads((serving["dir"] / "status.json").read_text())["hosts"][host.name]
    pid = int(host.ssh("cat /opt/triton/run/tritonserver.pid").stdout)
    assert report["ok"] is True
    sha = host.ssh("sed -n 's/^sha256=//p' /opt/triton/current/.provisioner").stdout.strip()
    assert report["triton"] == {
        "version": "2.51.0",
        "source": "pytriton",
        "sha256": sha,
        "path": host.ssh("readlink -f /opt/triton/current").stdout.strip(),
    }
    srv = report["server"]
    assert (srv["running"], srv["ready"], srv["pid"], srv["started_by"]) == (True, True, pid, "detached (pid file)")
    assert 0 < srv["uptime_s"] < 3600
    ports = triton_ports(host_index(host.name))
    assert report["listen"]["bound"]["http"] == ["127.0.0.1"]
    assert report["listen"]["ports"]["http"] == ports["triton_http_port"]
    models = {m["name"]: m for m in report["models"]}
    assert {n: m["state"] for n, m in models.items()} == {"clf": "READY", "clf_hub": "READY", "smoke": "READY"}
    assert (models["clf_hub"]["revision"], models["clf_hub"]["resolved"]) == ("main", serving["commit"])
    assert report["venv"]["python"].startswith("3.11.")
    assert report["venv"]["torch"] == {"version": artifacts.TORCH_VERSION, "variant": "cpu"}
    assert report["gpus"] == [] and report["driver"] is None
    home_used = int(host.ssh("du -sb --apparent-size /opt/triton/ | cut -f1").stdout)
    assert abs(report["disk_used"]["triton_home"] - home_used) < home_used * 0.05
    assert report["last_provision"]["result"] == "OK"
    assert f"clf_hub  READY; hub:tiny/clf@main -> {serving['commit'][:12]}" in out, out  # the table, with the commit
    # The server dies: status fails and shows the log's last lines
    host.ssh(f"kill -KILL {pid}")
    # the python backend's stubs see their parent gone and write a last line to the log as they exit
    wait_for(host, "! pgrep -f '[t]riton_python_backend_stub'", "the python stubs end after the server")
    res = run_pyinfra(inv, "deploy/status.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "NOT RUNNING (it should)" in out and "server log, last lines:" in out, out[-3000:]
    last_line = host.ssh("tail -n 1 /opt/triton/run/tritonserver.log").stdout.strip()
    assert f"| {last_line}" in out  # the log's own lines
    # Stopped on purpose: not a problem
    assert run_pyinfra(inv, "deploy/stop.py", "-y").returncode == 0
    res = run_pyinfra(inv, "deploy/status.py", "-y")
    assert res.returncode == 0 and re.search(r"\n  server +stopped\n", res.stdout), (res.stdout + res.stderr)[-3000:]
    assert run_pyinfra(inv, "deploy/serve.py", "-y").returncode == 0  # serving again for the tests below


def tarball_args(mirror, tarball: Path, name: str) -> list[str]:
    url, sha = mirror.place(tarball, f"tarballs/{name}.tar")
    args = {"triton_source": "tarball", "triton_tarball_url": url, "triton_tarball_sha256": sha}
    args["triton_tarball_strip_components"] = "1"
    return [part for k, v in args.items() for part in ("--data", f"{k}={v}")]


def provision_polled(ctx: dict, *args: str) -> tuple[int, str, float, float]:
    """Provision while a client polls: (exit status, output, seconds of the run, seconds of outage). The
    server's HTTP port is ctx's "port", else the test bed's for that host."""
    host = ctx["host"]
    poller = Poller(ctx.get("port") or triton_ports(host_index(host.name))["triton_http_port"])
    poller.start()
    deadline = time.monotonic() + 10
    while len(poller.results) < 3:  # a few answers before the run starts
        if time.monotonic() > deadline:
            pytest.fail("the poller got no answers before the run")
        time.sleep(0.05)
    started = time.monotonic()
    res = run_pyinfra(ctx["inv"], "deploy/provision.py", "-y", *args)
    took = time.monotonic() - started
    deadline = time.monotonic() + Poller.TIMEOUT_S + 5  # a request sent in the outage may wait its timeout
    while not (poller.results and poller.results[-1][1]) and time.monotonic() < deadline:
        time.sleep(0.05)  # the rollback's own proof came first; wait for the poller's next answer
    poller.stop()
    return res.returncode, res.stdout + res.stderr, took, poller.outage()


def links(host: TestHost) -> dict[str, str]:
    names = ("current", "venv", "models")
    out = host.ssh("for l in current venv models; do readlink /opt/triton/$l; done").stdout.split()
    return dict(zip(names, out, strict=True))


def server_pid(host: TestHost) -> str:
    return host.ssh("cat /opt/triton/run/tritonserver.pid").stdout.strip()


def test_a_triton_build_that_cannot_start_is_stopped_and_the_old_server_never_stops(serving: dict, mirror) -> None:
    """A build upgrade is a handover (tasks/server/handover.py): the new server starts beside the old one on
    the same ports; this one cannot start, so it is stopped, and the old one served every request."""
    host = serving["host"]
    before, pid = links(host), server_pid(host)
    bad = artifacts.triton_tarball_variant("no-libtritonserver", drop="lib/libtritonserver")
    rc, out, took, outage = provision_polled(serving, *tarball_args(mirror, bad, "bad"))
    assert rc != 0, out[-4000:]
    assert "rolling back: the new server stopped, the old one serves on" in out, out[-5000:]
    assert "libtritonserver" in out and "cause: a shared library is missing" in out, out[-4000:]
    assert "the old one never stopped serving" in out, out[-5000:]
    assert links(host) == before
    assert server_pid(host) == pid  # never restarted
    assert host.ssh("test -e /opt/triton/run/tritonserver.pid.new", check=False).returncode != 0
    assert_serves(host)
    print(f"\nfailed Triton upgrade: run {took:.1f} s, requests failed for {outage:.2f} s")
    assert outage == 0.0


def test_a_good_build_takes_over_from_the_old_server_without_a_failed_request(serving: dict, mirror) -> None:
    """The new build's server starts beside the old one, is proven on its own, and the old one then stops:
    no request fails, the metrics move to the other metrics port, the old build is kept."""
    host = serving["host"]
    before, pid = links(host), server_pid(host)
    ports = triton_ports(host_index(host.name))
    good = artifacts.triton_tarball_variant("repacked", note="the same build, repacked")
    # a client's kept connection to the old server: its graceful stop waits for it (up to its exit timeout)
    # with its ports still open, and a new connection the kernel gave it then would be reset
    kept = socket.create_connection(("127.0.0.1", ports["triton_http_port"]), timeout=30)
    kept.sendall(b"GET /v2/health/ready HTTP/1.1\r\nHost: triton\r\n\r\n")
    assert kept.recv(4096).startswith(b"HTTP/1.1 200")
    try:
        rc, out, took, outage = provision_polled(serving, *tarball_args(mirror, good, "good"))
    finally:
        kept.close()
    assert rc == 0, out[-4000:]
    handover = ports["triton_metrics_port"] + 1  # triton_metrics_handover_port's default
    assert f"the new one starts beside Triton pid {pid} (metrics on port {handover}); no restart" in out, out[-4000:]
    assert "handover: new connections to ports" in out, out[-4000:]
    after = links(host)
    assert after["current"] != before["current"] and after["venv"] == before["venv"]
    assert server_pid(host) != pid and host.ssh(f"test -d /proc/{pid}", check=False).returncode != 0
    assert host.ssh(f"test -x {before['current']}/bin/tritonserver", check=False).returncode == 0  # kept
    assert host.ssh("cat /opt/triton/current/NOTES").stdout.strip() == "the same build, repacked"
    metrics = host.ssh(
        f"python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{handover}/metrics').status)\""
    )
    assert metrics.stdout.strip() == "200"
    assert_serves(host)
    print(f"\ngood Triton upgrade: run {took:.1f} s, requests failed for {outage:.2f} s")
    assert outage == 0.0


def test_a_pin_that_breaks_the_models_imports_is_rolled_back_to_the_old_venv(serving: dict, mirror) -> None:
    """A new venv is loaded into the running server (every model reloaded onto it); its broken pin fails the
    reload, Triton keeps the loaded models serving, and the links go back: no request fails."""
    host = serving["host"]
    before, pid = links(host), host.ssh("cat /opt/triton/run/tritonserver.pid").stdout.strip()
    good = artifacts.triton_tarball_variant("repacked", note="the same build, repacked")
    # the broken wheel is the mirror's (find-links): no index publishes its digest, so the lock takes it only
    # where lock_trust_on_first_use names it (else the lock is refused before anything is installed)
    pin = [
        "--data",
        f"transformers_version={BROKEN_TRANSFORMERS}",
        "--data",
        "lock_trust_on_first_use=torch,transformers",
    ]
    rc, out, took, outage = provision_polled(serving, *tarball_args(mirror, good, "good"), *pin)
    assert rc != 0, out[-4000:]
    assert "broken on purpose" in out, out[-4000:]
    assert "keeps running (pid" in out and "rolled back to what served before" in out, out[-5000:]
    assert links(host) == before  # the old venv is in use again
    assert host.ssh("cat /opt/triton/run/tritonserver.pid").stdout.strip() == pid  # never restarted
    new_venvs = host.ssh("ls /opt/triton/venv.versions").stdout.split()
    assert len([v for v in new_venvs if v.endswith("-py3.11")]) == 2  # the new one waits beside it
    assert_serves(host)
    print(f"\nbroken pin: run {took:.1f} s, requests failed for {outage:.2f} s (the old venv's models kept serving)")
    assert outage == 0.0


def test_pruning_keeps_what_runs_and_reports_the_bytes_freed(serving: dict, mirror) -> None:
    """After the changes above the host holds older Triton installs, venvs, repositories, wheelhouses and
    downloads; with triton_keep_versions = 1 only what the server runs remains, and it keeps running."""
    host = serving["host"]
    pid = host.ssh("cat /opt/triton/run/tritonserver.pid").stdout.strip()
    good = artifacts.triton_tarball_variant("repacked", note="the same build, repacked")
    keep = ["--data", "triton_keep_versions=1"]
    count = "ls {} | grep -vc '[.]lock$' || true"
    folders = ["/opt/triton/versions", "/opt/triton/venv.versions", "/persist/wheels", "/persist/downloads"]
    before = {f: int(host.ssh(count.format(f)).stdout) for f in folders}
    assert all(n >= 2 for n in before.values()), before  # something to prune in each
    res = run_pyinfra(serving["inv"], "deploy/provision.py", "-y", *tarball_args(mirror, good, "good"), *keep)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    freed = [int(m) for m in re.findall(r"pruned \S+: .*: (\d+) bytes", out)]
    assert len(freed) >= 4 and all(n > 0 for n in freed), out[-3000:]
    after = {f: int(host.ssh(count.format(f)).stdout) for f in folders}
    assert after == dict.fromkeys(folders, 1), after
    on = links(host)
    assert host.ssh("ls /opt/triton/versions").stdout.split() == [on["current"].rsplit("/", 1)[1]]
    venvs = host.ssh("ls /opt/triton/venv.versions").stdout.split()
    assert [v for v in venvs if not v.endswith(".lock")] == [on["venv"].rsplit("/", 1)[1]]
    assert host.ssh("cat /opt/triton/run/tritonserver.pid").stdout.strip() == pid  # never stopped
    assert_serves(host)
    print(f"\nprune (keep 1): {sum(freed)} bytes ({sum(freed) / 2**30:.2f} GiB) freed in {len(freed)} folders")
    again = run_pyinfra(serving["inv"], "deploy/provision.py", "-y", *tarball_args(mirror, good, "good"), *keep)
    assert again.returncode == 0
    assert op_results(again.stdout + again.stderr)["Older versions pruned"]["success"] == 0


SMALL_LOGS = ["--data", "triton_log_max_mb=1", "--data", "triton_log_keep=2", "--data", "triton_log_check_s=1"]


def wait_for(host: TestHost, check: str, what: str, seconds: float = 30) -> None:
    """Poll a shell check on the host until it succeeds; fail naming what never happened."""
    deadline = time.monotonic() + seconds
    while host.ssh(check, check=False).returncode != 0:
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {seconds:.0f} s")
        time.sleep(0.2)


def assert_log_rotates(host: TestHost, inv: Path, run: str, serves: Callable[[], None], *args: str) -> None:
    """With a 1 MiB cap, 2 copies kept and a check every second: a log grown past the cap is rotated
    while the server runs (copied to .1, .2, never a .3; the log itself truncated, no hole of NULs in
    it after the server writes again); a stop stops the watcher too. run: the server's run dir."""
    log = shlex.quote(f"{run}/tritonserver.log")
    pid_file = shlex.quote(f"{run}/tritonserver.pid")
    res = run_pyinfra(inv, "deploy/provision.py", "-y", *args, *SMALL_LOGS)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    pid = host.ssh(f"cat {pid_file}").stdout.strip()
    grow = f"yes 'padding the log past its cap' | head -c 1600000 >> {log}"
    small = f"test $(stat -c %s {log}) -lt 1048576"
    for n in (1, 2, 3):
        host.ssh(grow)
        wait_for(host, f"test -s {log}.{min(n, 2)} && {small}", f"rotation {n} of the log")
    assert host.ssh(f"ls {log}.3", check=False).returncode != 0  # triton_log_keep = 2
    assert host.ssh(f"cat {pid_file}").stdout.strip() == pid  # never restarted
    serves()
    assert run_pyinfra(inv, "deploy/stop.py", "-y").returncode == 0  # the server writes its shutdown lines
    head = host.ssh(f"head -c 64 {log} | od -An -tx1").stdout.split()
    assert head and "00" not in head, head  # appended at the new end, not at the old offset
    # the watcher is stopped with the server, not left until its next check
    assert host.ssh("pgrep -f 'while kill -[0]'", check=False).returncode != 0, "the log watcher outlived the server"
    res = run_pyinfra(inv, "deploy/provision.py", "-y", *args)  # back to the defaults, serving
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]


def test_the_log_is_rotated_past_its_cap_without_systemd(serving: dict, mirror) -> None:
    good = artifacts.triton_tarball_variant("repacked", note="the same build, repacked")
    host = serving["host"]
    assert_log_rotates(
        host, serving["inv"], "/opt/triton/run", lambda: assert_serves(host), *tarball_args(mirror, good, "good")
    )


def _served_count(metrics_port: int) -> float:
    """Inferences of smoke the server behind the metrics port has answered (Triton's own counter)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return -1.0
    found = re.search(r'^nv_inference_request_success\{model="smoke",version="1"\} (\S+)', text, re.M)
    return float(found.group(1)) if found else 0.0


def more_served(metrics_port: int, more: int) -> None:
    """Wait until the server behind the metrics port has answered `more` inferences of smoke beyond now."""
    start, deadline = _served_count(metrics_port), time.monotonic() + 120
    while _served_count(metrics_port) < start + more:
        assert time.monotonic() < deadline, f"the clients' requests did not reach the server ({start})"
        time.sleep(0.2)


def test_behind_the_front_a_build_upgrade_fails_no_request_of_clients_that_keep_connections(
    serving: dict, mirror, tmp_path: Path
) -> None:
    """triton_upgrade = "front" (tasks/server/front_plan.py): HAProxy holds the ports, each server a slot's. The server
    moves behind the front once (a restart, said); then a build that cannot start is stopped (the old server
    serves on) and a new build is handed over, both while NVIDIA's perf_analyzer
    (HTTP: libcurl keep-alive; gRPC: one channel), a reused tritonclient gRPC client, a reused tritonclient
    HTTP client and a poller send requests through the front: none fails, and the metrics stay on their port
    (the new server's counter answers there). A second run changes nothing."""
    host = serving["host"]
    ports = triton_ports(host_index(host.name))
    http, grpc, metrics = (ports[f"triton_{name}_port"] for name in ("http", "grpc", "metrics"))
    front = ["--data", "triton_upgrade=front"]
    good = artifacts.triton_tarball_variant("repacked", note="the same build, repacked")
    res = run_pyinfra(serving["inv"], "deploy/provision.py", "-y", *tarball_args(mirror, good, "good"), *front)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert "not behind the front (started before triton_upgrade = 'front'): restarted once" in out, out[-4000:]
    assert op_results(res.stderr)["the front (HAProxy) on the server's ports"]["success"] == 1, out[-4000:]
    pid = server_pid(host)
    with clients.five_at_work(http, grpc, "smoke", tmp_path / "stop") as at_work:
        more_served(metrics, 40)  # every client at work on the old server
        bad = artifacts.triton_tarball_variant("no-libtritonserver", drop="lib/libtritonserver")
        failed = run_pyinfra(serving["inv"], "deploy/provision.py", "-y", *tarball_args(mirror, bad, "bad"), *front)
        more_served(metrics, 40)  # still the old server, through the same connections
        newer = artifacts.triton_tarball_variant("repacked-again", note="the same build, repacked again")
        res = run_pyinfra(serving["inv"], "deploy/provision.py", "-y", *tarball_args(mirror, newer, "newer"), *front)
        more_served(metrics, 40)  # and on the new one, through the same connections
    failed_out = failed.stdout + failed.stderr
    assert failed.returncode != 0 and "the old one never stopped serving" in failed_out, failed_out[-5000:]
    assert "cause: a shared library is missing" in failed_out, failed_out[-5000:]  # from the new server's log
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert f"the new one starts on slot b beside Triton pid {pid} (slot a); no restart" in out, out[-4000:]
    assert "front: every request now goes to the new server (slot b)" in out, out[-4000:]
    assert server_pid(host) != pid and host.ssh(f"test -d /proc/{pid}", check=False).returncode != 0
    print(f"\nbuild upgrade behind the front: {at_work['counts']}")
    clients.none_failed(at_work)
    again = run_pyinfra(serving["inv"], "deploy/provision.py", "-y", *tarball_args(mirror, newer, "newer"), *front)
    changed = {n: r for n, r in op_results(again.stderr).items() if n != "Grand total" and r["success"]}
    assert again.returncode == 0 and not changed, (changed, again.stderr[-3000:])
    audit = run_pyinfra(serving["inv"], "deploy/audit.py", "-y", *front)  # the front's ports are ours
    assert audit.returncode == 0 and "http: served by the front (HAProxy pid" in audit.stdout, audit.stdout[-3000:]


def test_uninstall_removes_the_install_keeps_the_caches_and_a_fresh_provision_works(serving: dict, mirror) -> None:
    host, inv = serving["host"], serving["inv"]
    res = run_pyinfra(inv, "deploy/uninstall.py", "-y")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert "apt packages are left installed (other programs may use them): " in out
    left = out.split("other programs may use them): ", 1)[1].split(";", 1)[0].split(", ")
    assert "libpython3.11" in left and all(host.ssh(f"dpkg -s {p} >/dev/null").returncode == 0 for p in left)
    assert host.ssh("pgrep -x tritonserver", check=False).returncode == 1
    gone = "/opt/triton /etc/profile.d/triton.sh"
    assert host.ssh(f"ls -d {gone} 2>/dev/null || true").stdout.strip() == ""
    assert host.ssh("id triton-server", check=False).returncode != 0
    kept = host.ssh("ls /persist").stdout.split()
    assert {"downloads", "wheels", "huggingface", "venv-snapshots", "apt"} <= set(kept), kept
    audit = run_pyinfra(inv, "deploy/audit.py", "-y")
    assert audit.returncode != 0
    assert re.search(r"MISSING +triton server +no Triton server at /opt/triton/current", audit.stdout), audit.stdout
    again = run_pyinfra(inv, "deploy/uninstall.py", "-y")
    assert again.returncode == 0
    assert all(r["success"] == 0 for n, r in op_results(again.stdout + again.stderr).items() if n != "Grand total")
    # a fresh provision works, from the caches kept on the persistent path
    started = time.monotonic()
    res = run_pyinfra(inv, "deploy/provision.py", "-y")
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    print(f"\nprovision after uninstall (caches kept): {time.monotonic() - started:.1f} s")
    assert_serves(host)
    # purge_persist takes the caches too
    res = run_pyinfra(inv, "deploy/uninstall.py", "-y", "--data", "purge_persist=True")
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert host.ssh("ls -A /persist").stdout.split() == []
