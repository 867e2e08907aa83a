"""Serving defaults from the host: the same DistilBERT-base-sized classifier served on a test host
with different copies (instance_count), torch threads per copy (intra_op_threads) and batch sizes,
at concurrency 8 and 32, against the in-process loop (batch 8 and 16); "host defaults" is a model
entry that sets none of them (tasks/models/serving.py decides). Prints a median table; raw figures go to
bench/results/serving_defaults.json.

    .venv/bin/python -m bench.serving_defaults [--runs 3] [--seconds 10]

Needs root. The client shares the machine's CPUs with the server, as in bench/serving.py.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from bench.common import REPO, save
from bench.serving import Figures, in_process, measure_round, serving_host, table_rows

CONCURRENCY = (8, 32)
# name -> the model entry's serving keys (the rest as a user's entry leaves them)
VARIANTS: dict[str, dict] = {
    "clf_db": {
        "instance_count": 1,
        "max_batch_size": 8,
        "preferred_batch_sizes": [8],
    },  # before: 1 copy, torch's threads
    "c2_t1": {"instance_count": 2, "intra_op_threads": 1, "max_batch_size": 8, "preferred_batch_sizes": [8]},
    "c2_t2": {"instance_count": 2, "intra_op_threads": 2, "max_batch_size": 8, "preferred_batch_sizes": [8]},
    "c1_b16": {"instance_count": 1, "max_batch_size": 16, "preferred_batch_sizes": [16]},
    "c2_t1_b16": {"instance_count": 2, "intra_op_threads": 1, "max_batch_size": 16, "preferred_batch_sizes": [16]},
    "host_defaults": {},
}
LABELS = {
    "clf_db": "1 copy, torch's own threads, batch 8 (before)",
    "c2_t1": "2 copies x 1 thread, batch 8",
    "c2_t2": "2 copies x 2 threads, batch 8",
    "c1_b16": "1 copy, torch's own threads, batch 16",
    "c2_t1_b16": "2 copies x 1 thread, batch 16",
    "host_defaults": "host defaults (nothing set)",
}


def entries(model_dir: Path) -> list[dict]:
    """One model entry per variant, all of the same classifier."""
    return [{"name": name, "source": f"path:{model_dir}", **serving} for name, serving in VARIANTS.items()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    ceiling: dict[int, list[float]] = {8: [], 16: []}
    figures: Figures = {}
    with serving_host("servd", entries) as (host, port, res, _):
        plan = [line for line in res.stdout.splitlines() if "instance(s) x" in line]
        for run in range(1, args.runs + 1):
            for batch in ceiling:
                ceiling[batch].append(in_process(host, "path:/persist/models/clf_db", args.seconds, batch))
            measure_round(port, VARIANTS, CONCURRENCY, args.seconds, figures)
            print(f"run {run}: in-process {ceiling[8][-1]:.1f} / {ceiling[16][-1]:.1f} texts/s", file=sys.stderr)
    best = {b: statistics.median(v) for b, v in ceiling.items()}
    print(f"in-process ceiling (median of {args.runs}): batch 8 {best[8]:.1f} texts/s, batch 16 {best[16]:.1f}\n")
    print("what the plan said for the host defaults: " + "; ".join(line.strip() for line in plan[-1:]) + "\n")
    print(
        f"| serving | concurrency | texts/s (median of {args.runs}) | p50 ms | p99 ms | of in-process batch 8 |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: |"
    )
    print("\n".join(table_rows(figures, ceiling[8], LABELS)))
    path = save(
        "serving_defaults",
        {"ceiling": ceiling, "figures": {m: {str(c): v for c, v in f.items()} for m, f in figures.items()}},
    )
    print(f"\nraw figures: {path.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
