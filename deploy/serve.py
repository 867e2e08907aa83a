"""Serve the configured models on provisioned hosts: write the model repository, start or
restart the server only when something it runs changed, wait until ready, prove by inference.

    pyinfra INVENTORY deploy/serve.py -y

Brings back a server that was killed. Refuses, naming the fix, on a host not provisioned.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyinfra import host, state
from pyinfra.api.exceptions import PyinfraError

from compat.rules import assess
from config.settings import load, load_inventory
from facts.gather import gather
from tasks.layout import Layout
from tasks.serving import serve

load_inventory(state.inventory)
settings = load(host.data.dict(), host.name)
layout = Layout(settings)
facts = gather(host, settings)
assessment = assess(facts, settings)
missing = [
    i
    for i in assessment.problems
    if i.name in ("triton server", "python backend stub", "venv", "environment") or i.name.startswith("venv ")
]
if assessment.blockers or missing:
    names = ", ".join(i.name for i in [*assessment.blockers, *missing])
    raise PyinfraError(f"{host.name} is not provisioned for serving ({names}): run deploy/provision.py first")
serve(settings, layout, assessment.decisions, [g["index"] for g in (facts.nvidia or {}).get("gpus", [])])
