"""The stubs' OpenMP wait policy (triton_omp_wait_policy): the CPU a request costs the model's stub and
what the server answers, for each policy, on one test host serving the tests' tiny classifier and the
DistilBERT-base-sized one. Each round sets the policy (a change restarts the server), then:
- "polled": one request to the tiny classifier every 50 ms, as the e2e tests' pollers send them: the
  stub's and the server's CPU per request (/proc/PID/stat) and the median answer time;
- "load": the DistilBERT-base-sized classifier at concurrency 8: texts/s and the stub's CPU per text.
Prints a median table; raw figures go to bench/results/omp_wait.json.

    .venv/bin/python -m bench.omp_wait [--runs 2] [--requests 200] [--seconds 10]

Needs root. The client shares the machine's CPUs with the server, as in bench/serving.py.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

from bench.common import REPO, pyinfra, save
from bench.serving import load, serving_host
from testbed import TestHost
from tests import tiny_models

POLICIES = {"": "unset (GNU OpenMP spins, then sleeps)", "active": "active", "passive": "passive (the default)"}
TICKS_PER_S = 100  # /proc/PID/stat's unit (USER_HZ on Linux)


def entries(model_dir: Path) -> list[dict]:
    """The DistilBERT-base-sized classifier ("small") and the tests' tiny one ("tiny"), host defaults."""
    tiny = tiny_models.make("classifier", model_dir.parent / "tiny-clf", seed=1)
    return [{"name": "small", "source": f"path:{model_dir}"}, {"name": "tiny", "source": f"path:{tiny}"}]


def cpu_ticks(host: TestHost, model: str) -> tuple[int, int]:
    """(the model's stubs' CPU ticks, the server's), read on the host."""
    out = host.ssh(
        f"for p in $(pgrep -f '^[^ ]*/triton_python_backend_stub [^ ]*/{model}/'); do cut -d' ' -f14,15 /proc/$p/stat; "
        "done | awk '{s+=$1+$2} END {print s+0}'; cut -d' ' -f14,15 /proc/$(cat /opt/triton/run/tritonserver.pid)/stat"
    ).stdout.split()
    return int(out[0]), int(out[1]) + int(out[2])


def polled(host: TestHost, port: int, requests: int) -> tuple[float, float, float]:
    """One request to the tiny classifier every 50 ms: (stub ms of CPU per request, server's, median answer ms)."""
    body = json.dumps({"inputs": [{"name": "TEXT", "shape": [1, 1], "datatype": "BYTES", "data": ["poll"]}]})
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v2/models/tiny/infer", body.encode())
    for _ in range(10):  # warm: the first requests build what later ones reuse
        urllib.request.urlopen(req, timeout=30).read()
    stub0, server0 = cpu_ticks(host, "tiny")
    answers = []
    for _ in range(requests):
        sent = time.monotonic()
        urllib.request.urlopen(req, timeout=30).read()
        answers.append(time.monotonic() - sent)
        time.sleep(0.05)
    stub1, server1 = cpu_ticks(host, "tiny")
    per = 1000 / TICKS_PER_S / requests
    return (stub1 - stub0) * per, (server1 - server0) * per, statistics.median(answers) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    figures: dict[str, dict[str, list[float]]] = {p: {} for p in POLICIES}
    with serving_host("ompw", entries) as (host, port, _, inv):
        for run in range(1, args.runs + 1):
            for policy in POLICIES:
                pyinfra(inv, "deploy/provision.py", "--data", f"triton_omp_wait_policy={policy}")
                stub, server, answer = polled(host, port, args.requests)
                before = cpu_ticks(host, "small")[0]
                rate, _ = load(port, "small", 8, args.seconds)
                per_text = (cpu_ticks(host, "small")[0] - before) * 1000 / TICKS_PER_S / max(1.0, rate * args.seconds)
                row = {"stub_ms": stub, "server_ms": server, "answer_ms": answer, "texts_s": rate, "text_ms": per_text}
                for key, value in row.items():
                    figures[policy].setdefault(key, []).append(value)
                print(f"run {run} {POLICIES[policy]}: {row}", file=sys.stderr)
    print(
        f"| policy | polled: stub CPU ms/request | server CPU ms/request | answer ms | load c8: texts/s | "
        f"stub CPU ms/text |  (median of {args.runs})\n| --- | ---: | ---: | ---: | ---: | ---: |"
    )
    for policy, label in POLICIES.items():
        m = {k: statistics.median(v) for k, v in figures[policy].items()}
        print(
            f"| {label} | {m['stub_ms']:.1f} | {m['server_ms']:.1f} | {m['answer_ms']:.1f} | {m['texts_s']:.1f} | "
            f"{m['text_ms']:.1f} |"
        )
    path = save("omp_wait", figures)
    print(f"\nraw figures: {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
