"""What stands between a build upgrade and zero failed requests (issue 32 part 1), measured on the real
Triton: two servers on the same HTTP and gRPC ports (`--reuse-http-port`, `--reuse-grpc-port`), requests
in flight on both, the old one stopped with SIGTERM while clients poll over new connections (HTTP) and
over one kept gRPC channel; once as is, once with the ports' SO_REUSEPORT groups steered to the new
server first, as the provisioner's handover does (remote/_reuseport.py: a classic BPF program, `return K`,
attached to each group: the kernel then hands every new connection to socket K, the new server's first).

    python -m bench.reuse_port [--runs 1] [--seconds 8]

Runs on this machine as the current user, with the pytriton wheel's Triton from the test bed's cache
(tests/e2e/artifacts.py) and this venv's Python for the stub (3.11, numpy < 2). No GPU, no test host.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from remote._reuseport import steer_ports

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


class Server:
    """One tritonserver on the given ports (shared with another where reuse), started and waited for."""

    def __init__(self, root: Path, ports: dict[str, int], name: str, reuse: bool, exit_timeout_s: int = 30) -> None:
        env = {**os.environ, "LD_LIBRARY_PATH": str(root / "tritonserver" / "lib")}
        env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"  # the stub's python3 and numpy: this venv's
        self.log = root / f"{name}.log"
        argv = [
            str(root / "tritonserver" / "bin" / "tritonserver"),
            f"--model-repository={root / 'repo'}", f"--backend-directory={root / 'tritonserver' / 'backends'}",
            "--http-address=127.0.0.1", "--grpc-address=127.0.0.1", "--metrics-address=127.0.0.1",
            f"--http-port={ports['http']}", f"--grpc-port={ports['grpc']}", f"--metrics-port={ports['metrics']}",
            f"--reuse-http-port={str(reuse).lower()}", f"--reuse-grpc-port={str(reuse).lower()}",
            f"--exit-timeout-secs={exit_timeout_s}", "--model-control-mode=explicit", "--load-model=fast",
            "--load-model=slow",
        ]  # fmt: skip
        with self.log.open("w") as log:
            self.process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while not self.ready(ports["http"]):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.1)

    def ready(self, port: int) -> bool:
        """Its own log says both its services listen, and the HTTP port answers ready (on a shared port that
        answer may be the other server's: the log is this one's)."""
        if "Started GRPCInferenceService" not in self.log.read_text():
            return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

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

    old = Server(root, {"http": HTTP, "grpc": GRPC, "metrics": HTTP + 2}, "old", reuse=True)
    new = Server(root, {"http": HTTP, "grpc": GRPC, "metrics": HTTP + 12}, "new", reuse=True)
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
            # what the provisioner's handover does (tasks/server/scripts/wait_ready.py): past the old one's sockets
            steer_ports(old.process.pid, [HTTP, GRPC], lambda held: held, os.geteuid())
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
