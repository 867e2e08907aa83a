"""tasks/models/scripts/model_control.py run for real (as the host runs it: `python3 -c SOURCE`) against a stand-in for
Triton's repository API on loopback that answers as Triton 2.51 does (its error texts copied from a real
server): the key is sent, loads overlap, a failed load is explained and stops the unloads, an unload is
waited for, each loaded model's files are made newer, and a name that is not a model's is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import remote

pytestmark = pytest.mark.unit

KEY = "0123abcd" * 8
HEADER = "triton-model-control"
# What Triton 2.51 answered a load of a model whose model.py imports a missing module (seen on this machine)
BROKEN = (
    "load failed for model 'broken': version 1 is at UNAVAILABLE state: Internal: ModuleNotFoundError: No module "
    "named 'nosuchmodule_x'\n\nAt:\n  /opt/triton/models/broken/1/model.py(1): <module>\n"
)


class StandIn:
    """The repository API's state: each request (verb, name, start, end), and each model's state."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, float, float]] = []
        self.states: dict[str, str] = {"old": "READY", "keep": "READY"}
        self.lock = threading.Lock()


def handler(stand_in: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def answer(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.headers.get(HEADER) != KEY:  # Triton's status and words for a restricted API without its header
                self.answer(403, {"error": f"This API is restricted, expecting header '{HEADER}'"})
                return
            parts = self.path.strip("/").split("/")
            if parts == ["v2", "repository", "index"]:
                with stand_in.lock:
                    index = [{"name": n, "version": "1", "state": s} for n, s in sorted(stand_in.states.items())]
                    for name, state in stand_in.states.items():  # an unload completes after one more look
                        if state == "UNLOADING":
                            stand_in.states[name] = "UNAVAILABLE"
                self.answer(200, index)
                return
            name, verb = parts[3], parts[4]
            started = time.monotonic()
            if verb == "load":
                time.sleep(0.3)  # a stub starting
                if name == "broken":
                    stand_in.calls.append((verb, name, started, time.monotonic()))
                    self.answer(400, {"error": BROKEN})
                    return
                stand_in.states[name] = "READY"
            else:
                stand_in.states[name] = "UNLOADING"
            stand_in.calls.append((verb, name, started, time.monotonic()))
            self.answer(200, {})

    return Handler


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[str, StandIn, Path]]:
    stand_in = StandIn()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(stand_in))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    key = tmp_path / "model-control.key"
    key.write_text(KEY)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", stand_in, key
    finally:
        server.shutdown()


def run(base: str, key: Path, models: Path, *items: str) -> subprocess.CompletedProcess:
    script = remote.source("model_control.py")
    command = [sys.executable, "-c", script, base, "", str(key), HEADER, "30", str(models), *items]  # loads over HTTP
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_loads_run_at_once_carry_the_key_and_unloads_wait_until_the_model_is_gone(api, tmp_path: Path) -> None:
    base, stand_in, key = api
    res = run(base, key, tmp_path, "load:a", "load:b", "unload:old")
    assert res.returncode == 0, res.stderr
    loads = {name: (start, end) for verb, name, start, end in stand_in.calls if verb == "load"}
    assert set(loads) == {"a", "b"}
    assert loads["a"][0] < loads["b"][1] and loads["b"][0] < loads["a"][1]  # the two loads overlapped
    unload = next(c for c in stand_in.calls if c[0] == "unload")
    assert unload[2] > max(end for _, end in loads.values())  # unloads come after every load succeeded
    assert stand_in.states == {"a": "READY", "b": "READY", "old": "UNAVAILABLE", "keep": "READY"}
    assert "loaded a through the repository API" in res.stderr and "unloaded old" in res.stderr


def test_a_failed_load_is_explained_and_nothing_is_unloaded(api, tmp_path: Path) -> None:
    base, stand_in, key = api
    res = run(base, key, tmp_path, "load:a", "load:broken", "unload:old")
    assert res.returncode == 1
    assert "model broken failed to load" in res.stderr
    assert "  | load failed for model 'broken'" in res.stderr and "nosuchmodule_x" in res.stderr
    assert "=> cause: the model's model.py (or what it loads) failed" in res.stderr, res.stderr
    assert not [c for c in stand_in.calls if c[0] == "unload"] and stand_in.states["old"] == "READY"


def test_a_swap_unloads_first_then_loads(api, tmp_path: Path) -> None:
    base, stand_in, key = api
    res = run(base, key, tmp_path, "swap:keep")
    assert res.returncode == 0, res.stderr
    assert [(verb, name) for verb, name, _, _ in stand_in.calls] == [("unload", "keep"), ("load", "keep")]


def test_without_the_key_the_api_refuses_and_the_run_fails(api, tmp_path: Path) -> None:
    base, stand_in, key = api
    key.write_text("not-the-key")
    res = run(base, key, tmp_path, "load:a")
    assert res.returncode == 1 and "This API is restricted" in res.stderr
    assert stand_in.calls == []


def test_a_name_that_is_not_a_models_is_refused_before_any_request(api, tmp_path: Path) -> None:
    base, stand_in, key = api
    for item in ("load:../etc", "load:", "drop:a", "unload:a/b"):
        res = run(base, key, tmp_path, "load:a", item)
        assert res.returncode == 2 and "not an item" in res.stderr
    assert stand_in.calls == []


def test_each_loaded_models_files_are_made_newer_and_no_link_is_followed(tmp_path: Path) -> None:
    models = tmp_path / "models"
    (models / "a" / "1").mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    outside.write_text("not the model's")
    files = [models / "a" / "config.pbtxt", models / "a" / "1" / "model.py"]
    for f in files:
        f.write_text("x")
    (models / "a" / "1" / "link").symlink_to(outside)
    old = time.time() - 3600
    for path in [*files, models / "a" / "1", models / "a", outside]:
        os.utime(path, (old, old))
    touch = [sys.executable, "-c", remote.source("model_control.py"), "--touch", str(models), "load:a", "unload:b"]
    assert subprocess.run(touch, capture_output=True, timeout=60).returncode == 0  # root's step, before the loads
    for path in [*files, models / "a" / "1", models / "a"]:
        assert path.stat().st_mtime > old + 60, path  # Triton sees every file newer: a real reload
    assert outside.stat().st_mtime == pytest.approx(old)  # the link's target untouched
