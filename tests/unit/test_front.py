"""The front (tasks/server/front_plan.py, scripts/front_switch.py) on the real HAProxy from Debian's archive
(scripts/setup.sh --test installs it): a client's kept HTTP/1.1 connection is served by the old slot's
server, then, on the same connection, by the new one once switched; a request in flight on the old slot
is waited for and answered; a switch HAProxy refuses fails naming what it said."""

from __future__ import annotations

import dataclasses
import http.client
import http.server
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.layout import Layout
from config.settings import load
from tasks.server import front_plan as front

pytestmark = pytest.mark.unit
REMOTE = Path(__file__).resolve().parents[2] / "tasks" / "server" / "scripts"
sys.path.insert(0, str(REMOTE))
import front_switch  # noqa: E402  (a host script, run here as the host runs it)


def _free_base() -> int:
    """A public http port P with P..P+2, P+10..P+12 and P+20..P+22 free on loopback."""
    for base in range(21000, 30000, 100):
        wanted = [base + offset + i for offset in (0, 10, 20) for i in range(3)]
        try:
            for port in wanted:
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError("no free ports")


class _Named(http.server.BaseHTTPRequestHandler):
    """Answers its server's name, keeping the connection (HTTP/1.1); /slow after 1.5 s."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path == "/slow":
            time.sleep(1.5)
        body = self.server.name.encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _serve(port: int, name: str) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Named)
    server.name = name  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def short_home() -> str:
    """A triton_home whose runtime socket HAProxy takes (pytest's tmp_path can be longer than its 97)."""
    home = tempfile.mkdtemp(prefix="front-", dir="/tmp")
    return home


@pytest.fixture
def fronted(tmp_path: Path) -> Iterator[tuple[int, str]]:
    """HAProxy as tasks/server/front_plan.py configures it, slot a serving, both slots' HTTP servers up."""
    base = _free_base()
    ports = {"triton_http_port": base, "triton_grpc_port": base + 1, "triton_metrics_port": base + 2}
    settings = dataclasses.replace(load(ports), triton_home=short_home())
    layout = Layout(settings)
    Path(front.admin_socket(layout)).parent.mkdir(parents=True)
    config = tmp_path / "front.cfg"
    config.write_text(front.front_config(settings, layout, "a"))
    servers = [_serve(front.slot_ports(settings, slot)["http"], slot) for slot in ("a", "b")]
    proxy = subprocess.Popen(["/usr/sbin/haproxy", "-W", "-db", "-f", str(config)], stderr=subprocess.PIPE)
    sock = Path(front.admin_socket(layout))
    deadline = time.monotonic() + 20
    while not sock.exists():
        assert proxy.poll() is None and time.monotonic() < deadline, proxy.stderr.read().decode()  # type: ignore[union-attr]
        time.sleep(0.05)
    try:
        yield base, str(sock)
    finally:
        proxy.terminate()
        proxy.wait()
        for server in servers:
            server.shutdown()
            server.server_close()


def _get(conn: http.client.HTTPConnection, path: str = "/") -> str:
    conn.request("GET", path)
    response = conn.getresponse()
    assert response.status == 200
    return response.read().decode()


def test_a_kept_connection_goes_to_the_new_server_once_switched(fronted: tuple[int, str], capsys) -> None:
    port, sock = fronted
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    assert [_get(conn) for _ in range(3)] == ["a", "a", "a"]
    local = conn.sock.getsockname()
    assert front_switch.main(sock, "a", "b", "5") == 0
    assert [_get(conn) for _ in range(3)] == ["b", "b", "b"]
    assert conn.sock.getsockname() == local  # the client's connection never changed
    assert "every request to the new server (b); the old one (a): nothing in flight" in capsys.readouterr().err


def test_the_switch_waits_for_a_request_in_flight_on_the_old_server(fronted: tuple[int, str], capsys) -> None:
    port, sock = fronted
    answers: list[str] = []
    slow = threading.Thread(target=lambda: answers.append(_get(http.client.HTTPConnection("127.0.0.1", port), "/slow")))
    slow.start()
    deadline = time.monotonic() + 5
    while front_switch.in_flight(sock, "a") == 0:
        assert time.monotonic() < deadline, "the slow request never reached slot a"
        time.sleep(0.02)
    assert front_switch.main(sock, "a", "b", "10") == 0
    assert answers == ["a"]  # answered before the switch returned
    assert front_switch.in_flight(sock, "a") == 0
    slow.join()
    assert "nothing in flight there" in capsys.readouterr().err


def test_a_switch_haproxy_refuses_fails_naming_its_answer(fronted: tuple[int, str], capsys) -> None:
    _, sock = fronted
    assert front_switch.main(sock, "a", "c", "1") == 1
    assert "the front refused the switch to c: No such server." in capsys.readouterr().err


def test_ports_that_a_slot_would_take_twice_are_refused_before_anything_changes() -> None:
    from config.settings import SettingsError

    with pytest.raises(SettingsError, match=r"\[8010\] is one of the ports \[8000, 8010, 8002\] too"):
        load({"triton_upgrade": "front", "triton_grpc_port": 8010})
    assert load({"triton_upgrade": "front"}).triton_upgrade == "front"
    with pytest.raises(SettingsError, match=r"'auto' puts the servers .* \(with 'auto': where systemd runs"):
        load({"triton_grpc_port": 8010})  # the default: the front on a systemd host
    assert load({"triton_upgrade": "handover", "triton_grpc_port": 8010}).triton_grpc_port == 8010  # no slots


def test_a_triton_home_whose_runtime_socket_haproxy_would_refuse_is_refused_before_anything_changes() -> None:
    from config.settings import SettingsError

    long_home = "/opt/" + "t" * 80
    with pytest.raises(SettingsError, match=r"triton_home '/opt/t+' is too long for the front: .* at most 97"):
        load({"triton_upgrade": "front", "triton_home": long_home})
    assert load({"triton_upgrade": "handover", "triton_home": long_home}).triton_home == long_home
    fits = "/opt/" + "t" * (97 - len("/opt//run/front/admin.sock"))
    assert load({"triton_home": fits}).triton_home == fits  # 97 characters: taken


def test_auto_is_the_front_where_systemd_runs_the_host_and_a_handover_where_not() -> None:
    """triton_upgrade's default, as read_host resolves it from the host's init system; a value set stays."""
    auto = load({})
    assert auto.triton_upgrade == "auto"
    assert front.upgrade_mode(auto, systemd=True).triton_upgrade == "front"
    assert front.upgrade_mode(auto, systemd=False).triton_upgrade == "handover"
    for chosen in ("front", "handover", "restart"):
        settings = load({"triton_upgrade": chosen})
        assert front.upgrade_mode(settings, systemd=True) == front.upgrade_mode(settings, systemd=False) == settings


def _sh(command) -> subprocess.CompletedProcess:
    """A command as the operations send it (its scripts inlined), run here as root runs it on a host."""
    return subprocess.run(command.get_raw_value(), shell=True, capture_output=True, text=True, timeout=60)


def test_the_front_starts_restarts_and_stops_only_haproxy_of_its_own_pid_file(tmp_path: Path) -> None:
    """front_start.sh and front_stop.sh on the real HAProxy: a start records its pid (HAProxy holding the
    ports), a restart stops that one first, a stop ends it and forgets it; a pid file naming another
    program's process (a recycled pid) is forgotten without that process being signalled."""
    from facts.front import FrontState
    from tasks.server import front as front_tasks
    from tasks.server.unit import server_plan

    base = _free_base()
    ports = {"triton_http_port": base, "triton_grpc_port": base + 1, "triton_metrics_port": base + 2}
    settings = dataclasses.replace(load({"triton_upgrade": "front", **ports}), triton_home=short_home())
    plan = server_plan(settings, Layout(settings)).front
    assert plan is not None
    Path(plan.run_dir).mkdir(parents=True)

    def state() -> dict:
        out = _sh(FrontState().command(plan.run_dir)).stdout.splitlines()
        return dict(FrontState().process(out) if out else FrontState.default())

    assert _sh(front_tasks.started(plan, "root", systemd=False)).returncode == 0
    first = state()["pid"]
    assert first and state()["config_hash"] == plan.config_hash
    with socket.create_connection(("127.0.0.1", base), timeout=5):
        pass  # HAProxy holds the public port
    assert (
        _sh(front_tasks.started(plan, "root", systemd=False)).returncode == 0
    )  # a restart (its configuration changed)
    second = state()["pid"]
    assert second and second != first and not Path(f"/proc/{first}").exists()
    stop = _sh(front_tasks.stopped_now(plan.run_dir))
    assert stop.returncode == 0 and f"stopping the front (HAProxy pid {second})" in stop.stderr
    assert not Path(f"/proc/{second}").exists() and not Path(f"{plan.run_dir}/front.pid").exists()
    other = subprocess.Popen(["sleep", "60"])
    try:
        Path(f"{plan.run_dir}/front.pid").write_text(f"{other.pid}\n")
        assert _sh(front_tasks.stopped_now(plan.run_dir)).returncode == 0
        assert other.poll() is None and not Path(f"{plan.run_dir}/front.pid").exists()
    finally:
        other.kill()
        other.wait()
