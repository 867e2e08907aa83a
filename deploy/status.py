"""What each host runs, read without changing anything: the Triton build (version, source, sha256),
the server (pid, uptime, how it was started, readiness, address and ports), each model with its
state, the revision it came from and the environment of its own it runs in, the venv's Python and
torch, GPUs, disk used, and the last provision this controller recorded.

    pyinfra INVENTORY deploy/status.py -y

Prints a table per host and writes all hosts to `status_report_path` (JSON). A host whose server
should run and does not (or is not ready) fails the run, with the server log's last lines.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyinfra import host, state
from pyinfra.facts.files import FindInFile
from pyinfra.operations import python

from config.layout import Layout
from config.secrets import mask_output
from config.settings import load, load_inventory
from config.triton_model import ENV_PARAMETER, execution_env_in
from facts.files import Links
from facts.front import FrontState
from facts.hub import HubSnapshot
from facts.nvidia import Nvidia
from facts.ports import ListeningPorts
from facts.server import ServerState, ServerStatus
from facts.system import InitSystem
from facts.triton import TritonInstall
from facts.venv import VenvPackages
from reports import status
from reports import status_table as status_report
from run import run_summary

mask_output()  # URL passwords are masked in every line pyinfra prints

load_inventory(state.inventory)
settings = load(host.data.dict(), host.name)
layout = Layout(settings)
server = host.get_fact(ServerState, layout.run, settings.http_connect_host, settings.triton_http_port, layout.models)
facts = {
    "triton": host.get_fact(TritonInstall, layout.current),
    "links": host.get_fact(Links, list(layout.links)),
    "server": server,
    "status": host.get_fact(
        ServerStatus,
        layout.run,
        settings.http_connect_host,
        settings.triton_http_port,
        server["pid"],
        layout.model_control_key,
        [layout.home, layout.persist],
    ),
    "venv": host.get_fact(VenvPackages, layout.venv),
    "nvidia": host.get_fact(Nvidia),
    "ports": host.get_fact(ListeningPorts),
    "systemd": host.get_fact(InitSystem)["systemd"],
    "front": host.get_fact(FrontState, layout.run),
}
hub = {
    m.name: (host.get_fact(HubSnapshot, layout.hub_markers, m.repo, m.revision) or "").rsplit("/", 1)[-1]
    for m in settings.models
    if m.kind == "hub"
}
envs = {  # a Triton folder's model may run in an environment of its own: its config.pbtxt names it
    m.name: execution_env_in(
        host.get_fact(FindInFile, path=f"{layout.models}/{m.name}/config.pbtxt", pattern=ENV_PARAMETER) or []
    )
    for m in settings.models
    if m.kind == "triton"
}
records = settings.on_controller(settings.provision_records_dir)
last = run_summary.last_record(records, host.name) if records else None
st = status.assemble(settings, layout, facts, hub, last, envs)
print(status_report.table(host.name, st), flush=True)
status_report.record(host.name, st, Path(settings.status_report_path))

if not st["ok"]:

    def fail(state, host) -> bool:
        host.log(f"status: {st['problem']}")
        return False

    python.call(name="Status: the server should run and does not", function=fail)
