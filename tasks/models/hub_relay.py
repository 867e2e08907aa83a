"""A hub model for many hosts, fetched from the hub once (downloads_via_controller, as the Triton artifact and
the wheels: tasks/downloads/relay.py). The controller fetches the files a host's fetch takes (the same
tasks/models/scripts/hub_fetch.py, into its own cache, once per run for every host) and sends each, named by its
digest, into a folder of root's on the host; the host's own fetch, as the server's user, then copies each
from there instead of downloading it, and checks it against the digest of the hub's list it read itself:
nothing is trusted more for coming from the controller. Hosts whose cache holds the snapshot get nothing."""

from __future__ import annotations

from pathlib import Path

from pyinfra.api import FunctionCommand, QuoteString, StringCommand

from config.hub_folders import HubAccess, lean_files
from run import controller_cache
from tasks.downloads import private_upload


class _SentSnapshot(FunctionCommand):
    """Fetches repo@revision's files into the controller's cache (once for every host) and puts each on the
    host as STAGE/DIGEST (0644, root's) through the private staging every upload takes."""

    def execute(self, state, host, connector_arguments):
        access, repo, revision, stage = self.args
        with controller_cache.lock_for(f"hub:{repo}@{revision}"):  # one fetch for the run's hosts
            files, problem = lean_files(access, repo, revision)
        if problem:
            host.log(f'{problem}. Where only the hosts reach the hub, set downloads_via_controller = "no"')
            return False
        for digest, local in sorted(files.items()):
            if not private_upload.put_now(host, f"{stage}/{digest}", str(local), "644", connector_arguments):
                return False
        return True

    def __repr__(self) -> str:
        return f"HubSnapshotFromController({self.args[1]}@{self.args[2]})"


def staged(access: HubAccess, repo: str, revision: str, stage: str) -> list[StringCommand | FunctionCommand]:
    """The commands that leave repo@revision's files in stage (a fresh folder of root's the server's user may
    read) for the host's fetch (HUB_RELAY_DIR); `removed(stage)` after it."""
    fresh = StringCommand("rm", "-rf", QuoteString(stage), "&&", "mkdir", "-m", "755", QuoteString(stage))
    return [fresh, _SentSnapshot(lean_files, (access, repo, revision, stage), {})]


def removed(stage: str) -> StringCommand:
    return StringCommand("rm", "-rf", QuoteString(stage))


def access(relay: str, endpoint: str, token: str) -> HubAccess | None:
    """How the controller fetches for the hosts: the hosts' hub settings, the relay's cache; None: no relay."""
    return HubAccess(endpoint=endpoint, token=token, cache=Path(relay) / "hub", offline=False) if relay else None
