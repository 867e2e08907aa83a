"""Clients that keep their connections through a build upgrade (issue 56 part 2), measured on the real
Triton with the real clients: NVIDIA's perf_analyzer over HTTP (libcurl keep-alive) and gRPC, a reused
`tritonclient.grpc` client, a reused `tritonclient.http` client (geventhttpclient keep-alive) and a poller
that opens a new connection per request. Two designs, each through one handover from an old server to a
new one while every client runs:
- `steered` (the handover before the front): both servers on the public ports (SO_REUSEPORT), new
  connections steered to the new one (remote/_reuseport.py), then SIGTERM to the old one;
- `haproxy`: Debian's HAProxy on the public ports, each server on ports of its own (a slot), the backend
  switched to the new server through HAProxy's runtime socket (per request: a kept client connection stays
  with HAProxy, its next request goes to the new server), then SIGTERM to the old one.
And the front's cost at rest: perf_analyzer's throughput and p99 straight to Triton and through HAProxy,
and HAProxy's memory at rest and under that load.

    python -m bench.front [--runs 1] [--seconds 12]

Needs haproxy and libb64-0d (scripts/setup.sh --test) and the nvidia-cuda-runtime-cu12 wheel (perf_analyzer
loads libcudart.so.12 even for CPU work). Runs on this machine as the current user; no test host, no GPU.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.reuse_port import Server, prepared
from config.ports import FRONT_PROGRAM
from remote._reuseport import steer_ports
from tests import clients
from tests.clients import perf_env

PUBLIC = {"http": 18700, "grpc": 18701, "metrics": 18702}
SLOTS = {"a": {"http": 18710, "grpc": 18711, "metrics": 18712}, "b": {"http": 18720, "grpc": 18721, "metrics": 18722}}


def _settings(root: Path):
    """The provisioner's settings for the public ports here (front_plan.py derives the slots')."""
    from config.settings import load

    ports = {f"triton_{service}_port": port for service, port in PUBLIC.items()}
    return dataclasses.replace(load(ports), triton_home=str(root / "home"))


def haproxy_config(root: Path, active: str, server_close: bool = True) -> str:
    """The front as the provisioner writes it (tasks/server/front_plan.py); without server_close, the variant that
    keeps backend connections (measured at rest, below)."""
    from config.layout import Layout
    from tasks.server.front_plan import front_config

    settings = _settings(root)
    text = front_config(settings, Layout(settings), active)
    return text if server_close else text.replace("  option http-server-close\n", "")


def admin_socket(root: Path) -> Path:
    from config.layout import Layout
    from tasks.server.front_plan import admin_socket as where

    return Path(where(Layout(_settings(root))))


def switched(root: Path, old: str, new: str) -> None:
    """The provisioner's switch (tasks/server/scripts/front_switch.py): every backend to the new slot, the old
    slot drained of what it holds."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tasks" / "server" / "scripts"))
    import front_switch

    if front_switch.main(str(admin_socket(root)), old, new, "30") != 0:
        raise RuntimeError("the front refused the switch")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def perf_analyzer(protocol: str, port: int, requests: int, out: Path) -> subprocess.Popen:
    """perf_analyzer at concurrency 2 on model `fast`: until `requests` answers (or its first failure), or
    (requests 0) in 3-second windows until stable, as its figures at rest are taken."""
    count = (
        ["--request-count", str(requests)] if requests else ["--measurement-interval", "3000", "-s", "25", "-r", "20"]
    )
    argv = [
        str(Path(sys.executable).parent / "perf_analyzer"), "-m", "fast", "-u", f"127.0.0.1:{port}",
        "-i", protocol, "--concurrency-range", "2:2", *count, "-f", str(out),
    ]  # fmt: skip
    return subprocess.Popen(argv, env=perf_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def perf_figures(out: Path) -> dict[str, float]:
    """Throughput (inferences/s) and p99 (µs) from perf_analyzer's CSV."""
    with out.open() as f:
        row = next(csv.DictReader(f))
    return {"throughput": float(row["Inferences/Second"]), "p99_us": float(row["p99 latency"])}


def _clients(seconds: float, perf_requests: int, tmp: Path) -> dict[str, subprocess.Popen]:
    started = {
        kind: clients.started(kind, PUBLIC["grpc" if kind == "grpc" else "http"], "fast", "", seconds)
        for kind in ("grpc", "http", "poller")
    }
    for protocol in ("http", "grpc"):
        started[f"perf_analyzer {protocol}"] = perf_analyzer(
            protocol, PUBLIC[protocol], perf_requests, tmp / f"handover-{protocol}.csv"
        )
    return started


def perf_outcome(returncode: int, out: str) -> str:
    """perf_analyzer's run in words: "ok"; a failed request (it stops at the first: `Thread [N] had error`,
    or an error before its first request); or its closing statistics alone failing. Those compare the
    server's per-model counters before and after, and after a handover they come from another server: it
    then ends `failed to find the requested model version` with every request answered."""
    lines = out.splitlines()
    failed = [line for line in lines if "had error" in line or line.startswith("error:")]
    if failed:
        return f"a request failed (rc {returncode}): {failed[0][:120]}"
    if returncode and any("failed to find the requested model version" in line for line in lines):
        return "no request failed (its closing statistics span two servers)"
    return "no request failed" if returncode == 0 else f"rc {returncode}: {lines[-1][:120] if lines else ''}"


def _outcome(kind: str, process: subprocess.Popen) -> str:
    out, _ = process.communicate(timeout=300)
    if kind.startswith("perf_analyzer"):
        return perf_outcome(process.returncode, out)
    counts = json.loads(out.strip().splitlines()[-1])  # tests/clients.py's
    first = f" ({counts['errors'][0][:100]})" if counts["errors"] else ""
    return f"{counts['failed']} of {counts['ok'] + counts['failed']} failed{first}"


def handover(root: Path, design: str, seconds: float, perf_requests: int) -> dict[str, str]:
    """Old serving, new started, every client running, then the design's switch and SIGTERM to the old."""
    steered = design == "steered"
    old = Server(root, PUBLIC if steered else SLOTS["a"], "old", reuse=steered, exit_timeout_s=10)
    front = None if steered else _front(root, server_close=True)[0]
    new_ports = {**PUBLIC, "metrics": PUBLIC["metrics"] + 100} if steered else SLOTS["b"]
    new = Server(root, new_ports, "new", reuse=steered, exit_timeout_s=10)
    try:
        if steered:  # new connections to the old one until the new one is proven (as the handover did)
            steer_ports(old.process.pid, [PUBLIC["http"], PUBLIC["grpc"]], lambda held: 0, os.geteuid())
        clients = _clients(seconds, perf_requests, root)
        time.sleep(seconds / 3)  # every client at work on the old server: the moment of a real upgrade
        if steered:
            steer_ports(old.process.pid, [PUBLIC["http"], PUBLIC["grpc"]], lambda held: held, os.geteuid())
        else:
            switched(root, "a", "b")
        old.process.send_signal(signal.SIGTERM)
        outcome = {kind: _outcome(kind, process) for kind, process in clients.items()}
        old.process.wait(timeout=60)
        outcome["old server's log"] = "; ".join(
            line.strip()[:90] for line in old.log.read_text().splitlines() if "Timeout" in line or "Exiting" in line
        )[:200]
        return outcome
    finally:
        old.stop()
        new.stop()
        if front:
            front.terminate()
            front.wait()


def _worker(master: int) -> int:
    """The pid of HAProxy's worker (master-worker mode), once it runs."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        children = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout.split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise RuntimeError("haproxy started no worker")


UNLOAD_S = 4  # a real model's unload (freeing a torch model's memory) takes seconds: Triton's own log said ~6


def _slow_to_unload(root: Path) -> Path:
    """The repository's `fast` model, which now takes UNLOAD_S to unload (its finalize)."""
    model = root / "repo" / "fast" / "1" / "model.py"
    if "finalize" not in model.read_text():
        model.write_text(model.read_text() + f"\n    def finalize(self):\n        time.sleep({UNLOAD_S})\n")
    return root


def _front(root: Path, server_close: bool) -> tuple[subprocess.Popen, int]:
    """HAProxy in front of slot a, as configured; (its master, its worker's pid)."""
    sock = admin_socket(root)
    sock.unlink(missing_ok=True)
    sock.parent.mkdir(parents=True, exist_ok=True)
    (root / "front.cfg").write_text(haproxy_config(root, "a", server_close))
    front = subprocess.Popen([FRONT_PROGRAM, "-W", "-db", "-f", str(root / "front.cfg")], stderr=subprocess.DEVNULL)
    while not sock.exists():
        time.sleep(0.05)
    return front, _worker(front.pid)


def at_rest(root: Path, requests: int) -> list[tuple[str, str, dict[str, float], int]]:
    """perf_analyzer straight to Triton and through HAProxy (a backend connection per request, as the
    provisioner configures it, and kept), one after the other; HAProxy's RSS (master and worker) after each."""
    server = Server(root, SLOTS["a"], "rest", reuse=False, exit_timeout_s=10)
    rows: list[tuple[str, str, dict[str, float], int]] = []

    def measured(path: str, protocol: str, port: int, rss: int | None = None) -> None:
        out = root / f"rest-{len(rows)}.csv"
        done = perf_analyzer(protocol, port, requests, out)
        text, _ = done.communicate(timeout=600)
        if done.returncode:
            raise RuntimeError(text[-2000:])
        rows.append((path, protocol, perf_figures(out), rss() if rss else 0))

    try:
        for protocol in ("http", "grpc"):
            measured("straight to Triton", protocol, SLOTS["a"][protocol])
        for server_close, how in ((True, "a backend connection per request"), (False, "backend connections kept")):
            front, worker = _front(root, server_close)
            try:
                rows.append((f"HAProxy at rest ({how})", "-", {}, rss_kb(front.pid) + rss_kb(worker)))
                for protocol in ("http", "grpc"):
                    measured(
                        f"through HAProxy ({how})", protocol, PUBLIC[protocol],
                        lambda: rss_kb(front.pid) + rss_kb(worker),  # noqa: B023 (called at once)
                    )  # fmt: skip
            finally:
                front.terminate()
                front.wait()
    finally:
        server.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=12.0, help="each client's time; the switch at a third")
    parser.add_argument("--perf-requests", type=int, default=4000, help="perf_analyzer's requests in a handover")
    parser.add_argument(
        "--rest-requests", type=int, default=0, help="perf_analyzer's requests at rest (0: until stable)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = _slow_to_unload(prepared(Path(folder)))
        for _ in range(args.runs):
            for design in os.environ.get("BENCH_FRONT_DESIGNS", "steered haproxy").split():
                outcome = handover(root, design, args.seconds, args.perf_requests)
                print(f"## {design}")
                for kind, said in outcome.items():
                    print(f"- {kind}: {said}", flush=True)
        print("\n| path | protocol | inferences/s | p99 (µs) | HAProxy RSS after (KiB) |")
        print("| --- | --- | ---: | ---: | ---: |")
        for path, protocol, figures, rss in at_rest(root, args.rest_requests):
            tp, p99 = figures.get("throughput", 0), figures.get("p99_us", 0)
            print(f"| {path} | {protocol} | {tp:.0f} | {p99:.0f} | {rss} |", flush=True)


if __name__ == "__main__":
    main()
