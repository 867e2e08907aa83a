"""Triton's real clients as users run them, for the tests and benchmarks that count failed requests through a
change: a reused `tritonclient.grpc` client (one channel), a reused `tritonclient.http` client (keep-alive
connections), a poller that opens a connection per request, and NVIDIA's perf_analyzer.

    python -m tests.clients KIND PORT MODEL STOP_FILE MAX_SECONDS

runs one client (KIND grpc, http or poller) against 127.0.0.1:PORT until STOP_FILE exists (or MAX_SECONDS),
then prints {"ok": N, "failed": N, "errors": [...]}. MODEL is `fast` (bench/reuse_port.py: FP32 X -> Y) or
`smoke` (templates/models/smoke: a string TEXT -> UPPER)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def perf_env() -> dict[str, str]:
    """perf_analyzer's environment: libcudart.so.12 from the nvidia-cuda-runtime-cu12 wheel (requirements-test)."""
    site = Path(sys.executable).parents[1] / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    lib = site / "site-packages" / "nvidia" / "cuda_runtime" / "lib"
    if not (lib / "libcudart.so.12").exists():
        raise RuntimeError(
            "perf_analyzer needs libcudart.so.12: the nvidia-cuda-runtime-cu12 wheel (requirements-test)"
        )
    return {**os.environ, "LD_LIBRARY_PATH": str(lib)}


def perf_analyzer(model: str, protocol: str, port: int, *load: str) -> subprocess.Popen:
    """perf_analyzer on model over protocol (http: libcurl keep-alive; grpc: one channel), with these load
    arguments; a string input is sent as "poll". It stops at its first failed request (`Thread [N] had error`)."""
    argv = [str(Path(sys.executable).parent / "perf_analyzer"), "-m", model, "-u", f"127.0.0.1:{port}", "-i", protocol]
    strings = ["--string-data", "poll"] if model == "smoke" else []
    return subprocess.Popen(
        [*argv, *strings, *load], env=perf_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _request(kind: str, client: Any, module: Any, port: int, model: str) -> None:
    import numpy as np

    if client is None:  # the poller: a new connection for each request
        inputs = (
            [{"name": "TEXT", "datatype": "BYTES", "shape": [1, 1], "data": ["poll"]}]
            if model == "smoke"
            else [{"name": "X", "datatype": "FP32", "shape": [1], "data": [1.0]}]
        )
        url = f"http://127.0.0.1:{port}/v2/models/{model}/infer"
        body = json.dumps({"inputs": inputs}).encode()
        with urllib.request.urlopen(urllib.request.Request(url, body), timeout=30) as response:
            response.read()
        return
    if model == "smoke":
        x = module.InferInput("TEXT", [1, 1], "BYTES")
        x.set_data_from_numpy(np.array([[b"poll"]], dtype=np.object_))
    else:
        x = module.InferInput("X", [1], "FP32")
        x.set_data_from_numpy(np.ones(1, dtype=np.float32))
    client.infer(model, [x])


def client_loop(kind: str, port: int, model: str, stop_file: str, max_seconds: float) -> dict[str, Any]:
    """One client until stop_file exists (or max_seconds): its counts and its first errors."""
    counts: dict[str, Any] = {"ok": 0, "failed": 0, "errors": []}
    if kind == "grpc":
        import tritonclient.grpc as module
    else:
        import tritonclient.http as module  # type: ignore[no-redef]
    client = module.InferenceServerClient(f"127.0.0.1:{port}") if kind != "poller" else None
    stop = time.monotonic() + max_seconds
    while time.monotonic() < stop and not (stop_file and os.path.exists(stop_file)):
        try:
            _request(kind, client, module, port, model)
            counts["ok"] += 1
        except Exception as exc:  # a failed request is the measurement
            counts["failed"] += 1
            if len(counts["errors"]) < 5:
                counts["errors"].append(f"{type(exc).__name__}: {str(exc)[:200]}")
        time.sleep(0.02)
    return counts


def started(kind: str, port: int, model: str, stop_file: str, max_seconds: float) -> subprocess.Popen:
    """One client in a process of its own (gRPC and gevent each keep their own threads)."""
    argv = [sys.executable, "-m", "tests.clients", kind, str(port), model, stop_file, str(max_seconds)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def counted(process: subprocess.Popen) -> dict[str, Any]:
    """A started client's counts, once it has stopped."""
    out, _ = process.communicate(timeout=120)
    lines = out.strip().splitlines()
    if process.returncode != 0 or not lines:
        raise RuntimeError(f"the client failed (exit {process.returncode}): {out[-2000:]}")
    return json.loads(lines[-1])


@contextmanager
def five_at_work(http: int, grpc: int, model: str, stop_file: Path) -> Iterator[dict[str, Any]]:
    """The five clients a change must not fail (a reused gRPC client, a reused HTTP client, a poller, and
    perf_analyzer over HTTP and over gRPC at 10 requests a second) at work on these ports while the block runs;
    then stopped, the yielded dict given "counts" (each client's), "alive" and "said" (each perf_analyzer's:
    still running, its output). Each failure check: `none_failed`."""
    users = {kind: started(kind, grpc if kind == "grpc" else http, model, str(stop_file), 900)
             for kind in ("grpc", "http", "poller")}  # fmt: skip
    load = ("--request-rate-range", "10:10", "--request-count", "1000000")  # until stopped, or its first failure
    perf = {protocol: perf_analyzer(model, protocol, grpc if protocol == "grpc" else http, *load)
            for protocol in ("http", "grpc")}  # fmt: skip
    result: dict[str, Any] = {}
    try:
        yield result
    finally:
        stop_file.touch()
        result["counts"] = {kind: counted(process) for kind, process in users.items()}
        result["alive"] = {protocol: process.poll() is None for protocol, process in perf.items()}
        for process in perf.values():
            process.kill()
        result["said"] = {protocol: process.communicate()[0] for protocol, process in perf.items()}


def none_failed(result: dict[str, Any]) -> None:
    """Fail naming the client where any of five_at_work's clients saw a failed request (or answered none)."""
    for kind, count in result["counts"].items():
        assert count["failed"] == 0 and count["ok"] > 0, (kind, count)
    for protocol, said in result["said"].items():  # perf_analyzer stops at its first failed request
        assert result["alive"][protocol] and "had error" not in said, (protocol, said[-2000:])


if __name__ == "__main__":
    kind, port, model, stop_file, max_seconds = sys.argv[1:6]
    print(json.dumps(client_loop(kind, int(port), model, stop_file, float(max_seconds))))
