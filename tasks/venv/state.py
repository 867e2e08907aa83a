"""The venv and the wheelhouse on a host as their facts show them, against the venv plan: usable, fresh (no
downloaded code in it), matching the pins, to be restored from the snapshot, or wheels at hand. Asked alike
by the venv's operations, the wheelhouse's and the offline check, so a plan agrees with itself."""

from __future__ import annotations

import hashlib

from pyinfra import host
from pyinfra.facts.files import File

from tasks.venv.plan import VenvPlan
from facts.digests import FileDigests
from facts.venv import VenvData, VenvPackages

# Stands in the venv while pip installs into it; left behind, it says that pip was cut off.
INSTALL_MARKER = ".pip-install-incomplete"
# What a fresh venv holds (ensurepip's wheels, from the base Python: root's). A venv holding anything
# else holds downloaded code (a package's .pth file runs in every interpreter started there): root runs
# no pip, uv or Python of such a venv; it downloads with a pip-only venv beside it, and installs into a
# venv made afresh.
FRESH_VENV_PACKAGES = frozenset({"pip", "setuptools"})


def usable(venv: VenvData | None, python_minor: str) -> bool:
    """The venv exists, is made from this Python minor and has pip."""
    return bool(venv and venv["python"].startswith(python_minor + ".") and venv["packages"].get("pip"))


def fresh(venv: VenvData | None) -> bool:
    """The venv exists and holds only what a fresh one does: no downloaded code that root would run."""
    return bool(venv and venv["packages"] and set(venv["packages"]) <= FRESH_VENV_PACKAGES)


def matches(venv: VenvData | None, plan: VenvPlan) -> bool:
    """The venv is usable and holds exactly the plan's versions."""
    return (
        venv is not None
        and usable(venv, plan.python_minor)
        and all(venv["packages"].get(k) == v for k, v in plan.requirements.items())
    )


def restores(venv: VenvData | None, plan: VenvPlan) -> bool:
    """The snapshot is to be unpacked: the venv (its fact) does not match and a snapshot of one that
    did is kept. Each venv operation asks the same question, so that a plan made before any of them
    runs (pyinfra without -y) agrees with itself."""
    if not plan.snapshot or matches(venv, plan):
        return False
    kept = bool(host.get_fact(File, path=plan.snapshot))  # asked either way: every run asks the same facts
    return kept and bool(plan.snapshot_sha256)  # a snapshot whose digest the controller did not keep: never


def wheels_at_hand(plan: VenvPlan) -> str | None:
    """Why no wheel needs downloading (the wheelhouse is complete, the venv comes from its snapshot,
    or offline, the venv already holds the pins), or None: then `filled` downloads."""
    marker = f"{plan.wheelhouse}/.complete"
    digests = host.get_fact(FileDigests, [marker, plan.lock_file])
    host_lock = digests.get(plan.lock_file)
    wanted = hashlib.sha256(plan.lock.encode()).hexdigest() if plan.lock else None
    if digests.get(marker) and host_lock and (wanted is None or host_lock["sha256"] == wanted):
        return f"wheelhouse {plan.wheelhouse} complete, every file recorded with its sha256"
    venv = host.get_fact(VenvPackages, plan.venv_dir)
    if restores(venv, plan):
        return f"the venv comes from {plan.snapshot}"
    if plan.offline and matches(venv, plan) and not host.get_fact(File, path=f"{plan.venv_dir}/{INSTALL_MARKER}"):
        return f"offline: {plan.venv_dir} holds the pins already"
    return None
