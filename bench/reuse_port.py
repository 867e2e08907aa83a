"""What stands between a build upgrade and zero failed requests (issue 32 part 1), measured on the real
Triton: two servers on the same HTTP and gRPC ports (`--reuse-http-port`, `--reuse-grpc-port`), requests
in flight on both, the old one stopped with SIGTERM while clients poll over new connections (HTTP) and
over one kept gRPC channel; once as is, once with the ports' SO_REUSEPORT groups steered to the new
server first (a classic BPF program, `return K`, attached to each group: the kernel then hands every new
connection to socket K, the new server's first).

    python -m bench.reuse_port [--runs 1] [--seconds 8]

Runs on this machine as the current user, with the pytriton wheel's Triton from the test bed's cache
(tests/e2e/artifacts.py) and this venv's Python for the stub (3.11, numpy < 2). No GPU, no test host.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

SO_ATTACH_REUSEPORT_CBPF = 51  # <asm-generic/socket.h>; Linux >= 4.5
BPF_RET_K = 0x06  # BPF_RET | BPF_K: return the constant k
HTTP, GRPC = 18600, 18601
BODY = json.dumps({"inputs": [{"name": "X", "datatype": "FP32", "shape": [1], "data": [1.0]}]}).encode()
MODEL = """import time
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        time.sleep({delay})
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy())])
            for r in requests
        ]
"""
CONFIG = """name: "{name}"
backend: "python"
max_batch_size: 0
input [ {{ name: "X", data_type: TYPE_FP32, dims: [ 1 ] }} ]
output [ {{ name: "Y", data_type: TYPE_FP32, dims: [ 1 ] }} ]
instance_group [ {{ count: 1, kind: KIND_CPU }} ]
"""


def steer(family: socket.AddressFamily, address: str, port: int, index: int) -> None:
    """Every new connection to (address, port) goes to socket `index` of its SO_REUSEPORT group: a socket of
    ours joins the group (same user, address and port), attaches `return index`, and leaves; the program
    stays with the group. An index past the group's end falls back to the kernel's hash."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((address, port))
        sock.listen(1)
        program = (ctypes.c_uint8 * 8).from_buffer_copy(struct.pack("HBBI", BPF_RET_K, 0, 0, index))
        sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, struct.pack("@HP", 1, ctypes.addressof(program)))
    finally:
        sock.close()


def listeners(pid: int, port: int) -> int:
    """How many listening TCP sockets (v4 and v6) on port the process holds."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:  # closed since the listing
            continue
        count += target.startswith("socket:[") and target[8:-1] in inodes
    return count


class Server:
    def __init__(self, root: Path, metrics_port: int, name: str) -> None:
        env = {**os.environ, "LD_LIBRARY_PATH": str(root / "tritonserver" / "lib")}
        env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"  # the stub's python3 and numpy: this venv's
        self.log = root / f"{name}.log"
        argv = [
            str(root / "tritonserver" / "bin" / "tritonserver"),
            f"--model-repository={root / 'repo'}",
            f"--backend-directory={root / 'tritonserver' / 'backends'}",
            "--http-address=127.0.0.1", "--grpc-address=127.0.0.1", f"--http-port={HTTP}", f"--grpc-port={GRPC}",
            f"--metrics-port={metrics_port}", "--reuse-http-port=true", "--reuse-grpc-port=true",
            "--exit-timeout-secs=30", "--model-control-mode=explicit", "--load-model=fast", "--load-model=slow",
        ]  # fmt: skip
        with self.log.open("w") as log:
            self.process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while "Started HTTPService" not in self.log.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def infer_http(model: str, timeout: float) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{HTTP}/v2/models/{model}/infer", data=BODY, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        response.read()


def one_case(root: Path, steered: bool, seconds: float) -> dict[str, object]:
    """Old and new serving, 6 slow requests in flight, then (steered or not) SIGTERM to the old one."""
    import numpy as np
    import tritonclient.grpc as grpcclient

    old = Server(root, HTTP + 2, "old")
    new = Server(root, HTTP + 12, "new")
    try:
        slow: list[str] = []

        def slow_one() -> None:
            try:
                infer_http("slow", 60)
                slow.append("ok")
            except Exception as exc:  # counted, not raised: the figure is how many
                slow.append(repr(exc))

        threads = [threading.Thread(target=slow_one) for _ in range(6)]
        for thread in threads:
            thread.start()
        time.sleep(0.5)  # the slow requests accepted, on both servers
        if steered:
            steer(socket.AF_INET, "127.0.0.1", HTTP, listeners(old.process.pid, HTTP))
            steer(socket.AF_INET6, "::ffff:127.0.0.1", GRPC, listeners(old.process.pid, GRPC))
        channel = grpcclient.InferenceServerClient(f"127.0.0.1:{GRPC}")
        grpc_input = grpcclient.InferInput("X", [1], "FP32")
        grpc_input.set_data_from_numpy(np.ones(1, dtype=np.float32))
        old.process.send_signal(signal.SIGTERM)
        counts = {"http": [0, 0], "grpc": [0, 0]}
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            for protocol in counts:
                try:
                    if protocol == "http":
                        infer_http("fast", 5)  # a new connection each time
                    else:
                        channel.infer("fast", [grpc_input], client_timeout=5)  # one channel, kept
                    counts[protocol][0] += 1
                except Exception:  # a failed request is the measurement
                    counts[protocol][1] += 1
            time.sleep(0.02)
        for thread in threads:
            thread.join()
        old_exit = old.process.wait(timeout=60)
        return {"steered": steered, **counts, "slow_ok": slow.count("ok"), "slow": len(slow), "old_exit": old_exit}
    finally:
        old.stop()
        new.stop()


def prepared(folder: Path) -> Path:
    """The Triton tree (the test bed's tarball of the pytriton wheel) and a repository of two models."""
    from tests.e2e import artifacts

    with tarfile.open(artifacts.triton_tarball()) as tar:
        tar.extractall(folder, filter="data")
    stub = folder / "tritonserver" / "python_backend_stubs" / f"{sys.version_info.major}.{sys.version_info.minor}"
    shutil.copy(stub / "triton_python_backend_stub", folder / "tritonserver" / "backends" / "python")
    for name, delay in (("fast", 0), ("slow", 3)):
        (folder / "repo" / name / "1").mkdir(parents=True)
        (folder / "repo" / name / "config.pbtxt").write_text(CONFIG.format(name=name))
        (folder / "repo" / name / "1" / "model.py").write_text(MODEL.replace("{delay}", str(delay)))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = prepared(Path(folder))
        print("| case | HTTP (new connection each) ok / failed | gRPC (one channel) ok / failed", end=" ")
        print("| slow in flight answered |")
        print("| --- | ---: | ---: | ---: |")
        for _ in range(args.runs):
            for steered in (False, True):
                r = one_case(root, steered, args.seconds)
                case = "steered to the new server, then SIGTERM" if steered else "SIGTERM to the old server"
                print(f"| {case} | {r['http'][0]} / {r['http'][1]} | {r['grpc'][0]} / {r['grpc'][1]} "
                      f"| {r['slow_ok']} of {r['slow']} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
