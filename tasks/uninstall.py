"""Taking the install away (deploy/uninstall.py): every path the provisioner made, each only where it
is ours; the caches on the persistent path stay unless purged."""

from __future__ import annotations

import posixpath

from pyinfra import host
from pyinfra.api import OperationError, QuoteString, StringCommand, operation
from pyinfra.facts.files import File

import remote
from config.layout import Layout
from config.ports import FRONT_UNIT_PATH
from facts.files import Links
from facts.server import UNIT_PATH
from facts.system import Account, InitSystem

# Folders under persist_dir that are ours: the caches a reset re-provision reads (purge_persist).
PERSIST_FOLDERS = (
    "downloads",
    "wheels",
    "uploaded-wheels",
    "venv-snapshots",
    "pip-cache",
    "apt",
    "huggingface",
    "models",
    "python-downloads",
    "uv-cache",
    "python-bytecode",
)


def removable(path: str) -> str | None:
    """Why path must not be removed wholesale ("" where it may): a top-level or system directory, in
    case a setting points there by mistake."""
    norm = posixpath.normpath(path)
    if norm.count("/") < 2 or norm in (
        "/usr/local",
        "/usr/lib",
        "/var/lib",
        "/opt/local",
        "/home/" + norm.split("/")[-1],
    ):
        return f"{path} is a top-level or system directory; remove what you want of it by hand"
    return None


def install_paths(layout: Layout) -> list[str]:
    """What provisioning made outside the persistent path, in the order it is removed."""
    return [layout.profile, layout.venv, layout.venvs, layout.model_envs, layout.home]


def persist_paths(layout: Layout) -> list[str]:
    return [f"{layout.persist}/{name}" for name in PERSIST_FOLDERS]


@operation()
def removed(paths: list[str], ours: str = ""):
    """Each path is gone: a link itself (never what it points to), a directory with what it holds.
    ours: a path (under the first directory among paths) that must exist before that one is removed,
    so that a triton_home pointed at someone else's directory is refused, not emptied."""
    for path in paths:
        why = removable(path)
        if why:
            raise OperationError(why)
    have = host.get_fact(Links, [*paths, *([ours] if ours else [])])
    present = [p for p in paths if have.get(p, {}).get("kind", "absent") != "absent"]
    if ours and have.get(ours, {}).get("kind") == "absent" and any(ours.startswith(p + "/") for p in present):
        raise OperationError(f"{ours} is missing: this does not look like an install of ours; nothing was removed")
    if not present:
        host.noop(f"already gone: {', '.join(paths)}")
        return
    yield StringCommand("rm", "-rf", "--", *(QuoteString(p) for p in present))


@operation()
def user_removed(user: str, made_users: str):
    """The server's system user is gone, its processes (stubs a killed server left) stopped first; only a
    user the provisioner made (its record names it), and it leaves the record. Another account stays."""
    account = None if user == "root" else host.get_fact(Account, user, made_users)
    if account is None:
        host.noop(f"no user {user} to remove")
        return
    if not account["made"]:
        host.noop(f"{user} was not made by the provisioner: left as it is")
        return
    yield remote.shell("user_processes_stopped.sh", user)
    yield StringCommand("userdel", QuoteString(user))
    yield StringCommand("sed", "-i", QuoteString(f"/^{user}$/d"), QuoteString(made_users))


@operation()
def unit_removed():
    """tritonserver.service and the front's unit (triton-front.service) are gone and systemd has forgotten them."""
    units = [path for path in (UNIT_PATH, FRONT_UNIT_PATH) if host.get_fact(File, path=path)]
    if not units:
        host.noop("no tritonserver.service")
        return
    systemd = host.get_fact(InitSystem)["systemd"]
    if systemd:  # none started at boot again: its link in the target's wants/ goes too
        yield StringCommand("systemctl", "disable", "--quiet", *(posixpath.basename(u) for u in units), "||", "true")
    yield StringCommand("rm", "-f", *map(QuoteString, units))
    if systemd:
        yield "systemctl daemon-reload"
