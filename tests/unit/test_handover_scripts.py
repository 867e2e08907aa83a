"""The handover's host scripts (tasks/server/handover.py) run for real, with stand-in servers: Python
processes whose command line names tritonserver, each answering HTTP with its own name on a shared port
and holding a shared gRPC-like port (SO_REUSEPORT, both): wait_ready.py's handover steers every new
connection to the new server, reuseport_steer.py back to the old one, and server_handover.sh starts the
new one beside the old, then stops the old one (finish) or the new one (abandon)."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import remote
from remote._reuseport import listening

pytestmark = pytest.mark.unit

STANDIN = """
import http.server, socket, socketserver, sys
name, http_port, grpc_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
grpc = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
grpc.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
grpc.bind(("::ffff:127.0.0.1", grpc_port))
grpc.listen(16)

class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = name.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

class Shared(socketserver.TCPServer):
    allow_reuse_address = True

    def server_bind(self):
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()

Shared(("127.0.0.1", http_port), Answer).serve_forever()
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def standin(name: str, http: int, grpc: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", STANDIN, name, str(http), str(grpc), "tritonserver"])
    listens(proc.pid, http, grpc)
    return proc


def listens(pid: int, http: int, grpc: int) -> None:
    deadline = time.monotonic() + 20
    while not (listening(pid, http) and listening(pid, grpc)):
        assert time.monotonic() < deadline, f"stand-in {pid} never listened"
        time.sleep(0.05)


def answers(http: int, count: int = 20) -> Counter:
    """Which stand-in answered each of count requests, each over a new connection."""
    seen: Counter = Counter()
    for _ in range(count):
        with urllib.request.urlopen(f"http://127.0.0.1:{http}/v2/health/ready", timeout=5) as resp:
            seen[resp.read().decode()] += 1
    return seen


@pytest.fixture
def ports() -> tuple[int, int]:
    return free_port(), free_port()


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen]]:
    started: list[subprocess.Popen] = []
    yield started
    for proc in started:
        proc.kill()
        proc.wait()


def test_the_wait_steers_new_connections_to_the_new_server_and_the_steer_script_back(
    tmp_path: Path, ports: tuple[int, int], procs: list[subprocess.Popen], monkeypatch: pytest.MonkeyPatch
) -> None:
    http, grpc = ports
    old = standin("old", http, grpc)
    procs.append(old)
    new = standin("new", http, grpc)
    procs.append(new)
    assert set(answers(http, 40)) == {"old", "new"}  # the kernel's own spread, before any steering
    (tmp_path / "old.pid").write_text(f"{old.pid}\n")
    (tmp_path / "new.pid").write_text(f"{new.pid}\n")
    (tmp_path / "log").write_text("--- start (beside)\n")
    monkeypatch.setenv("TRITON_HANDOVER", f"{old.pid} root {grpc}")
    monkeypatch.setenv("TRITON_PROOF_FILE", str(tmp_path / "proof"))
    wait_ready = remote.load("wait_ready.py")
    assert wait_ready.main("127.0.0.1", str(http), str(tmp_path / "new.pid"), str(tmp_path / "log"), "30") == 0
    assert answers(http) == Counter(new=20)
    proof = (tmp_path / "proof").read_text()
    assert f"handover: new connections to ports {http} and {grpc} go to Triton pid {new.pid}, not {old.pid}" in proof
    steer = remote.load("reuseport_steer.py")
    assert steer.main("root", str(tmp_path / "old.pid"), str(http), str(grpc)) == 0
    assert answers(http) == Counter(old=20)


def test_the_wait_fails_naming_a_new_server_that_exits_before_it_listens(
    tmp_path: Path, ports: tuple[int, int], procs: list[subprocess.Popen], monkeypatch: pytest.MonkeyPatch
) -> None:
    http, grpc = ports
    old = standin("old", http, grpc)
    procs.append(old)
    gone = subprocess.Popen(["true"])
    gone.wait()
    (tmp_path / "new.pid").write_text(f"{gone.pid}\n")
    (tmp_path / "log").write_text('--- start (beside)\nE1201 10:00:00.000000 1 main.cc:1] "failed to start"\n')
    monkeypatch.setenv("TRITON_HANDOVER", f"{old.pid} root {grpc}")
    wait_ready = remote.load("wait_ready.py")
    assert wait_ready.main("127.0.0.1", str(http), str(tmp_path / "new.pid"), str(tmp_path / "log"), "30") == 1
    assert answers(http) == Counter(old=20)  # nothing was steered away from the old one


def alive(pid: int) -> bool:
    """pid runs (a zombie left for init to reap does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def handover(mode: str, run: Path, launcher: Path) -> subprocess.CompletedProcess:
    script = remote.source("server_handover.sh")
    args = [mode, str(run), str(launcher), "HASH", "root", "", "", "", "", "", ""]
    return subprocess.run(["sh", "-c", script, "server_handover.sh", *args], capture_output=True, text=True, timeout=90)


def test_the_new_server_starts_beside_the_old_then_takes_its_place_or_is_stopped(
    tmp_path: Path, ports: tuple[int, int], procs: list[subprocess.Popen]
) -> None:
    http, grpc = ports
    run = tmp_path / "run"
    run.mkdir()
    launcher = tmp_path / "launcher"
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} -c '{STANDIN}' next {http} {grpc} tritonserver\n")
    launcher.chmod(0o755)
    old = standin("old", http, grpc)
    procs.append(old)
    (run / "tritonserver.pid").write_text(f"{old.pid}\n")

    started = handover("start", run, launcher)
    assert started.returncode == 0, started.stderr
    new = int((run / "tritonserver.pid.new").read_text())
    listens(new, http, grpc)
    assert (run / "tritonserver.pid").read_text().strip() == str(old.pid) and old.poll() is None
    finished = handover("finish", run, launcher)
    assert finished.returncode == 0, finished.stderr
    assert old.wait(timeout=10) is not None  # stopped (TERM)
    assert (run / "tritonserver.pid").read_text().strip() == str(new)
    assert (run / "config.hash").read_text().strip() == "HASH" and not (run / "tritonserver.pid.new").exists()

    started = handover("start", run, launcher)
    assert started.returncode == 0, started.stderr
    newer = int((run / "tritonserver.pid.new").read_text())
    listens(newer, http, grpc)
    abandoned = handover("abandon", run, launcher)
    assert abandoned.returncode == 0, abandoned.stderr
    assert not alive(newer) and not (run / "tritonserver.pid.new").exists()
    assert Path(f"/proc/{new}").exists() and (run / "tritonserver.pid").read_text().strip() == str(new)
    os.kill(new, 9)


@pytest.mark.parametrize("shared", [True, False])
def test_the_server_state_says_whether_the_server_shares_its_ports_and_its_metrics_port(
    tmp_path: Path, procs: list[subprocess.Popen], shared: bool
) -> None:
    """facts.server.ServerState read from a running stand-in's command line, as Triton's would read."""
    from facts.server import ServerState

    flags = ["--reuse-http-port", "true", "--reuse-grpc-port", "true"] if shared else []
    argv = ["tritonserver", "--model-repository", "/m", "--metrics-port", "8003", *flags, "--strict-readiness", "false"]
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *argv])
    procs.append(server)
    (tmp_path / "tritonserver.pid").write_text(f"{server.pid}\n")
    command = ServerState().command(str(tmp_path), "127.0.0.1", 1, "/m").get_raw_value()
    output = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30).stdout.splitlines()
    state = ServerState().process(output)
    assert state["pid"] == server.pid
    assert state["reuse_ports"] is shared and state["metrics_port"] == 8003
    assert state["user"] == pwd.getpwuid(os.geteuid()).pw_name  # who a second server must be to share the ports


def test_only_a_server_of_this_install_in_this_pid_namespace_is_called_stale(
    tmp_path: Path, procs: list[subprocess.Popen]
) -> None:
    """The review's: a containerised Triton (its processes are in this machine's /proc) with the same model
    repository was called stale and stopped by a provision. Three servers with that repository, none in the
    pid file: one run from an executable under triton_home (ours, stale), one from another install, one from
    ours but in a PID namespace of its own (a container's)."""
    from facts.server import ServerState

    home = tmp_path / "home"
    (home / "run").mkdir(parents=True)
    (home / "versions" / "b" / "bin").mkdir(parents=True)
    ours = home / "versions" / "b" / "bin" / "tritonserver"
    shutil.copy2(os.path.realpath("/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable), ours)
    argv = ["-c", "import time; time.sleep(60)", "tritonserver", "--model-repository", "/m", "--http-port", "1"]
    stale = subprocess.Popen([str(ours), *argv])
    other_install = subprocess.Popen([sys.executable, *argv])
    container = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", str(ours), *argv])
    procs.extend([stale, other_install, container])
    deadline = time.monotonic() + 10
    while len([p for p in Path("/proc").glob("[0-9]*") if _cmdline_has(p, b"--model-repository\0/m\0")]) < 3:
        assert time.monotonic() < deadline, "the three stand-ins never started"
        time.sleep(0.02)
    command = ServerState().command(str(home / "run"), "127.0.0.1", 1, "/m").get_raw_value()
    output = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30).stdout.splitlines()
    assert ServerState().process(output)["stale"] == [stale.pid]


def _cmdline_has(proc: Path, words: bytes) -> bool:
    try:
        return words in (proc / "cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.parametrize(
    ("services", "args", "ports", "where"),
    [
        (("metrics",), ["--http-port", "8000"], {"metrics": "8003"}, "on the same ports"),
        # behind the front: the other slot's three ports (the unit's own come from its slot file)
        (("http", "grpc", "metrics"), [], {"http": "8020", "grpc": "8021", "metrics": "8022"}, "on the other slot"),
    ],
)
def test_the_units_reload_starts_a_new_server_only_when_the_provisioner_asks_and_on_its_ports(
    tmp_path: Path, services: tuple[str, ...], args: list[str], ports: dict[str, str], where: str
) -> None:
    """ExecReload's script (tasks/server/unit.py), run as systemd runs it: without the handover's ports in
    its environment it starts nothing; with them, the launcher with the unit's arguments and those ports, in
    a session of its own (its stubs a group a stop can end), detached (the reload returns at once)."""
    from tasks.server.unit import HANDOVER_VARS, _reload_starts

    record = tmp_path / "argv"
    launcher = tmp_path / "triton-server"
    launcher.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" "sid=$(ps -o sid= -p $$)" "pid=$$" > {record}.tmp\n'
        f"mv {record}.tmp {record}\nsleep 30\n"
    )
    launcher.chmod(0o755)
    argv = ["sh", "-c", _reload_starts(services), str(launcher), *args, "--load-model", "*"]
    env = {"PATH": os.environ["PATH"], "MAINPID": "4242"}
    nothing = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=10)
    assert nothing.returncode == 0 and "nothing to do" in nothing.stdout
    assert not record.exists()
    said = tmp_path / "journal"  # the server keeps the reload's output open (the journal's stream there)
    started = time.monotonic()
    asked_env = {**env, **{HANDOVER_VARS[service]: port for service, port in ports.items()}}
    with said.open("w") as out:
        asked = subprocess.run(argv, env=asked_env, stdout=out, timeout=10)
    assert asked.returncode == 0 and time.monotonic() - started < 5  # it did not wait for the server
    deadline = time.monotonic() + 10
    while not record.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = record.read_text().splitlines()
    pid = lines[-1].removeprefix("pid=")
    try:
        wanted = [*args, "--load-model", "*", *(w for s in services for w in (f"--{s}-port", ports[s]))]
        assert lines[: len(wanted)] == wanted
        assert lines[-2].removeprefix("sid=").strip() == pid  # it leads a session of its own
        assert said.read_text().strip() == f"--- start (beside Triton pid 4242, {where}): pid {pid}"
    finally:
        os.kill(int(pid), 9)
