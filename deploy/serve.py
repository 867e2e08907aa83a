"""Serve the configured models on provisioned hosts: write the model repository, start or
restart the server only when something it runs changed, wait until ready, prove by inference.

    pyinfra INVENTORY deploy/serve.py -y

Brings back a server that was killed. Refuses, naming the fix, on a host not provisioned.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyinfra import host, state

from compat.reading import read_host
from config.secrets import mask_output
from run import run_summary, timings
from tasks import network
from tasks.serve_models import serve

mask_output()  # URL passwords are masked in every line pyinfra prints

started = time.monotonic()
reading = read_host(host, state.inventory)
timings.record(state, host.name, time.monotonic() - started, reading.settings.step_timings_path)
assessment = reading.assessment
missing = assessment.not_provisioned
run_summary.summary(state)  # one line per host at the end: OK / BLOCKED / FAILED and why
if assessment.blockers or missing:
    names = ", ".join(i.name for i in [*assessment.blockers, *missing])
    run_summary.refuse(state, host, f"not provisioned for serving ({names}): run deploy/provision.py first", "serve")
else:
    # the network settings as they are now (a hub model fetched here runs in that shell)
    layout = reading.layout
    network.env_written(
        name="network settings (root-only file)", path=layout.network_settings_file, env=reading.settings.network_env
    )
    serve(reading.settings, layout, assessment.decisions, reading.gpu_ids)
