"""Serve the configured models on provisioned hosts: write the model repository, start or
restart the server only when something it runs changed, wait until ready, prove by inference.

    pyinfra INVENTORY deploy/serve.py -y

Brings back a server that was killed. Refuses, naming the fix, on a host not provisioned.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from config.secrets import mask_output
from run import batch
from tasks.serve_models import serve_host

mask_output()  # URL passwords are masked in every line pyinfra prints
batch.one_round_trip()  # each host read in one round trip, from the last run's list (run/batch.py)

serve_host()
