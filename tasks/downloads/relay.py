"""Downloads through the controller (downloads_via_controller): where a host's download goes through the
controller's cache (run/controller_cache.py), and the commands that send one file from there to a host,
which places it only once its own sha256 check agrees (tasks/downloads/scripts/staged_install.py)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pyinfra.api import FunctionCommand, StringCommand
from pyinfra.connectors.ssh import SSHConnector

from config.settings import Settings
from planner.tables import UV_WHEELS
from run import controller_cache
from tasks.downloads import private_upload
from tasks.venv import lock_digests
from tasks.venv.plan import VenvPlan


def _over_ssh(any_host) -> bool:
    return issubclass(any_host.connector_cls, SSHConnector)


def relay_dir(settings: Settings, host) -> str:
    """The controller's cache folder where this host's downloads go through it, else "": "no", a host not
    reached over SSH (@local fetches for itself), and, for "auto", an inventory of fewer than two SSH hosts
    or hosts that need a proxy (the controller may not reach what only the hosts' proxy does)."""
    choice = settings.downloads_via_controller
    if choice == "no" or not _over_ssh(host):
        return ""
    if choice == "auto" and (settings.proxy_env or sum(1 for other in host.inventory if _over_ssh(other)) < 2):
        return ""
    return str(settings.on_controller(settings.controller_cache_dir))


# What a kept lock may name as a file: a wheel's name, nothing that reaches outside the wheelhouse.
_WHEEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\.whl$")


def wheels_relayed(plan: VenvPlan, relay: str, arch: str, uv_wheel_url: str) -> VenvPlan:
    """The venv plan with its kept lock's wheels (and uv's) coming through the controller's cache; as it was
    where the wheels come from a find-links folder of the host's own, which the controller cannot read, or
    where a lock line names no file (a lock written by hand)."""
    if plan.find_links and not plan.find_links.startswith(("http://", "https://")):
        return plan
    requirements = [line for line in plan.lock.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if len(lock_digests.entries(plan.lock)) != len(requirements):  # a line naming no file: pip fetches them all
        return plan
    url, sha256 = UV_WHEELS[arch]
    return replace(plan, relay_dir=relay, uv_wheel=(uv_wheel_url or url, sha256, url.rsplit("/", 1)[-1]))


def unsafe_lock(plans: list[VenvPlan]) -> tuple[str, str]:
    """The first of these plans' kept locks (the venv's, the models' own environments') that names a file no
    wheel is named as, and those names; ("", "") where none does."""
    for plan in plans:
        names = unsafe_lock_names(plan.lock)
        if names:
            return plan.lock_store, ", ".join(names)
    return "", ""


def unsafe_lock_names(lock: str) -> list[str]:
    """The files a kept lock names that are no wheel's name (a path, a shell word): a lock that names one is
    refused before any change, as the relay would write to that name."""
    return [entry.filename for entry in lock_digests.entries(lock) if not _WHEEL_NAME.match(entry.filename)]


# the lock's files' URLs read this run, per (lock, index, torch's index, find-links): one read for every host
_urls_read: dict[tuple[str, str, str | None, str], dict[str, str]] = {}
_urls_guard = threading.Lock()


def _wheel_urls(lock: str, index_url: str, torch_index: str | None, find_links: str) -> dict[str, str]:
    """The lock's files' URLs, read from the index pages once per run for every host: hosts run as greenlets,
    and the second to ask waits for the first one's read (the pages of a large lock are tens of MB)."""
    key = (lock, index_url, torch_index, find_links)
    with _urls_guard:
        if key not in _urls_read:
            _urls_read[key] = lock_digests.wheel_urls(
                lock, index_url, torch_index, find_links, lock_digests.urllib_fetch
            )
        return _urls_read[key]


def wheel_url(plan: VenvPlan, filename: str) -> Callable[[], str]:
    """A lock file's URL, asked of the index pages when its send runs (not while the plan is made)."""

    def url() -> str:
        found = _wheel_urls(plan.lock, plan.index_url, plan.torch_index, plan.find_links).get(filename)
        if not found:
            raise controller_cache.FetchError(
                f"{filename}: no page the controller asked lists it (the index, torch's index, find-links): set "
                'downloads_via_controller = "no" where only the hosts reach that index'
            )
        return found

    return url


class _Sent(FunctionCommand):
    """Fetches the file into the controller's cache (once for every host of the run) and puts it on the host
    at DEST through the private staging every upload takes (tasks/downloads/private_upload.py), placed by the host only
    where its own sha256 check agrees."""

    def execute(self, state, host, connector_arguments):
        url, sha256, dest, cache_dir = self.args
        try:
            local = controller_cache.fetched(url, sha256, Path(cache_dir))  # url() asked only where not cached
        except controller_cache.FetchError as exc:
            host.log(str(exc))
            return False
        return private_upload.put_now(host, dest, str(local), "644", connector_arguments, sha256)

    def __repr__(self) -> str:
        return f"SentFromController({self.args[2]})"


def sent(url: str | Callable[[], str], sha256: str, dest: str, cache_dir: str) -> list[FunctionCommand | StringCommand]:
    """The commands that put url's file (this sha256) at dest from the controller's cache, placed by the host
    only where its own sha256 check agrees. url: or what says it, asked when the send runs."""
    return [_Sent(controller_cache.fetched, (url, sha256, dest, cache_dir), {})]
