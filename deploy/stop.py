"""Stop our Triton server on every host: the pid we recorded, and only if it is a tritonserver.

pyinfra INVENTORY deploy/stop.py -y
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyinfra import host, state

from config.layout import Layout
from config.secrets import mask_output
from config.settings import load, load_inventory
from tasks.server.process import stopped
from tasks.server.unit import server_plan

mask_output()  # URL passwords are masked in every line pyinfra prints

load_inventory(state.inventory)
settings = load(host.data.dict(), host.name)
stopped(name="Triton server stopped", plan=server_plan(settings, Layout(settings)))
