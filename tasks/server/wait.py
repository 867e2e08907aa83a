"""The wait for a server to be ready (tasks/server/scripts/wait_ready.py), as a start, a reload, a handover and
their rollbacks ask for it: one command builder for all of them (tasks/server/process.py,
tasks/server/handover.py)."""

from __future__ import annotations

from pyinfra.api import StringCommand

import remote
from tasks.server.unit import JOURNAL, READY_TIMEOUT_S, ServerPlan


def server_log(plan: ServerPlan, systemd: bool) -> str:
    """Where this start's log lines are: the unit's journal from the recorded cursor, or the log file."""
    return f"{JOURNAL}@{plan.run_dir}/journal.cursor" if systemd else f"{plan.run_dir}/tritonserver.log"


def ready(
    plan: ServerPlan, python: str, models: list[str], log: str, pid_file: str = "tritonserver.pid", handover: str = ""
) -> StringCommand:
    """Wait until the server of pid_file (in the run dir) and these models are ready (smoke inference proves
    it), or fail with log's lines that explain why ("": no log of this change's to show). handover: the old
    server's pid, whose ports are steered to this one once it listens (TRITON_HANDOVER)."""
    args = [f"{plan.run_dir}/{pid_file}", log, str(READY_TIMEOUT_S)]
    env = {"TRITON_PROOF_FILE": f"{plan.run_dir}/proof.txt"}
    if handover:
        env["TRITON_HANDOVER"] = f"{handover} {plan.user} {plan.grpc_port}"
    return remote.python(python, "wait_ready.py", plan.http_host, str(plan.http_port), *args, *models, env=env)
