"""What one SSH connection of the controller carries: pyinfra's put_file (its SSH connector: paramiko's SFTP,
as the controller's relay sends a file) of SIZE MiB to a fresh test host, timed; bench/fleet_model.py's --ssh.

    python -m bench.ssh_push [--mib 256] [--runs 3]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import time

from pyinfra.api import Config, Inventory, State
from pyinfra.api.connect import connect_all

import testbed
from testbed.inventory import host_data


def pushed_mbit(mib: int, runs: int) -> list[float]:
    """Mbit/s of each put_file of mib MiB of random bytes to one test host over SSH."""
    made = testbed.up(1, prefix="push")
    try:
        inventory = Inventory(([(made[0].name, host_data(made[0]))], {}))
        state = State(inventory, Config())
        connect_all(state)
        host = inventory.get_host(made[0].name)
        body = os.urandom(mib << 20)
        rates = []
        for _ in range(runs):
            started = time.monotonic()
            assert host.put_file(io.BytesIO(body), "/tmp/pushed")
            rates.append(mib * 8 * (1 << 20) / 1e6 / (time.monotonic() - started))
        return rates
    finally:
        testbed.remove(made[0].name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rates = pushed_mbit(args.mib, args.runs)
    print(
        f"put_file of {args.mib} MiB over SSH: median {statistics.median(rates):.0f} Mbit/s, "
        f"runs {[round(r) for r in rates]}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
