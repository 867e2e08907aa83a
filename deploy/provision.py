"""Provision Triton Inference Server on every host of the inventory, idempotently.

    pyinfra INVENTORY deploy/provision.py -y

Reads the host, applies the compatibility rules (the audit's) and refuses on a blocker
before changing anything; then installs each step as an operation that changes only what
differs, serves the configured models and proves them by inference. A second run changes
nothing.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from config.secrets import mask_output
from run import batch
from tasks.provision import provision_host

mask_output()  # URL passwords are masked in every line pyinfra prints
batch.one_round_trip()  # each host read in one round trip, from the last run's list (run/batch.py)

provision_host()
