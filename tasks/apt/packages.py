"""apt runtime libraries the Triton build and the stub need, with --no-install-recommends.

apt's package lists and downloaded .debs are kept on the persistent path, so a host
re-provisioned after a reset installs the same packages without the network. The manifest that
guards them is trusted only with the sha256 the controller kept when it was written (`digest_store`).
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial
from pathlib import Path

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation
from pyinfra.facts.deb import DebPackages
from pyinfra.facts.files import File
from pyinfra.facts.server import Date

import remote
from config import state_seal
from run import host_log
from tasks.apt import lists_relay as apt_lists_relay
from tasks.apt import relay as apt_relay
from tasks.downloads import private_upload

# apt-get update only when the lists are older than this; fresh lists are reused.
APT_LISTS_MAX_AGE = timedelta(hours=6)
# Seconds apt waits for the dpkg lock before it gives up (apt >= 1.9.11: Debian 11, Ubuntu 20.04).
APT_LOCK_TIMEOUT_S = 600
# apt_cache.py dpkg's exit status where apt must install (tasks/apt/scripts/apt_cache.py NOT_HERE)
APT_CACHE_NOT_HERE = 3


def apt_options(cache_dir: str) -> list[str]:
    """Point apt's lists and archives at cache_dir (on the persistent path)."""
    return [
        "-o",
        f"Dir::State::Lists={cache_dir}/lists",
        "-o",
        f"Dir::Cache::Archives={cache_dir}/archives",
        # the lists kept compressed (~20 MB, not ~100): they are read from a slow drive after a reset
        "-o",
        "Acquire::GzipIndexes=true",
        "-o",
        "Acquire::CompressionTypes::Order::=gz",
        # wait for a dpkg another run (or one a dropped connection left behind) still holds
        "-o",
        f"DPkg::Lock::Timeout={APT_LOCK_TIMEOUT_S}",
    ]


def manifest_digest_kept(digest_store: str) -> str:
    """The apt cache manifest's sha256 the controller kept for this host ("" where none is)."""
    kept = state_seal.trusted(Path(digest_store)) if digest_store else None  # None: absent, or its seal disagrees
    return (kept or "").strip()


def _install(opts: list[QuoteString], missing: list[str], offline: bool) -> StringCommand:
    """apt-get install of the missing packages (offline: from the cache alone), after dpkg finishes what an
    install cut off mid-way (a dropped connection) left half-configured."""
    return StringCommand(
        "DEBIAN_FRONTEND=noninteractive",
        "dpkg",
        "--configure",
        "-a",
        "&&",
        "DEBIAN_FRONTEND=noninteractive",
        "apt-get",
        *opts,
        "install",
        "-y",
        "-q",
        "--no-install-recommends",
        *(["--no-download"] if offline else []),
        *(QuoteString(p) for p in missing),
    )


def _from_the_record(
    cache_dir: str,
    state_dir: str,
    manifest_sha256: str,
    packages: list[str],
    install: StringCommand,
    update: StringCommand | None,
    stamp: str,
) -> StringCommand:
    """A reset host (its package set the one recorded): dpkg alone, from the recorded .debs; anywhere else
    (exit 3) apt, after an update where the check removed the lists (and their stamp)."""
    via_apt = install
    if update is not None:
        refresh = StringCommand("test", "-f", QuoteString(stamp), "||", "{", update, ";", "}")
        via_apt = StringCommand("{", refresh, ";", "}", "&&", install)
    return StringCommand(
        remote.python("python3", "apt_cache.py", "dpkg", cache_dir, state_dir, manifest_sha256, *packages),
        "||",
        "{",
        "[",
        "$?",
        "=",
        str(APT_CACHE_NOT_HERE),
        "]",
        "&&",
        via_apt,
        ";",
        "}",
    )


@operation()
def installed(
    packages: list[str],
    cache_dir: str,
    offline: bool = False,
    state_dir: str = "/etc/triton-provisioner/apt",
    manifest_sha256: str = "",
    digest_store: str = "",
    relay: str = "",
    relay_origins: str = "auto",
):
    """Install the packages that are absent; refresh the lists first only when they are stale. With fresh
    lists (or offline), a host whose package set is the one the cache's record was made on (a reset host)
    gets the recorded .debs from dpkg alone, without apt reading a list (tasks/apt/scripts/apt_cache.py dpkg).
    offline: no update, and only .debs already in the cache (apt-get --no-download). state_dir: root's
    local record of the check; manifest_sha256: the cache manifest's digest the controller kept (read
    from digest_store by the deploy), where the new one is kept after apt ran ("" = not kept: the cached
    files are then fetched again each time). relay: the controller's cache folder where the host's downloads
    go through it (tasks/apt/lists_relay.py: the lists an update fetches; tasks/apt/relay.py: the .debs,
    once the lists are fresh), else ""; relay_origins: the origins it fetches from (apt_relay_origins)."""
    if not packages:
        host.noop("no apt packages needed")
        return
    installed = host.get_fact(DebPackages)
    missing = [p for p in packages if p not in installed]
    if not missing:
        host.noop(f"apt packages present: {', '.join(packages)}")
        return
    opts = [QuoteString(o) for o in apt_options(cache_dir)]
    stamp = f"{cache_dir}/update-stamp"
    yield StringCommand(
        "mkdir", "-p", QuoteString(f"{cache_dir}/lists/partial"), QuoteString(f"{cache_dir}/archives/partial")
    )
    # The cache may sit on a shared drive: what changed since apt last ran here is named and removed.
    yield remote.python("python3", "apt_cache.py", "check", cache_dir, state_dir, manifest_sha256)
    yield host_log.shown(f"{cache_dir}/check.log")
    stale = False
    update = None
    if not offline:
        info = host.get_fact(File, path=stamp)
        now = host.get_fact(Date).replace(tzinfo=None)
        stale = not info or not info.get("mtime") or info["mtime"] < now - APT_LISTS_MAX_AGE
        # Fresh lists are reused; the check above may have removed them (and the stamp): then update anyway.
        update = StringCommand("apt-get", *opts, "update", "-q", "&&", "touch", QuoteString(stamp))
    install = _install(opts, missing, offline)
    if stale:
        # lists past their age: apt may find newer packages than the recorded .debs, so apt installs
        allowed = apt_relay.origins(relay_origins)
        if relay and update is not None:
            yield apt_lists_relay.updated(apt_options(cache_dir), f"{cache_dir}/lists/partial", relay, update, allowed)
        else:
            yield update
        if relay:
            yield apt_relay.sent(apt_options(cache_dir), missing, f"{cache_dir}/archives", relay, allowed)
        yield install
    else:
        yield _from_the_record(cache_dir, state_dir, manifest_sha256, packages, install, update, stamp)
        yield host_log.shown(f"{state_dir}/install.log")
    yield remote.python("python3", "apt_cache.py", "record", cache_dir, state_dir, *packages)
    if digest_store:  # its home is the controller: a writer of the drive cannot vouch for the cache
        keep = partial(private_upload.keep_on_controller, local_path=digest_store)
        yield private_upload.read(f"{state_dir}/manifest.sha256", keep, remove=True)
