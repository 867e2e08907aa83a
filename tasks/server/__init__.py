"""The server: where it is started, restarted, handed over and stopped, in one folder. Its rules (what the
planner reads), then its operations.

Rules (RULES: the planner, planner/, imports these; they import no operation):
- `unit.py`: tritonserver's arguments, its launcher, its systemd unit, and why a running server must be
  (re)started (`why_start`): the decision serve_models.py acts on;
- `front_plan.py`: the front (triton_upgrade = "front", and "auto" under systemd): HAProxy's
  configurations, the slots' ports, the slot file.

Operations (pyinfra operations and the commands they send):
- `process.py`: the server running, ready and proven (started, restarted, rolled back), or stopped;
- `handover.py`: a build upgrade without a failed request (beside the old one, or behind the front);
- `front.py`: HAProxy started, switched, stopped;
- `wait.py`: the wait for readiness (a start, a reload, a handover);
- `switch.py`: the links (build, venv, models) switched as one before a start;
- `scripts/`: the host scripts they send (server_start.sh ... wait_ready.py), found by name by remote.shell.

What the server's facts read is pyinfra's room: facts/server.py (ServerState, ServerStatus), facts/front.py.
"""

RULES = ("unit", "front_plan")
