"""The provisioning time per step, cold vs after a reset (ours) and the hand recipe's steps, as a
PNG from bench/results/provision.json (written by bench.provision).

    .venv/bin/python -m bench.plot [--out docs/bench-provision-steps.png]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.common import REPO, RESULTS, per_step_medians


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "bench-provision-steps.png")
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads((RESULTS / "provision.json").read_text())
    cold = per_step_medians(data["steps"]["cold"])
    reset = per_step_medians(data["steps"]["reset re-provision"])
    base = per_step_medians(data["steps"]["baseline cold"])
    fig, (ax, bx) = plt.subplots(
        2, 1, figsize=(9, 7.5), gridspec_kw={"height_ratios": [len(cold), max(len(base), 3)]}, constrained_layout=True
    )
    names = list(cold)[::-1]
    y = range(len(names))
    ax.barh([i + 0.2 for i in y], [cold[n] for n in names], height=0.4, label=f"cold: {sum(cold.values()):.0f} s")
    ax.barh(
        [i - 0.2 for i in y],
        [reset.get(n, 0) for n in names],
        height=0.4,
        label=f"after reset: {sum(reset.values()):.0f} s",
    )
    ax.set_yticks(list(y), names, fontsize=8)
    ax.set_xlabel("seconds (median per step)")
    ax.set_title("triton-provisioner: time per step on one test host")
    ax.legend(loc="lower right")
    bnames = list(base)[::-1]
    bx.barh(
        range(len(bnames)),
        [base[n] for n in bnames],
        color="grey",
        label=f"cold and after every reset: {sum(base.values()):.0f} s",
    )
    bx.set_yticks(range(len(bnames)), bnames, fontsize=8)
    bx.set_xlabel("seconds (median per step)")
    bx.set_title("the hand recipe (bench/baseline.sh)")
    bx.legend(loc="lower right")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
