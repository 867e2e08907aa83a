"""Take Triton away from every host of the inventory: the server stopped, its systemd unit, the login
profile, the launcher, the install root (every Triton build, model repository, run directory) and
the venvs removed, and the HuggingFace token. The caches on the persistent path stay, so a later
provision is fast, unless `purge_persist = True`. apt packages stay (other programs may use them);
the run lists them.

    pyinfra INVENTORY deploy/uninstall.py -y
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyinfra import host, state
from pyinfra.facts.deb import DebPackages

from config.secrets import mask_output
from planner.reading import read_host
from run import batch
from tasks import uninstall
from tasks.server import process as server_process
from tasks.server.unit import server_plan
from tasks.triton.build import runtime_packages

mask_output()  # URL passwords are masked in every line pyinfra prints
batch.one_round_trip()  # each host read in one round trip, from the last run's list (run/batch.py)

reading = read_host(host, state.inventory)
settings, layout = reading.settings, reading.layout
wanted = runtime_packages(reading.facts, settings, reading.assessment.decisions.python)
have = host.get_fact(DebPackages) or {}
kept = [p for p in wanted if p in have]  # the runtime libraries Triton needs here, installed
print(
    f"== uninstall of {host.name}: apt packages are left installed (other programs may use them): "
    f"{', '.join(kept) or 'none'}"
    + (
        "; the caches on the persistent path are purged"
        if settings.purge_persist
        else f"; caches kept in {layout.persist}"
    ),
    flush=True,
)

server_process.stopped(name="Triton server stopped", plan=server_plan(settings, layout))
uninstall.unit_removed(name="tritonserver.service removed")
uninstall.removed(
    name="Install root, venvs and profile removed", paths=uninstall.install_paths(layout), ours=layout.versions
)
uninstall.removed(name="HuggingFace token removed", paths=[f"{layout.hf_home}/token"])
uninstall.removed(
    name="Network settings and model-control key removed",
    paths=[layout.network_settings_file, layout.model_control_key],
)
if settings.purge_persist:
    uninstall.removed(name="Caches on the persistent path purged", paths=uninstall.persist_paths(layout))
uninstall.user_removed(
    name=f"System user {settings.triton_user} removed", user=settings.triton_user, made_users=layout.made_users
)
