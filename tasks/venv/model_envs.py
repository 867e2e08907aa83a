"""Models' own Python environments (a Triton model folder whose pins clash with the venv's): each built as
the venv is (tasks/venv/operations.py, tasks/venv/wheelhouse.py: its own locked, hashed wheels in a wheelhouse on the
persistent path, a snapshot there for a reset), beside the venv; its model's config.pbtxt names it
(EXECUTION_ENV_PATH, tasks/models/repository.py), so a change to it reloads that model alone."""

from __future__ import annotations

from collections.abc import Mapping

from tasks.venv.plan import VenvPlan
from tasks.venv import operations as venv
from tasks.venv import wheelhouse
from tasks.network import NetworkArgs


def built(plans: Mapping[str, VenvPlan], net: NetworkArgs) -> None:
    """Each model's environment made (or unpacked from its snapshot) and holding exactly its lock."""
    for model, plan in sorted(plans.items()):
        venv.created(name=f"Model {model}: its own environment", plan=plan)
        wheelhouse.filled(name=f"Model {model}: its environment's wheels", plan=plan, **net)
        venv.packages_installed(name=f"Model {model}: its environment's packages", plan=plan)


def snapshots_saved(plans: Mapping[str, VenvPlan]) -> None:
    """A snapshot of each model's environment on the persistent path (once its stubs have run in it)."""
    for model, plan in sorted(plans.items()):
        venv.snapshot_saved(name=f"Model {model}: its environment's snapshot", plan=plan)
