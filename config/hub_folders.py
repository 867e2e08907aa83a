"""Triton model folders held by a hub repository (`triton:hub:<repo id>@<revision>`), fetched to the
controller before anything on a host changes: then checked and served like a folder the user has
(`triton:<dir>`). The fetch is the hosts' own (tasks/models/scripts/hub_fetch.py: each file checked against the hub's
digest before it enters the cache), run here; a folder fetched once is read from the cache, offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import remote
from remote._common import marker_name

PREFIX = "hub:"


@dataclass(frozen=True)
class HubAccess:
    """How the controller reaches the hub: the hosts' settings (hf_endpoint, hf_token, offline) and
    where the controller keeps what it fetched (hub_folder_cache)."""

    endpoint: str
    token: str
    cache: Path
    offline: bool


def cached(access: HubAccess, repo: str, revision: str) -> Path | None:
    """The model folder a fetch of repo@revision left in the cache, every file still there; else None."""
    try:
        marker = json.loads((access.cache / "markers" / marker_name(repo, revision)).read_text())
    except (OSError, ValueError):
        return None
    snapshot, folder = Path(str(marker.get("path", ""))), str(marker.get("folder", ""))
    files = marker.get("files") or []
    if not folder or not all((snapshot / str(f)).is_file() for f in files):
        return None
    return Path(folder)


def folder(access: HubAccess, repo: str, revision: str, model: str) -> tuple[Path | None, str]:
    """(the model folder of repo@revision on the controller, "") or (None, what went wrong and the fix).
    Fetched at most once: a branch is resolved to its commit at the first fetch (pin a commit to say which)."""
    have = cached(access, repo, revision)
    if have is not None:
        return have, ""
    if access.offline:
        return None, (
            f"{repo}@{revision} is not in the controller's cache ({access.cache}) and offline is set: run once "
            "with offline = False (the controller fetches it; the hosts need no hub for it)"
        )
    said = _fetched(access, repo, revision, model)
    if said:
        return None, f"fetching its model folder on the controller failed: {said}"
    have = cached(access, repo, revision)
    if have is None:
        return None, f"the fetch of {repo}@{revision} left no model folder in {access.cache}; run again"
    return have, ""


def lean_files(access: HubAccess, repo: str, revision: str) -> tuple[dict[str, Path], str]:
    """({digest: the controller's file} of repo@revision's lean files, as a host's fetch takes them, "") or
    ({}, what went wrong): fetched into the cache once, as for a folder (tasks/models/hub_relay.py sends them on)."""
    have = _lean_cached(access, repo, revision)
    if have is None:
        said = _fetched(access, repo, revision, "")
        have = _lean_cached(access, repo, revision)
        if have is None:
            return {}, f"the controller's fetch of {repo}@{revision} failed: {said or 'nothing kept'}"
    return have, ""


def _lean_cached(access: HubAccess, repo: str, revision: str) -> dict[str, Path] | None:
    try:
        marker = json.loads((access.cache / "markers" / marker_name(repo, revision)).read_text())
    except (OSError, ValueError):
        return None
    snapshot, digests = Path(str(marker.get("path", ""))), marker.get("digests") or {}
    files = {str(kind_digest).split(":", 1)[-1]: snapshot / str(name) for name, kind_digest in digests.items()}
    return files if files and all(path.is_file() for path in files.values()) else None


def _fetched(access: HubAccess, repo: str, revision: str, model: str) -> str:
    """hub_fetch.py run here into the cache (model "": the lean files); "" or its last words where it failed."""
    markers = access.cache / "markers"
    markers.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HF_HOME", "HF_ENDPOINT")}
    env["HF_HUB_CACHE"] = str(access.cache / "hub")
    if access.endpoint:
        env["HF_ENDPOINT"] = access.endpoint
    if access.token:
        env["HF_TOKEN"] = access.token  # in the environment, never on a command line
    marker = markers / marker_name(repo, revision)
    script = remote.source("hub_fetch.py")
    fetch = subprocess.Popen(
        [sys.executable, "-c", script, repo, revision, str(marker), *([model] if model else [])],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    said = []
    assert fetch.stderr is not None
    for line in fetch.stderr:  # its progress, shown as it comes
        print(f"[controller] {line.rstrip()}", file=sys.stderr, flush=True)
        said.append(line.strip())
    return " ".join(said[-3:]) if fetch.wait() != 0 else ""
