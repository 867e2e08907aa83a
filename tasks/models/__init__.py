"""The models, in one folder: how each is served on this host, where it comes from (a path, the hub, a
Triton folder), the model repository, and changes loaded into the running server without a restart.

Rules (RULES: the planner, planner/, imports these; they import no operation):
- `serving.py`: how each model is served where its entry does not say (instances, batching, device), the
  backends and pins a Triton folder needs.

Operations:
- `repository.py`: each model's source fetched or uploaded, the repository written and switched;
- `control.py`: models loaded, reloaded and unloaded through Triton's repository API;
- `hub_relay.py`: a hub model's files through the controller, for many hosts;
- `scripts/`: the host scripts they send (hub_fetch.py, hub_record.py, model_control.py).

Their facts: facts/hub.py (HubSnapshot), facts/memory.py (ModelMemory).
"""

RULES = ("serving",)
