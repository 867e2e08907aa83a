"""Serving on CPU: a DistilBERT-base-sized text classifier served by Triton on a test host,
throughput and p50/p99 latency at concurrency 1, 8 and 32 with and without dynamic batching,
against the ceiling of the same model called in-process (the host's venv) in a loop, batch 8.

    .venv/bin/python -m bench.serving [--runs 3] [--seconds 10]

Needs root. Each request carries one text, as a user's would; the client runs on this machine
(threads, one keep-alive HTTP connection each), so it shares the CPUs with the server.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import testbed
from bench.common import REPO, inventory, pyinfra, save
from testbed import TestHost, host_index, triton_ports
from testbed.mirror import Mirror
from tests import tiny_models
from tests.e2e.artifacts import mirror_settings

CONCURRENCY = (1, 8, 32)
MODELS = {"dynamic batching": "clf_db", "no batching": "clf_nb"}


def texts(n: int, seed: int = 0) -> list[str]:
    """Short review-like sentences of 6 to 14 words from the test tokenizer's vocabulary."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(tiny_models.WORDS) for _ in range(rng.randint(6, 14))) for _ in range(n)]


def load(port: int, model: str, concurrency: int, seconds: float) -> tuple[float, list[float]]:
    """Closed loop: `concurrency` clients, each sending one text and waiting for its answer.
    Returns (texts per second, latencies in seconds) over the measured window."""
    pool = texts(256)
    stop = threading.Event()
    measuring = threading.Event()
    latencies: list[list[float]] = [[] for _ in range(concurrency)]
    errors: list[str] = []

    def client(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        k = i
        while not stop.is_set():
            body = {"inputs": [{"name": "TEXT", "shape": [1, 1], "datatype": "BYTES", "data": [pool[k % len(pool)]]}]}
            k += concurrency
            t0 = time.perf_counter()
            conn.request("POST", f"/v2/models/{model}/infer", json.dumps(body), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200:
                errors.append(data.decode()[:200])
                return
            if measuring.is_set():
                latencies[i].append(time.perf_counter() - t0)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(concurrency)]
    for t in threads:
        t.start()
    time.sleep(2)  # warm up: connections open, the batcher busy
    measuring.set()
    t0 = time.perf_counter()
    time.sleep(seconds)
    measuring.clear()
    elapsed = time.perf_counter() - t0
    stop.set()
    for t in threads:
        t.join(timeout=60)
    if errors:
        raise RuntimeError(f"{model}: {errors[0]}")
    flat = [x for per in latencies for x in per]
    return len(flat) / elapsed, flat


IN_PROCESS = """
import importlib.util, json, sys, time
spec = importlib.util.spec_from_file_location("p", "/opt/triton/models/clf_db/1/hf_pipeline.py")
p = importlib.util.module_from_spec(spec); spec.loader.exec_module(p)
pipe = p.Pipeline("text-classification", sys.argv[1])
batch, seconds = json.loads(sys.argv[2]), float(sys.argv[3])
for _ in range(3):
    pipe.run(batch)
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < seconds:
    pipe.run(batch); n += len(batch)
print(n / (time.perf_counter() - t0))
"""


def in_process(host: TestHost, source: str, seconds: float, batch: int = 8) -> float:
    """Texts per second of the model called in a loop with this batch size in the host's venv."""
    args = " ".join(shlex.quote(a) for a in (source, json.dumps(texts(batch, seed=1)), str(seconds)))
    out = host.ssh(f"/opt/triton/bin/triton-env python3 -c {shlex.quote(IN_PROCESS)} {args} 2>/dev/null").stdout
    return float(out.strip().splitlines()[-1])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@contextmanager
def serving_host(
    prefix: str, entries: Callable[[Path], list[dict]]
) -> Iterator[tuple[TestHost, int, subprocess.CompletedProcess, Path]]:
    """A test host provisioned from the local mirror with the DistilBERT-base-sized classifier under the
    model entries `entries(model_dir)` gives: (host, its HTTP port, the provision's result, its inventory);
    down after."""
    with tempfile.TemporaryDirectory() as tmp_dir, Mirror(Path(tmp_dir) / "files") as mirror:
        tmp = Path(tmp_dir)
        model_dir = tiny_models.make("small-classifier", tmp / "small-clf")
        host = TestHost(testbed.up(1, prefix=prefix)[0])
        try:
            settings = {**mirror_settings(mirror), "models": entries(model_dir)}
            inv = inventory(tmp / "inv.py", [host], settings, tmp)
            _, res = pyinfra(inv, "deploy/provision.py")
            yield host, triton_ports(host_index(host.name))["triton_http_port"], res, inv
        finally:
            testbed.down()


Figures = dict[str, dict[int, list[tuple[float, float, float]]]]


def measure_round(port: int, models: Iterable[str], concurrency: Iterable[int], seconds: float, into: Figures) -> None:
    """One round of every model at every concurrency: (texts/s, p50 ms, p99 ms) appended to `into`."""
    for model in models:
        for c in concurrency:
            rate, lat = load(port, model, c, seconds)
            into.setdefault(model, {}).setdefault(c, []).append((rate, pct(lat, 0.5) * 1000, pct(lat, 0.99) * 1000))


def table_rows(figures: Figures, ceiling: list[float], labels: dict[str, str]) -> list[str]:
    """Markdown rows: label, concurrency, medians of texts/s, p50 and p99, and the share of the ceiling."""
    rows = []
    for model, label in labels.items():
        for c, runs in figures[model].items():
            share = statistics.median(r[0] / ceil for r, ceil in zip(runs, ceiling, strict=True))
            rows.append(
                f"| {label} | {c} | {statistics.median(r[0] for r in runs):.1f} | "
                f"{statistics.median(r[1] for r in runs):.0f} | {statistics.median(r[2] for r in runs):.0f} | "
                f"{share:.0%} |"
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    ceiling: list[float] = []
    figures: Figures = {}
    entries = [
        {"name": "clf_db", "max_batch_size": 8, "preferred_batch_sizes": [8]},
        {"name": "clf_nb", "dynamic_batching": False},
    ]
    with serving_host("serve", lambda model_dir: [{**e, "source": f"path:{model_dir}"} for e in entries]) as served:
        host, port, _, _ = served
        for run in range(1, args.runs + 1):
            ceiling.append(in_process(host, "path:/persist/models/clf_db", args.seconds))
            measure_round(port, MODELS.values(), CONCURRENCY, args.seconds, figures)
            print(f"run {run}: in-process {ceiling[-1]:.1f} texts/s", file=sys.stderr)
    print(f"in-process ceiling, batch 8 (median of {args.runs}): {statistics.median(ceiling):.1f} texts/s\n")
    print(
        f"| mode | concurrency | texts/s (median of {args.runs}) | p50 ms | p99 ms | served / in-process |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: |"
    )
    print("\n".join(table_rows(figures, ceiling, {model: mode for mode, model in MODELS.items()})))
    path = save(
        "serving", {"ceiling": ceiling, "figures": {m: {str(c): v for c, v in f.items()} for m, f in figures.items()}}
    )
    print(f"\nraw figures: {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
